#include "schedule_space/dense_int8_template.h"

#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::inner_factor;
using util::log_feature;

int64_t accumulators(int64_t rows, int64_t block, int64_t lanes) {
  return rows * 2 * ceil_div(block, lanes);
}

const DenseWorkload& workload_of(const Task& task) {
  return std::get<DenseWorkload>(task.workload);
}

}  // namespace

int64_t dense_int8_block(const DenseWorkload& w) { return w.out_features % 16 == 0 ? 16 : 8; }

ConfigSpace dense_int8_space(const DenseWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs{make_split_knob("tile_y", w.batch, 2, SplitPolicy::kFactors)};
  std::vector<Knob> captured = knobs;
  const int64_t lanes = vector_lanes, block = dense_int8_block(w);
  auto valid = [captured, lanes, block](const std::vector<int32_t>& d) {
    return accumulators(inner_factor(captured[0].options[d[0]]), block, lanes) <= kMaxAccumulators;
  };
  return ConfigSpace("dense_int8.x86", std::move(knobs), valid);
}

DenseInt8Schedule dense_int8_schedule(const ConfigSpace& space, const Config& config,
                                      const DenseWorkload& w) {
  return {inner_factor(space.value(config, "tile_y")), dense_int8_block(w)};
}

namespace {

class DenseInt8Template final : public Template {
 public:
  std::string_view name() const override { return "dense_int8.x86"; }
  OperatorKind operator_kind() const override { return OperatorKind::kDense; }
  Precision precision() const override { return Precision::kUInt8Int8; }
  // Its NC16n4c weights are packed at compile time from the node's constant.
  bool needs_constant_weight() const override { return true; }

  Status accepts(const Workload& wl) const override {
    const auto& w = std::get<DenseWorkload>(wl);
    if (w.in_features % 4 != 0 || w.out_features % 8 != 0)
      return invalid_argument(std::string(name()) +
                              " needs in_features divisible by 4 and out_features by 8; this "
                              "one has " +
                              std::to_string(w.in_features) + " and " +
                              std::to_string(w.out_features) + " (" + describe_workload(wl) + ")");
    return ok_status();
  }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    const DenseWorkload w = workload_of(task);
    return util::offer_tiles_for(dense_int8_space(w, task.target.vector_lanes), task.target,
                                 util::TileBound::kMemory,
                                 [lanes, w](const ConfigSpace& space, const Config& c) {
                                   const DenseInt8Schedule s = dense_int8_schedule(space, c, w);
                                   return util::tile_with(accumulators(s.rows, s.oc_bn, lanes),
                                                          ceil_div(s.oc_bn, lanes), s.rows);
                                 });
  }
  // AutoTVM's fallback factor, 32 rows, where it divides M and fits; else the largest that does.
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    const int64_t m = workload_of(task).batch;
    for (int64_t rows = std::min<int64_t>(32, m); rows >= 1; --rows)
      if (m % rows == 0 && accumulators(rows, dense_int8_block(workload_of(task)),
                                        task.target.vector_lanes) <= kMaxAccumulators)
        return util::preferred_or_first_valid(space,
                                              {util::split_with_inner(space.knobs()[0], rows)});
    return util::preferred_or_first_valid(space, {-1});
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{"rows", "accumulators", "row_tiles",
                                                "k",    "n_blocks",     "weight_bytes"};
    return names;
  }
  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const DenseWorkload& w = workload_of(task);
    const DenseInt8Schedule s = dense_int8_schedule(space, config, w);
    return {static_cast<float>(s.rows),
            static_cast<float>(accumulators(s.rows, s.oc_bn, task.target.vector_lanes)),
            log_feature(ceil_div(w.batch, s.rows)),
            log_feature(w.in_features),
            log_feature(w.out_features / s.oc_bn),
            log_feature(1.0 * w.in_features * w.out_features)};
  }

  KernelSignature signature(const Task& task, const ConfigSpace&, const Config&) const override {
    const DenseWorkload& w = workload_of(task);
    const int64_t block = dense_int8_block(w);
    KernelSignature sig;
    sig.data_shape = {w.batch, w.in_features};
    sig.weight_shape = {w.out_features / block, w.in_features / 4, block, 4};
    sig.out_shape = {w.batch, w.out_features};
    sig.parallel_extent = w.out_features / block;
    sig.ic_block = w.in_features;
    sig.oc_block = block;
    return sig;
  }

  Tensor pack_data(const KernelSignature&, const Tensor& data) const override { return data; }
  // (N, K) int8 -> NC16n4c (NC8n4c).
  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    const int64_t n_total = weight.shape[0], k_total = weight.shape[1], block = sig.oc_block;
    Tensor out = Tensor::zeros(DType::kInt8, sig.weight_shape);
    for (int64_t n = 0; n < n_total; ++n)
      for (int64_t k = 0; k < k_total; ++k)
        out.i64[((n / block) * (k_total / 4) + k / 4) * block * 4 + (n % block) * 4 + k % 4] =
            weight.i64[n * k_total + k];
    return out;
  }
};

}  // namespace

const Template& dense_int8_template() {
  static const DenseInt8Template instance;
  return instance;
}

}  // namespace tensortune::schedule_space
