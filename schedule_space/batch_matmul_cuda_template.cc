#include "schedule_space/batch_matmul_cuda_template.h"

#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::resolve_split;
using util::split_sizes;

BatchMatmulCudaSchedule decode(const BatchMatmulWorkload& w, const std::vector<Knob>& knobs,
                               const std::vector<int32_t>& d) {
  BatchMatmulCudaSchedule s;
  s.y = resolve_split<3>(split_sizes(knobs[0].options[d[0]]), w.m);
  s.x = resolve_split<3>(split_sizes(knobs[1].options[d[1]]), w.n);
  s.k = resolve_split<2>(split_sizes(knobs[2].options[d[2]]), w.k);
  s.auto_unroll_max_step = std::get<int64_t>(knobs[3].options[d[3]]);
  s.unroll_explicit = std::get<int64_t>(knobs[4].options[d[4]]) != 0;
  return s;
}

const BatchMatmulWorkload& workload(const Task& task) {
  return std::get<BatchMatmulWorkload>(task.workload);
}

class BatchMatmulCudaTemplate final : public Template {
 public:
  std::string_view name() const override { return kBatchMatmulCuda; }
  std::string_view backend() const override { return "cuda"; }
  std::vector<std::string_view> aliases() const override { return {"batch_matmul"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kBatchMatmul; }

  ConfigSpace config_space(const Task& task) const override {
    return batch_matmul_cuda_space(workload(task));
  }

  // AutoTVM's fallback: a power-of-two block of each output axis (at most 64) over at most 8
  // threads, 8 columns of k per step (here the largest divisor of K up to 8, so that every K
  // has one), auto_unroll_max_step 16, unroll_explicit 0; the first valid config where that
  // one is not valid.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const BatchMatmulWorkload& w = workload(task);
    const auto& knobs = space.knobs();
    auto tile = [](const Knob& knob, int64_t axis) {
      const int64_t bn = util::largest_power_of_two_divisor_at_most(axis, 64),
                    threads = std::min<int64_t>(bn, 8);
      return option_index(knob, std::vector<int64_t>{-1, threads, bn / threads});
    };
    return util::preferred_or_first_valid(
        space, {tile(knobs[0], w.m), tile(knobs[1], w.n),
                option_index(knobs[2], std::vector<int64_t>{-1, largest_divisor_at_most(w.k, 8)}),
                option_index(knobs[3], KnobValue(int64_t{16})),
                option_index(knobs[4], KnobValue(int64_t{0}))});
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "y_block",      "y_thread", "y_inner",      "x_block",         "x_thread", "x_inner",
        "k_outer",      "k_inner",  "auto_unroll",  "unroll_explicit", "threads",  "accumulators",
        "shared_bytes", "blocks",   "fma_per_load", "transpose_b",     "warps",    "tail_warp"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const BatchMatmulWorkload& w = workload(task);
    const BatchMatmulCudaSchedule s = batch_matmul_cuda_schedule(w, space, config);
    std::vector<float> v;
    util::append_split_features(v, s.y, s.x, s.k);
    util::append_unroll_features(v, s.auto_unroll_max_step, s.unroll_explicit);
    util::append_launch_features(
        v, static_cast<double>(s.threads()), static_cast<double>(s.accumulators()),
        static_cast<double>(s.shared_bytes()), static_cast<double>(s.y[0]) * s.x[0] * w.batch);
    v.push_back(static_cast<float>(static_cast<double>(s.tile_m()) * s.tile_n() /
                                   (s.tile_m() + s.tile_n())));
    v.push_back(w.transpose_b ? 1.0f : 0.0f);
    util::append_warp_features(v, static_cast<double>(s.threads()));
    return v;
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const BatchMatmulWorkload& w = workload(task);
    const BatchMatmulCudaSchedule s = batch_matmul_cuda_schedule(w, space, config);
    const OperandShapes shapes = operand_shapes(w);
    KernelSignature sig;
    sig.data_shape = shapes.data;
    sig.weight_shape = shapes.weight;
    sig.out_shape = shapes.out;
    sig.parallel_extent = s.y[0] * s.x[0] * w.batch;  // blocks
    return sig;
  }
};

}  // namespace

ConfigSpace batch_matmul_cuda_space(const BatchMatmulWorkload& w) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_y", w.m, 3, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", w.n, 3, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_k", w.k, 2, SplitPolicy::kFactors));
  knobs.push_back(
      make_other_knob("auto_unroll_max_step", {int64_t{8}, int64_t{16}, int64_t{32}, int64_t{64}}));
  knobs.push_back(make_other_knob("unroll_explicit", {int64_t{0}, int64_t{1}}));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const BatchMatmulCudaSchedule s = decode(w, captured, d);
    return fits_universal_limits(
        launch_usage({s.x[1], s.y[1], 1}, {s.x[0], s.y[0], w.batch}, s.shared_bytes()),
        s.accumulators());
  };
  return ConfigSpace(kBatchMatmulCuda, std::move(knobs), valid);
}

BatchMatmulCudaSchedule batch_matmul_cuda_schedule(const BatchMatmulWorkload& w,
                                                   const ConfigSpace& space, const Config& config) {
  return decode(w, space.knobs(), config.digits);
}

const Template& batch_matmul_cuda_template() {
  static const BatchMatmulCudaTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
