#include "schedule_space/dense_template.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/layout.h"
#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::largest_divisor_at_most;
using util::log_feature;
using util::option_index;
using util::split_sizes;

}  // namespace

ConfigSpace dense_space(const DenseWorkload& w, bool packed, int vector_lanes) {
  const int ways = packed ? 3 : 2;
  std::vector<Knob> knobs;
  knobs.push_back(make_split_knob("tile_y", w.batch, ways, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_x", w.out_features, ways, SplitPolicy::kFactors));
  knobs.push_back(make_split_knob("tile_k", w.in_features, 2, SplitPolicy::kFactors));
  std::vector<Knob> captured = knobs;
  const int64_t lanes = vector_lanes;
  auto valid = [captured, lanes, packed](const std::vector<int32_t>& d) {
    const int64_t yi = split_sizes(captured[0].options[d[0]]).back();
    const int64_t xi = split_sizes(captured[1].options[d[1]]).back();
    const int64_t kf = split_sizes(captured[2].options[d[2]]).back();
    if (packed) return yi * ceil_div(xi, lanes) <= kMaxAccumulators && kf <= 16;
    return yi * xi * ceil_div(kf, lanes) <= kMaxAccumulators;
  };
  return ConfigSpace(packed ? "dense_pack.x86" : "dense_nopack.x86", std::move(knobs), valid);
}

DenseSchedule dense_schedule(const ConfigSpace& space, const Config& config, const DenseWorkload& w,
                             bool packed) {
  DenseSchedule s;
  s.packed = packed;
  const auto& y = split_sizes(space.value(config, "tile_y"));
  const auto& x = split_sizes(space.value(config, "tile_x"));
  const auto& k = split_sizes(space.value(config, "tile_k"));
  s.yi = y.back();
  s.xi = x.back();
  s.kf = k.back();
  if (packed) {
    s.yo = y[1];
    s.xo = x[1];
    s.prefetch_weights =
        w.out_features * w.in_features * int64_t{sizeof(float)} >= kDensePrefetchWeightBytes &&
        w.batch / s.yi >= kDensePrefetchMinRowTiles;
  }
  return s;
}

Config dense_default(const ConfigSpace& space, const DenseWorkload& w, bool packed,
                     int vector_lanes) {
  const auto& knobs = space.knobs();
  std::vector<int32_t> digits(knobs.size(), 0);
  if (packed) {
    // yi = the largest of 8, 4, 2, 1 dividing M (AutoTVM's).
    int64_t yi = 1;
    for (int64_t c : {8, 4, 2}) {
      if (w.batch % c == 0) {
        yi = c;
        break;
      }
    }
    const int y = option_index(knobs[0], std::vector<int64_t>{-1, 1, yi});
    digits[0] = std::max(0, y);
    // Where M holds several rows (a token matrix) and N three vectors, a tile of yi rows x 3
    // vectors with the reduction unrolled by up to 4, where the machine offers it (its
    // registers hold the tile): every tuned record of BERT's dense layers chose it, cold or
    // warm, and AutoTVM's 2 vectors leave a core with 8 FMA chains short of independent sums
    // (BERT-base with default configs 0.69x the time of AutoTVM's on a Granite Rapids-class
    // core).
    const int64_t three = 3 * vector_lanes;
    if (yi >= 4 && w.out_features % three == 0) {
      const int x = option_index(knobs[1], std::vector<int64_t>{-1, 1, three});
      const int k = option_index(
          knobs[2], std::vector<int64_t>{-1, largest_divisor_at_most(w.in_features, 4)});
      if (y >= 0 && x >= 0 && k >= 0) {
        std::vector<int32_t> wide_digits = digits;
        wide_digits[1] = x;
        wide_digits[2] = k;
        auto wide = space.config_from_digits(wide_digits);
        if (wide.has_value() && space.is_offered(*wide)) return *wide;
      }
    }
    // Otherwise AutoTVM's fallback: bn = largest divisor of N <= 2*lanes; the middle factor
    // doubles while the rest is even and > 4; k not unrolled.
    const int64_t bn = largest_divisor_at_most(w.out_features, 2 * vector_lanes);
    int64_t rest = w.out_features / bn, xo = 1;
    while (rest > 4 && rest % 2 == 0) {
      xo *= 2;
      rest /= 2;
    }
    digits[1] = std::max(0, option_index(knobs[1], std::vector<int64_t>{-1, xo, bn}));
    digits[2] = std::max(0, option_index(knobs[2], std::vector<int64_t>{-1, 1}));
  } else {
    const int64_t vk = largest_divisor_at_most(w.in_features, 2 * vector_lanes);
    digits[2] = std::max(0, option_index(knobs[2], std::vector<int64_t>{-1, vk}));
  }
  auto c = space.config_from_digits(digits);
  TT_CHECK(c.has_value()) << c.error().message;
  return *c;
}

namespace {

/// dense_pack.x86 and dense_nopack.x86: one class, the weight layout chosen by `packed`.
class DenseTemplate final : public Template {
 public:
  explicit DenseTemplate(bool packed) : packed_(packed) {}

  std::string_view name() const override { return packed_ ? "dense_pack.x86" : "dense_nopack.x86"; }
  std::vector<std::string_view> aliases() const override {
    if (packed_) return {"dense"};
    return {};
  }
  OperatorKind operator_kind() const override { return OperatorKind::kDense; }
  // Networks tune dense_pack (weights packed once, at compile time) and run dense_nopack where
  // the weights are computed at run time.
  bool extracted_for(const Workload&) const override { return packed_; }
  bool needs_constant_weight() const override { return packed_; }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    const bool packed = packed_;
    const DenseWorkload w = workload(task);
    return util::offer_tiles_for(
        dense_space(w, packed_, task.target.vector_lanes), task.target, util::TileBound::kMemory,
        [lanes, packed, w](const ConfigSpace& space, const Config& c) {
          const DenseSchedule s = dense_schedule(space, c, w, packed);
          const int64_t vectors = ceil_div(packed ? s.xi : s.kf, lanes);
          return util::tile_with(packed ? s.yi * vectors : s.yi * s.xi * vectors, vectors,
                                 packed ? s.yi : s.yi * s.xi);
        });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    return dense_default(space, workload(task), packed_, task.target.vector_lanes);
  }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "yi",           "xi",           "kf",       "yo",     "xo",           "vectors",
        "accumulators", "full_vectors", "parallel", "k_trip", "weight_bytes", "packed"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const DenseWorkload& d = workload(task);
    const DenseSchedule s = dense_schedule(space, config, d, packed_);
    const int64_t vectors = packed_ ? ceil_div(s.xi, lanes) : ceil_div(s.kf, lanes);
    const int64_t acc = packed_ ? s.yi * vectors : s.yi * s.xi * vectors;
    const int64_t parallel =
        packed_ ? ceil_div(d.batch, s.yo * s.yi) * ceil_div(d.out_features, s.xo * s.xi)
                : (d.batch / s.yi) * (d.out_features / s.xi);
    return {log_feature(s.yi),
            log_feature(s.xi),
            log_feature(s.kf),
            log_feature(s.yo),
            log_feature(s.xo),
            static_cast<float>(vectors),
            static_cast<float>(acc),
            ((packed_ ? s.xi : s.kf) % lanes == 0) ? 1.0f : 0.0f,
            log_feature(parallel),
            log_feature(packed_ ? d.in_features : d.in_features / s.kf),
            log_feature(4.0 * d.out_features * d.in_features),
            packed_ ? 1.0f : 0.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const DenseWorkload& w = workload(task);
    const DenseSchedule s = dense_schedule(space, config, w, packed_);
    KernelSignature sig;
    sig.data_shape = {w.batch, w.in_features};
    sig.out_shape = {w.batch, w.out_features};
    if (packed_) {
      sig.weight_shape = {w.out_features / s.xi, w.in_features, s.xi};
      sig.parallel_extent = (w.batch / (s.yo * s.yi)) * (w.out_features / (s.xo * s.xi));
      sig.oc_block = s.xi;
      // The emitter's fused index: row tiles innermost, column tiles outside them.
      sig.rows_per_block = s.yo * s.yi;
      sig.row_blocks = w.batch / (s.yo * s.yi);
    } else {
      sig.weight_shape = {w.out_features, w.in_features};
      sig.parallel_extent = (w.batch / s.yi) * (w.out_features / s.xi);
      // Row tiles outermost, each over every column tile.
      sig.rows_per_block = s.yi;
      sig.row_blocks = w.batch / s.yi;
      sig.row_inner = w.out_features / s.xi;
    }
    return sig;
  }

  Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const override {
    return packed_ ? pack_dense_weight(weight, sig.oc_block) : weight;
  }

 private:
  static const DenseWorkload& workload(const Task& task) {
    return std::get<DenseWorkload>(task.workload);
  }
  bool packed_;
};

}  // namespace

const Template& dense_pack_template() {
  static const DenseTemplate instance(true);
  return instance;
}

const Template& dense_nopack_template() {
  static const DenseTemplate instance(false);
  return instance;
}

}  // namespace tensortune::schedule_space
