#include "schedule_space/attention_cuda_template.h"

#include <algorithm>
#include <bit>

#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::log_feature;
using util::option_index;
using util::split_sizes;

AttentionCudaSchedule decode(const AttentionWorkload& w, const std::vector<Knob>& knobs,
                             const std::vector<int32_t>& d) {
  AttentionCudaSchedule s;
  const auto& y = split_sizes(knobs[0].options[d[0]]);
  const auto& x = split_sizes(knobs[1].options[d[1]]);
  s.y = {ceil_div(w.m, y[1] * y[2]), y[1], y[2]};
  s.x = {ceil_div(w.n, x[1] * x[2]), x[1], x[2]};
  s.k = w.k;
  s.dv = w.dv;
  return s;
}

const AttentionWorkload& workload(const Task& task) {
  return std::get<AttentionWorkload>(task.workload);
}

/// The largest power of two at most min(n, cap) (both positive).
int64_t power_of_two_at_most(int64_t n, int64_t cap) {
  return static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::min(n, cap))));
}

class AttentionCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return kAttentionCuda; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kAttention; }

  ConfigSpace config_space(const Task& task) const override {
    return attention_cuda_space(workload(task));
  }

  // Blocks of 16 rows (8 threads of 2) against key blocks of 64 (16 threads of 4): 128 threads,
  // 12 x 8 blocks for BERT-base's heads at 128 tokens, about 26 KiB of shared memory at head
  // width 64. Fewer where the sequence is shorter; where that does not fit (heads wide enough
  // to fill the shared memory) the largest tile within it that does, more threads first.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const AttentionWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    auto tile = [](const Knob& knob, int64_t axis, int64_t threads, int64_t inner) {
      const int64_t t = power_of_two_at_most(axis, threads);
      const int64_t i = power_of_two_at_most(std::max<int64_t>(axis / t, 1), inner);
      return option_index(knob, std::vector<int64_t>{-1, t, i});
    };
    const std::vector<int32_t> preferred{tile(knobs[0], w.m, 8, 2), tile(knobs[1], w.n, 16, 4)};
    if (preferred[0] >= 0 && preferred[1] >= 0)
      if (auto c = space.config_from_digits(preferred); c && space.is_valid(*c)) return *c;
    return util::best_ranked_valid(space, [&](const Config& c) {
      const AttentionCudaSchedule s = attention_cuda_schedule(w, space, c);
      if (s.tile_m() > 16 || s.tile_n() > 64 || s.threads() > 128) return -1.0;
      return double(s.tile_m() * s.tile_n()) + double(s.threads()) / 129;
    });
  }
  int extra_inputs(const Task& task) const override { return workload(task).has_mask() ? 2 : 1; }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "y_blocks",      "y_thread", "y_inner",      "x_blocks",     "x_thread",
        "x_inner",       "threads",  "accumulators", "shared_bytes", "blocks",
        "value_columns", "mask",     "warps",        "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const AttentionWorkload& w = workload(task);
    const AttentionCudaSchedule s = attention_cuda_schedule(w, space, config);
    std::vector<float> v;
    util::append_split_features(v, s.y, s.x);
    util::append_launch_features(
        v, static_cast<double>(s.threads()), static_cast<double>(s.accumulators()),
        static_cast<double>(s.shared_bytes()), static_cast<double>(s.y[0]) * w.batch);
    v.push_back(log_feature(static_cast<double>(s.value_columns())));
    v.push_back(w.has_mask() ? 1.0f : 0.0f);
    util::append_warp_features(v, static_cast<double>(s.threads()));
    return v;
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const AttentionWorkload& w = workload(task);
    const AttentionCudaSchedule s = attention_cuda_schedule(w, space, config);
    const OperandShapes shapes = operand_shapes(w);
    KernelSignature sig;
    sig.data_shape = shapes.data;
    sig.weight_shape = shapes.weight;
    sig.out_shape = shapes.out;
    sig.parallel_extent = s.y[0] * w.batch;  // blocks
    return sig;
  }
};

}  // namespace

ConfigSpace attention_cuda_space(const AttentionWorkload& w) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_y", w.m, 3, SplitPolicy::kVerbose));
  knobs.push_back(make_split_knob("tile_x", w.n, 3, SplitPolicy::kVerbose));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const AttentionCudaSchedule s = decode(w, captured, d);
    return fits_universal_limits(
        launch_usage({s.x[1], s.y[1], 1}, {s.y[0] * w.batch, 1, 1}, s.shared_bytes()),
        s.accumulators());
  };
  return ConfigSpace(kAttentionCuda, std::move(knobs), valid);
}

AttentionCudaSchedule attention_cuda_schedule(const AttentionWorkload& w, const ConfigSpace& space,
                                              const Config& config) {
  return decode(w, space.knobs(), config.digits);
}

const Template& attention_cuda_template() {
  static const AttentionCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
