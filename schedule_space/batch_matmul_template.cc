#include "schedule_space/batch_matmul_template.h"

#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::split_sizes;

/// Vector registers a tile accumulates in.
int64_t accumulators(bool transpose_b, const BatchMatmulSchedule& s, int64_t lanes) {
  return transpose_b ? s.yi * s.xi * ceil_div(s.kf, lanes) : s.yi * ceil_div(s.xi, lanes);
}

}  // namespace

ConfigSpace batch_matmul_space(const BatchMatmulWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_y", w.m, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", w.n, 2, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_k", w.k, 2, SplitPolicy::kFactors));
  std::vector<Knob> captured = knobs;
  const int64_t lanes = vector_lanes;
  const bool nt = w.transpose_b;
  auto valid = [captured, lanes, nt](const std::vector<int32_t>& d) {
    const BatchMatmulSchedule s{split_sizes(captured[0].options[d[0]]).back(),
                                split_sizes(captured[1].options[d[1]]).back(),
                                split_sizes(captured[2].options[d[2]]).back()};
    // An unrolled k step beyond 16 only grows the code (the NN form's kf).
    return accumulators(nt, s, lanes) <= kMaxAccumulators && (nt || s.kf <= 16);
  };
  return ConfigSpace(kBatchMatmulX86, std::move(knobs), valid);
}

BatchMatmulSchedule batch_matmul_schedule(const ConfigSpace& space, const Config& config) {
  return {split_sizes(space.value(config, "tile_y")).back(),
          split_sizes(space.value(config, "tile_x")).back(),
          split_sizes(space.value(config, "tile_k")).back()};
}

Config batch_matmul_default(const ConfigSpace& space, const BatchMatmulWorkload& w) {
  const auto& knobs = space.knobs();
  const std::vector<int32_t> digits{
      option_index(knobs[0],
                   std::vector<int64_t>{-1, util::largest_power_of_two_divisor_at_most(w.m, 8)}),
      option_index(knobs[1],
                   std::vector<int64_t>{-1, util::largest_power_of_two_divisor_at_most(w.n, 8)}),
      option_index(knobs[2], std::vector<int64_t>{-1, largest_divisor_at_most(w.k, 16)})};
  return util::preferred_or_first_valid(space, digits);
}

namespace {

class BatchMatmulTemplate final : public Template {
 public:
  std::string_view name() const override { return kBatchMatmulX86; }
  std::vector<std::string_view> aliases() const override { return {"batch_matmul"}; }
  OperatorKind operator_kind() const override { return OperatorKind::kBatchMatmul; }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    const bool nt = workload(task).transpose_b;
    // Bound by memory where its rows are few (a decode step's one token).
    return util::offer_tiles_for(
        batch_matmul_space(workload(task), task.target.vector_lanes), task.target,
        util::TileBound::kMemory, [lanes, nt](const ConfigSpace& space, const Config& c) {
          const BatchMatmulSchedule s = batch_matmul_schedule(space, c);
          return util::tile_with(accumulators(nt, s, lanes), ceil_div(nt ? s.kf : s.xi, lanes),
                                 nt ? s.yi * s.xi : s.yi);
        });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    return batch_matmul_default(space, workload(task));
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "yi",           "xi",       "kf",     "accumulators",
        "full_vectors", "parallel", "k_trip", "operand_bytes",
        "transpose_b"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const BatchMatmulWorkload& w = workload(task);
    const BatchMatmulSchedule s = batch_matmul_schedule(space, config);
    const int64_t vectorised = w.transpose_b ? s.kf : s.xi;
    return {log_feature(s.yi),
            log_feature(s.xi),
            log_feature(s.kf),
            static_cast<float>(accumulators(w.transpose_b, s, lanes)),
            vectorised % lanes == 0 ? 1.0f : 0.0f,
            log_feature(double(w.batch) * (w.m / s.yi) * (w.n / s.xi)),
            log_feature(w.transpose_b ? w.k / s.kf : w.k),
            log_feature(4.0 * w.batch * (w.m * w.k + w.n * w.k)),
            w.transpose_b ? 1.0f : 0.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const BatchMatmulWorkload& w = workload(task);
    const BatchMatmulSchedule s = batch_matmul_schedule(space, config);
    const OperandShapes shapes = operand_shapes(w);
    KernelSignature sig;
    sig.data_shape = shapes.data;
    sig.weight_shape = shapes.weight;
    sig.out_shape = shapes.out;
    sig.parallel_extent = w.batch * (w.m / s.yi) * (w.n / s.xi);
    // The emitter's fused index: batch entries, then row tiles, then column tiles.
    sig.rows_per_block = s.yi;
    sig.row_blocks = w.m / s.yi;
    sig.row_inner = w.n / s.xi;
    return sig;
  }

 private:
  static const BatchMatmulWorkload& workload(const Task& task) {
    return std::get<BatchMatmulWorkload>(task.workload);
  }
};

}  // namespace

const Template& batch_matmul_template() {
  static const BatchMatmulTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
