#include "schedule_space/workload.h"

#include <algorithm>

namespace tensortune::schedule_space {
namespace {

Status require_positive(const char* field, int64_t v) {
  if (v <= 0)
    return invalid_argument("conv2d workload: " + std::string(field) + " = " + std::to_string(v) +
                            ", must be > 0");
  return ok_status();
}

Status require_non_negative(const char* field, int64_t v) {
  if (v < 0)
    return invalid_argument("conv2d workload: " + std::string(field) + " = " + std::to_string(v) +
                            ", must be >= 0");
  return ok_status();
}

int64_t out_size(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t d, int64_t s) {
  const int64_t span = in + pb + pe - d * (k - 1) - 1;
  if (span < 0) return 0;
  return span / s + 1;
}

}  // namespace

int64_t Conv2dWorkload::out_height() const {
  return out_size(in_height, pad_top, pad_bottom, kernel_h, dilation_h, stride_h);
}
int64_t Conv2dWorkload::out_width() const {
  return out_size(in_width, pad_left, pad_right, kernel_w, dilation_w, stride_w);
}
double Conv2dWorkload::flop() const {
  return 2.0 * batch * out_channels * out_height() * out_width() * in_channels * kernel_h *
         kernel_w;
}

Status validate(const Conv2dWorkload& w) {
  TT_RETURN_IF_ERROR(require_positive("batch", w.batch));
  TT_RETURN_IF_ERROR(require_positive("in_channels", w.in_channels));
  TT_RETURN_IF_ERROR(require_positive("in_height", w.in_height));
  TT_RETURN_IF_ERROR(require_positive("in_width", w.in_width));
  TT_RETURN_IF_ERROR(require_positive("out_channels", w.out_channels));
  TT_RETURN_IF_ERROR(require_positive("kernel_h", w.kernel_h));
  TT_RETURN_IF_ERROR(require_positive("kernel_w", w.kernel_w));
  TT_RETURN_IF_ERROR(require_positive("stride_h", w.stride_h));
  TT_RETURN_IF_ERROR(require_positive("stride_w", w.stride_w));
  TT_RETURN_IF_ERROR(require_positive("dilation_h", w.dilation_h));
  TT_RETURN_IF_ERROR(require_positive("dilation_w", w.dilation_w));
  TT_RETURN_IF_ERROR(require_non_negative("pad_top", w.pad_top));
  TT_RETURN_IF_ERROR(require_non_negative("pad_left", w.pad_left));
  TT_RETURN_IF_ERROR(require_non_negative("pad_bottom", w.pad_bottom));
  TT_RETURN_IF_ERROR(require_non_negative("pad_right", w.pad_right));
  const int64_t dkh = w.dilation_h * (w.kernel_h - 1) + 1;
  const int64_t dkw = w.dilation_w * (w.kernel_w - 1) + 1;
  const int64_t ph = w.in_height + w.pad_top + w.pad_bottom;
  const int64_t pw = w.in_width + w.pad_left + w.pad_right;
  if (dkh > ph)
    return invalid_argument("conv2d workload: dilated kernel height " + std::to_string(dkh) +
                            " is larger than the padded input height " + std::to_string(ph));
  if (dkw > pw)
    return invalid_argument("conv2d workload: dilated kernel width " + std::to_string(dkw) +
                            " is larger than the padded input width " + std::to_string(pw));
  // Sizes this large overflow 32-bit index arithmetic in generated code.
  if (w.batch * w.in_channels * w.in_height * w.in_width > (int64_t{1} << 31))
    return invalid_argument("conv2d workload: input has more than 2^31 elements");
  if (w.out_channels * w.in_channels * w.kernel_h * w.kernel_w > (int64_t{1} << 31))
    return invalid_argument("conv2d workload: kernel has more than 2^31 elements");
  return ok_status();
}

Status validate(const DenseWorkload& w) {
  auto check = [](const char* field, int64_t v) -> Status {
    if (v <= 0)
      return invalid_argument("dense workload: " + std::string(field) + " = " + std::to_string(v) +
                              ", must be > 0");
    if (v > (int64_t{1} << 24))
      return invalid_argument("dense workload: " + std::string(field) + " = " + std::to_string(v) +
                              ", must be <= 16777216");
    return ok_status();
  };
  TT_RETURN_IF_ERROR(check("batch", w.batch));
  TT_RETURN_IF_ERROR(check("out_features", w.out_features));
  TT_RETURN_IF_ERROR(check("in_features", w.in_features));
  return ok_status();
}

Status validate(const Workload& w) {
  return std::visit([](const auto& x) { return validate(x); }, w);
}

double workload_flop(const Workload& w) {
  return std::visit([](const auto& x) { return x.flop(); }, w);
}

PadPair auto_pad(AutoPad mode, int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  if (mode == AutoPad::kValid) return {0, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + dilation * (kernel - 1) + 1 - in, 0);
  const int64_t small = total / 2;
  if (mode == AutoPad::kSameUpper) return {small, total - small};
  return {total - small, small};
}

}  // namespace tensortune::schedule_space
