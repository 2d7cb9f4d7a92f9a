#include "schedule_space/features.h"

#include <cmath>

#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"

namespace tensortune::schedule_space {
namespace {

float lg(double x) { return static_cast<float>(std::log2(1.0 + x)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::vector<std::string> feature_names(const std::string& template_name) {
  if (template_name == kConv2dNCHWc)
    return {"ic_bn",        "oc_bn",          "reg_n",        "reg_h",        "unroll_kw",
            "vectors",      "accumulators",   "full_vectors", "ow_tail",      "oh_tail",
            "parallel",     "tiles_per_task", "reduction",    "inner_trip",   "input_tile_bytes",
            "weight_bytes", "output_bytes",   "fma_per_load", "oc_inner"};
  return {"yi", "xi", "kf", "yo", "xo", "vectors", "accumulators", "full_vectors", "parallel",
          "k_trip", "weight_bytes", "packed"};
}

std::vector<float> config_features(const Task& task, const ConfigSpace& space, const Config& config) {
  const int64_t lanes = task.target.vector_lanes;
  if (task.template_name == kConv2dNCHWc) {
    const auto& w = std::get<Conv2dWorkload>(task.workload);
    const Conv2dSchedule s = conv2d_nchwc_schedule(space, config);
    const int64_t oh = w.out_height(), ow = w.out_width();
    const int64_t vectors = ceil_div(s.oc_bn, lanes);
    const int64_t acc = s.reg_h * s.reg_n * vectors;
    const int64_t row_tiles = ceil_div(oh, s.reg_h);
    const int64_t parallel = w.batch * (w.out_channels / s.oc_bn) * row_tiles;
    const int64_t in_rows = (s.reg_h - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1;
    const int64_t in_cols = (s.reg_n - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1;
    return {lg(s.ic_bn),
            lg(s.oc_bn),
            lg(s.reg_n),
            static_cast<float>(s.reg_h),
            s.unroll_kw ? 1.0f : 0.0f,
            static_cast<float>(vectors),
            static_cast<float>(acc),
            s.oc_bn % lanes == 0 ? 1.0f : 0.0f,
            static_cast<float>(ow % s.reg_n) / static_cast<float>(s.reg_n),
            static_cast<float>(oh % s.reg_h) / static_cast<float>(s.reg_h),
            lg(parallel),
            lg(ceil_div(ow, s.reg_n)),
            lg(w.in_channels * w.kernel_h * w.kernel_w),
            lg(s.ic_bn),
            lg(4.0 * in_rows * in_cols * w.in_channels),
            lg(4.0 * w.in_channels * w.kernel_h * w.kernel_w * s.oc_bn),
            lg(4.0 * acc * lanes),
            static_cast<float>(acc) / static_cast<float>(vectors + s.reg_h * s.reg_n),
            s.oc_inner ? 1.0f : 0.0f};
  }
  const auto& d = std::get<DenseWorkload>(task.workload);
  const bool packed = task.template_name == kDensePack;
  const DenseSchedule s = dense_schedule(space, config, packed);
  const int64_t vectors = packed ? ceil_div(s.xi, lanes) : ceil_div(s.kf, lanes);
  const int64_t acc = packed ? s.yi * vectors : s.yi * s.xi * vectors;
  const int64_t parallel =
      packed ? ceil_div(d.batch, s.yo * s.yi) * ceil_div(d.out_features, s.xo * s.xi)
             : (d.batch / s.yi) * (d.out_features / s.xi);
  return {lg(s.yi),
          lg(s.xi),
          lg(s.kf),
          lg(s.yo),
          lg(s.xo),
          static_cast<float>(vectors),
          static_cast<float>(acc),
          ((packed ? s.xi : s.kf) % lanes == 0) ? 1.0f : 0.0f,
          lg(parallel),
          lg(packed ? d.in_features : d.in_features / s.kf),
          lg(4.0 * d.out_features * d.in_features),
          packed ? 1.0f : 0.0f};
}

}  // namespace tensortune::schedule_space
