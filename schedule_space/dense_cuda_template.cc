#include "schedule_space/dense_cuda_template.h"

#include <cmath>

#include "schedule_space/gpu_limits.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::preferred_or_first_valid;
using util::resolve_split;
using util::split_sizes;

bool is_pow2_in(int64_t v, int64_t lo, int64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

// Keeps the candidates `keep` accepts, unless none passes (then all stay: AutoTVM's intent).
Knob filtered(Knob knob, bool (*keep)(const std::vector<int64_t>&, int64_t axis)) {
  std::vector<KnobValue> kept;
  for (const KnobValue& v : knob.options)
    if (keep(split_sizes(v), knob.axis_length)) kept.push_back(v);
  if (!kept.empty()) knob.options = std::move(kept);
  return knob;
}

bool block_tile_filter(const std::vector<int64_t>& e, int64_t) {
  const int64_t tile = e[1] * e[2] * e[3];
  return is_pow2_in(e[1], 2, 64) && is_pow2_in(e[2], 8, 64) && (tile == 64 || tile == 128);
}

bool k_filter(const std::vector<int64_t>& e, int64_t axis) { return axis / (e[1] * e[2]) > 2; }

DenseLargeBatchSchedule decode_large(const DenseWorkload& w, const std::vector<Knob>& knobs,
                                     const std::vector<int32_t>& d) {
  DenseLargeBatchSchedule s;
  s.x = resolve_split<4>(split_sizes(knobs[0].options[d[0]]), w.batch);
  s.y = resolve_split<4>(split_sizes(knobs[1].options[d[1]]), w.out_features);
  s.k = resolve_split<3>(split_sizes(knobs[2].options[d[2]]), w.in_features);
  return s;
}

const DenseWorkload& dense_of(const Task& task) { return std::get<DenseWorkload>(task.workload); }

class DenseSmallBatchGpuTemplate final : public Template {
 public:
  std::string_view name() const override { return "dense_small_batch.gpu"; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kDense; }
  // AutoTVM's CUDA strategy: the small-batch schedule below a batch of 32, the large one from 32.
  bool extracted_for(const Workload& w) const override {
    return std::get<DenseWorkload>(w).batch < kLargeBatch;
  }
  ConfigSpace config_space(const Task& task) const override {
    return dense_small_batch_space(dense_of(task));
  }
  // AutoTVM's fallback: tile_k = [-1, 64] (the largest divisor of K up to 64 here, so that
  // every K has one).
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const int64_t k_inner = largest_divisor_at_most(dense_of(task).in_features, 64);
    return *space.config_from_digits(
        {option_index(space.knobs()[0], std::vector<int64_t>{-1, k_inner})});
  }
  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{"k_outer", "k_inner",   "blocks",
                                                "warps",   "tail_warp", "reduction_rounds"};
    return names;
  }
  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const DenseWorkload& w = dense_of(task);
    const DenseSmallBatchSchedule s = dense_small_batch_schedule(w, space, config);
    return {log_feature(s.k_outer),
            log_feature(s.k_inner),
            log_feature(static_cast<double>(w.batch) * w.out_features),
            static_cast<float>((s.k_inner + 31) / 32),
            s.k_inner % 32 == 0 ? 0.0f : 1.0f,
            static_cast<float>(std::ceil(std::log2(static_cast<double>(s.k_inner))))};
  }
  KernelSignature signature(const Task& task, const ConfigSpace&, const Config&) const override {
    const DenseWorkload& w = dense_of(task);
    KernelSignature sig;
    sig.data_shape = {w.batch, w.in_features};
    sig.weight_shape = {w.out_features, w.in_features};
    sig.out_shape = {w.batch, w.out_features};
    sig.parallel_extent = w.batch * w.out_features;  // blocks
    return sig;
  }
};

class DenseLargeBatchGpuTemplate final : public Template {
 public:
  std::string_view name() const override { return "dense_large_batch.gpu"; }
  std::string_view backend() const override { return "cuda"; }
  OperatorKind operator_kind() const override { return OperatorKind::kDense; }
  bool extracted_for(const Workload& w) const override {
    return std::get<DenseWorkload>(w).batch >= kLargeBatch;
  }
  ConfigSpace config_space(const Task& task) const override {
    return dense_large_batch_space(dense_of(task));
  }
  // No AutoTVM fallback to follow (its reference log decides): 8x8 threads, 2 vthreads and 4
  // inner of each axis where the candidates have them, 8x4 columns of k per step; else the
  // first valid config.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const DenseWorkload& w = dense_of(task);
    const auto& knobs = space.knobs();
    const int64_t km = largest_divisor_at_most(w.in_features, 8);
    const int64_t ki = largest_divisor_at_most(w.in_features / km, 4);
    return preferred_or_first_valid(space,
                                    {option_index(knobs[0], std::vector<int64_t>{-1, 2, 8, 4}),
                                     option_index(knobs[1], std::vector<int64_t>{-1, 2, 8, 4}),
                                     option_index(knobs[2], std::vector<int64_t>{-1, km, ki})});
  }
  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "x_block",  "x_vthread",    "x_thread",     "x_inner",     "y_block", "y_vthread",
        "y_thread", "y_inner",      "k_outer",      "k_middle",    "k_inner", "threads",
        "blocks",   "accumulators", "shared_bytes", "fma_per_load"};
    return names;
  }
  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const DenseLargeBatchSchedule s = dense_large_batch_schedule(dense_of(task), space, config);
    std::vector<float> v;
    for (int64_t p : s.x) v.push_back(log_feature(p));
    for (int64_t p : s.y) v.push_back(log_feature(p));
    for (int64_t p : s.k) v.push_back(log_feature(p));
    v.push_back(log_feature(s.threads()));
    v.push_back(log_feature(static_cast<double>(s.x[0]) * s.y[0]));
    v.push_back(log_feature(s.accumulators()));
    v.push_back(log_feature(s.shared_bytes()));
    v.push_back(static_cast<float>(static_cast<double>(s.tile_m()) * s.tile_n() /
                                   (s.tile_m() + s.tile_n())));
    return v;
  }
  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const DenseWorkload& w = dense_of(task);
    const DenseLargeBatchSchedule s = dense_large_batch_schedule(w, space, config);
    KernelSignature sig;
    sig.data_shape = {w.batch, w.in_features};
    sig.weight_shape = {w.out_features, w.in_features};
    sig.out_shape = {w.batch, w.out_features};
    sig.parallel_extent = s.x[0] * s.y[0];  // blocks
    return sig;
  }
};

}  // namespace

ConfigSpace dense_small_batch_space(const DenseWorkload& w) {
  std::vector<Knob> knobs{make_split_knob("tile_k", w.in_features, 2, SplitPolicy::kFactors)};
  std::vector<Knob> captured = knobs;
  auto valid = [captured](const std::vector<int32_t>& d) {
    return split_sizes(captured[0].options[d[0]])[1] <= kUniversalGpuLimits.max_threads_per_block;
  };
  return ConfigSpace("dense_small_batch.gpu", std::move(knobs), valid);
}

DenseSmallBatchSchedule dense_small_batch_schedule(const DenseWorkload& w, const ConfigSpace& space,
                                                   const Config& c) {
  const auto parts = resolve_split<2>(split_sizes(space.value(c, "tile_k")), w.in_features);
  return {parts[0], parts[1]};
}

ConfigSpace dense_large_batch_space(const DenseWorkload& w) {
  std::vector<Knob> knobs;
  knobs.push_back(
      filtered(make_split_knob("tile_x", w.batch, 4, SplitPolicy::kFactors), block_tile_filter));
  knobs.push_back(filtered(make_split_knob("tile_y", w.out_features, 4, SplitPolicy::kFactors),
                           block_tile_filter));
  knobs.push_back(
      filtered(make_split_knob("tile_k", w.in_features, 3, SplitPolicy::kFactors), k_filter));
  std::vector<Knob> captured = knobs;
  auto valid = [captured, w](const std::vector<int32_t>& d) {
    const DenseLargeBatchSchedule s = decode_large(w, captured, d);
    return fits_universal_limits(
        launch_usage({s.y[2], s.x[2], 1}, {s.y[0], s.x[0], 1}, s.shared_bytes()), s.accumulators());
  };
  return ConfigSpace("dense_large_batch.gpu", std::move(knobs), valid);
}

DenseLargeBatchSchedule dense_large_batch_schedule(const DenseWorkload& w, const ConfigSpace& space,
                                                   const Config& c) {
  return decode_large(w, space.knobs(), c.digits);
}

const Template& dense_small_batch_gpu_template() {
  static const DenseSmallBatchGpuTemplate instance;
  return instance;
}

const Template& dense_large_batch_gpu_template() {
  static const DenseLargeBatchGpuTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
