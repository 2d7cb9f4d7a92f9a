#include "schedule_space/workload.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

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
  return 2.0 * batch * out_channels * out_height() * out_width() * (in_channels / groups) *
         kernel_h * kernel_w;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kUInt8Int8:
      return "uint8 x int8 -> int32";
    case Precision::kUInt8Int7:
      return "uint8 x int7 -> int32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFloat16:
      return "float16";
    case Precision::kBFloat16:
      return "bfloat16";
    case Precision::k3xTf32:
      return "3xtf32";
    case Precision::kFloat32:
      break;
  }
  return "float32";
}

Expected<Precision> parse_float_precision(const std::string& name) {
  if (name == "fp32" || name == "float32") return Precision::kFloat32;
  if (name == "tf32") return Precision::kTf32;
  if (name == "fp16" || name == "float16") return Precision::kFloat16;
  if (name == "bf16" || name == "bfloat16") return Precision::kBFloat16;
  if (name == "3xtf32") return Precision::k3xTf32;
  return invalid_argument("precision '" + name + "': choose fp32, tf32, fp16, bf16 or 3xtf32");
}

namespace {

uint32_t bits_of(float x) { return std::bit_cast<uint32_t>(x); }
float float_of(uint32_t b) { return std::bit_cast<float>(b); }

float round_tf32(float x) {
  uint32_t b = bits_of(x);
  if (std::isfinite(x)) b += 0x1000;
  return float_of(b & 0xFFFFE000u);
}

float round_bf16(float x) {
  uint32_t b = bits_of(x);
  if (std::isnan(x)) return float_of((b | 0x00400000u) & 0xFFFF0000u);  // quiet, as cvt.rn
  b += 0x7FFFu + ((b >> 16) & 1u);
  return float_of(b & 0xFFFF0000u);
}

// To the nearest float16 (ties to even), as a float: magnitudes past 65504 + half an ulp become
// infinity, those below 2^-14 keep the subnormals' fixed step of 2^-24.
float round_f16(float x) {
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(a, &e);                      // a = m * 2^e, m in [0.5, 1)
  const int exponent = std::max(e, -13);  // float16's smallest normal is 2^-14 = 0.5 * 2^-13
  const float step = std::ldexp(1.0f, exponent - 11);
  return std::copysign(std::nearbyint(a / step) * step, x);  // the default mode: ties to even
}

}  // namespace

float round_to_precision(float x, Precision p) {
  switch (p) {
    case Precision::kTf32:
      return round_tf32(x);
    case Precision::kFloat16:
      return round_f16(x);
    case Precision::kBFloat16:
      return round_bf16(x);
    case Precision::k3xTf32:
    case Precision::kFloat32:
    case Precision::kUInt8Int8:
    case Precision::kUInt8Int7:
      break;
  }
  return x;
}

double input_unit_roundoff(Precision p) {
  switch (p) {
    case Precision::kTf32:
    case Precision::kFloat16:
      return std::ldexp(1.0, -11);
    case Precision::kBFloat16:
      return std::ldexp(1.0, -8);
    case Precision::k3xTf32:
      return std::ldexp(1.0, -21);
    case Precision::kFloat32:
    case Precision::kUInt8Int8:
    case Precision::kUInt8Int7:
      break;
  }
  return std::ldexp(1.0, -24);
}

IntRange weight_range(Precision p) {
  return p == Precision::kUInt8Int7 ? IntRange{-64, 64} : IntRange{-128, 127};
}

Precision quantized_precision_for(int64_t lo, int64_t hi) {
  const IntRange narrow = weight_range(Precision::kUInt8Int7);
  return lo >= narrow.lo && hi <= narrow.hi ? Precision::kUInt8Int7 : Precision::kUInt8Int8;
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
  TT_RETURN_IF_ERROR(require_positive("groups", w.groups));
  if (w.in_channels % w.groups != 0 || w.out_channels % w.groups != 0)
    return invalid_argument("conv2d workload: groups = " + std::to_string(w.groups) +
                            " does not divide in_channels = " + std::to_string(w.in_channels) +
                            " and out_channels = " + std::to_string(w.out_channels));
  // In 128 bits: a log's sizes may be anything up to 2^63, and their sums and products must not
  // overflow on the way to being refused.
  using Wide = __int128;
  const Wide dkh = Wide{w.dilation_h} * (w.kernel_h - 1) + 1;
  const Wide dkw = Wide{w.dilation_w} * (w.kernel_w - 1) + 1;
  const Wide ph = Wide{w.in_height} + w.pad_top + w.pad_bottom;
  const Wide pw = Wide{w.in_width} + w.pad_left + w.pad_right;
  auto text = [](Wide v) {
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v > 0);
    return digits;
  };
  if (dkh > ph)
    return invalid_argument("conv2d workload: dilated kernel height " + text(dkh) +
                            " is larger than the padded input height " + text(ph));
  if (dkw > pw)
    return invalid_argument("conv2d workload: dilated kernel width " + text(dkw) +
                            " is larger than the padded input width " + text(pw));
  // Sizes this large overflow 32-bit index arithmetic in generated code. Each factor is checked
  // against the bound first, so that the products stay within 128 bits.
  const Wide limit = Wide{1} << 31;
  for (int64_t v : {w.batch, w.in_channels, w.in_height, w.in_width, w.out_channels})
    if (v > limit)
      return invalid_argument("conv2d workload: a size above 2^31: " + std::to_string(v));
  if (Wide{w.batch} * w.in_channels * w.in_height * w.in_width > limit)
    return invalid_argument("conv2d workload: input has more than 2^31 elements");
  if (w.kernel_h > limit || w.kernel_w > limit ||
      Wide{w.out_channels} * (w.in_channels / w.groups) * w.kernel_h * w.kernel_w > limit)
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

Status validate(const BatchMatmulWorkload& w) {
  const std::pair<const char*, int64_t> fields[] = {
      {"batch", w.batch}, {"m", w.m}, {"n", w.n}, {"k", w.k}};
  for (const auto& [field, v] : fields)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("batch_matmul workload: " + std::string(field) + " = " +
                              std::to_string(v) + ", must be in [1, 16777216]");
  if (is_quantized(w.precision))
    return invalid_argument("batch_matmul workload: precision " +
                            std::string(precision_name(w.precision)) +
                            " is not supported (float precisions only)");
  const double largest = double(w.batch) * std::max({w.m * w.k, w.n * w.k, w.m * w.n});
  if (largest > double(int64_t{1} << 31))
    return invalid_argument("batch_matmul workload: an operand has more than 2^31 elements");
  return ok_status();
}

Status validate(const AttentionWorkload& w) {
  const std::pair<const char*, int64_t> fields[] = {
      {"batch", w.batch}, {"m", w.m}, {"n", w.n}, {"k", w.k}, {"dv", w.dv}};
  for (const auto& [field, v] : fields)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("attention workload: " + std::string(field) + " = " +
                              std::to_string(v) + ", must be in [1, 16777216]");
  if (w.precision != Precision::kFloat32)
    return invalid_argument("attention workload: precision " +
                            std::string(precision_name(w.precision)) +
                            " is not supported (float32 only)");
  if (w.mask_batch < 0 || (w.mask_batch > 0 && w.batch % w.mask_batch != 0))
    return invalid_argument("attention workload: mask_batch = " + std::to_string(w.mask_batch) +
                            ", must be 0 (no mask) or divide batch = " + std::to_string(w.batch));
  if (w.has_mask() ? (w.mask_rows != 1 && w.mask_rows != w.m) : w.mask_rows != 0)
    return invalid_argument("attention workload: mask_rows = " + std::to_string(w.mask_rows) +
                            (w.has_mask() ? ", must be 1 or m = " + std::to_string(w.m)
                                          : ", must be 0 without a mask"));
  if (!std::isfinite(w.scale))
    return invalid_argument("attention workload: scale = " + std::to_string(w.scale) +
                            ", must be finite");
  const double largest =
      double(w.batch) * std::max({w.m * w.k, w.n * w.k, w.n * w.dv, w.m * w.dv, w.m * w.n});
  if (largest > double(int64_t{1} << 31))
    return invalid_argument("attention workload: an operand has more than 2^31 elements");
  return ok_status();
}

Status validate(const LayoutTransformWorkload& w) {
  const std::pair<const char*, int64_t> fields[] = {
      {"batch", w.batch}, {"channels", w.channels},     {"height", w.height},
      {"width", w.width}, {"from_block", w.from_block}, {"to_block", w.to_block}};
  for (const auto& [field, v] : fields)
    if (v <= 0 || v > (int64_t{1} << 24))
      return invalid_argument("layout_transform workload: " + std::string(field) + " = " +
                              std::to_string(v) + ", must be in [1, 16777216]");
  for (const auto& [field, v] : {fields[4], fields[5]})
    if (w.channels % v != 0)
      return invalid_argument("layout_transform workload: " + std::string(field) + " = " +
                              std::to_string(v) +
                              " does not divide channels = " + std::to_string(w.channels));
  if (double(w.batch) * double(w.channels) * double(w.height) * double(w.width) >
      double(int64_t{1} << 28))
    return invalid_argument("layout_transform workload: " + describe_layout_transform(w) +
                            " has more than 2^28 elements");
  return ok_status();
}

std::string describe_layout_transform(const LayoutTransformWorkload& w) {
  return "layout_transform " + std::to_string(w.batch) + "x" + std::to_string(w.channels) + "x" +
         std::to_string(w.height) + "x" + std::to_string(w.width) + " " +
         std::to_string(w.from_block) + "c->" + std::to_string(w.to_block) + "c";
}

Status validate(const Workload& w) {
  return std::visit([](const auto& x) { return validate(x); }, w);
}

double workload_flop(const Workload& w) {
  return std::visit([](const auto& x) { return x.flop(); }, w);
}

Expected<Conv2dWorkload> conv2d_workload(const std::vector<int64_t>& data,
                                         const std::vector<int64_t>& kernel,
                                         std::vector<int64_t> const& strides_in,
                                         const std::vector<int64_t>& pads_in,
                                         const std::vector<int64_t>& dilation_in) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(v[i]);
    }
    return s;
  };
  if (data.size() != 4)
    return invalid_argument("conv2d data shape has " + std::to_string(data.size()) +
                            " dimensions, expected NCHW (4)");
  if (kernel.size() != 4)
    return invalid_argument("conv2d kernel shape has " + std::to_string(kernel.size()) +
                            " dimensions, expected OIHW (4)");
  if (kernel[1] <= 0 || data[1] % kernel[1] != 0 || kernel[0] % (data[1] / kernel[1]) != 0)
    return invalid_argument("kernel shape (" + list(kernel) +
                            ") does not fit data channels = " + std::to_string(data[1]) +
                            ": its in_channels must be the data's channels divided by the groups,"
                            " and the groups must divide its out_channels");
  auto pair = [&](const std::vector<int64_t>& v,
                  const char* name) -> Expected<std::vector<int64_t>> {
    if (v.size() == 1) return std::vector<int64_t>{v[0], v[0]};
    if (v.size() == 2) return v;
    return invalid_argument(std::string(name) + " = '" + list(v) + "' needs 1 or 2 values");
  };
  TT_ASSIGN_OR_RETURN(auto strides, pair(strides_in, "strides"));
  TT_ASSIGN_OR_RETURN(auto dilation, pair(dilation_in, "dilation"));
  std::vector<int64_t> pads = pads_in;
  if (pads.size() == 1)
    pads = {pads[0], pads[0], pads[0], pads[0]};
  else if (pads.size() == 2)
    pads = {pads[0], pads[1], pads[0], pads[1]};
  else if (pads.size() != 4)
    return invalid_argument("pads = '" + list(pads_in) +
                            "' needs 1, 2 or 4 values (top,left,bottom,right)");
  Conv2dWorkload w;
  w.batch = data[0];
  w.in_channels = data[1];
  w.in_height = data[2];
  w.in_width = data[3];
  w.out_channels = kernel[0];
  w.kernel_h = kernel[2];
  w.kernel_w = kernel[3];
  w.stride_h = strides[0];
  w.stride_w = strides[1];
  w.pad_top = pads[0];
  w.pad_left = pads[1];
  w.pad_bottom = pads[2];
  w.pad_right = pads[3];
  w.dilation_h = dilation[0];
  w.dilation_w = dilation[1];
  w.groups = data[1] / kernel[1];
  TT_RETURN_IF_ERROR(validate(w));
  return w;
}

Expected<DenseWorkload> dense_workload(const std::vector<int64_t>& data,
                                       const std::vector<int64_t>& weight) {
  if (data.size() != 2)
    return invalid_argument("dense data shape has " + std::to_string(data.size()) +
                            " dimensions, expected (batch, in_features)");
  if (weight.size() != 2)
    return invalid_argument("dense weight shape has " + std::to_string(weight.size()) +
                            " dimensions, expected (out_features, in_features)");
  if (weight[1] != data[1])
    return invalid_argument("weight in_features = " + std::to_string(weight[1]) +
                            " does not match data in_features = " + std::to_string(data[1]));
  DenseWorkload d{data[0], weight[0], data[1]};
  TT_RETURN_IF_ERROR(validate(d));
  return d;
}

Expected<BatchMatmulWorkload> batch_matmul_workload(const std::vector<int64_t>& data,
                                                    const std::vector<int64_t>& weight,
                                                    bool transpose_b) {
  auto shape = [](const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  };
  if (data.size() != 3 || weight.size() != 3)
    return invalid_argument("batch_matmul shapes " + shape(data) + " and " + shape(weight) +
                            " are not both (batch, rows, columns)");
  const int64_t k = transpose_b ? weight[2] : weight[1];
  if (data[0] != weight[0] || data[2] != k)
    return invalid_argument("batch_matmul data " + shape(data) + " and weight " + shape(weight) +
                            (transpose_b ? " (B, N, K)" : " (B, K, N)") + " do not match");
  BatchMatmulWorkload w{data[0], data[1], transpose_b ? weight[1] : weight[2], data[2],
                        transpose_b};
  TT_RETURN_IF_ERROR(validate(w));
  return w;
}

Conv2dWorkload square_conv2d(int64_t in_channels, int64_t size, int64_t out_channels,
                             int64_t kernel, int64_t stride) {
  Conv2dWorkload w;
  w.in_channels = in_channels;
  w.in_height = w.in_width = size;
  w.out_channels = out_channels;
  w.kernel_h = w.kernel_w = kernel;
  w.stride_h = w.stride_w = stride;
  w.pad_top = w.pad_left = w.pad_bottom = w.pad_right = kernel / 2;
  return w;
}

PadPair auto_pad(AutoPad mode, int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  if (mode == AutoPad::kValid) return {0, 0};
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + dilation * (kernel - 1) + 1 - in, 0);
  const int64_t small = total / 2;
  if (mode == AutoPad::kSameUpper) return {small, total - small};
  return {total - small, small};
}

Precision precision_of(const Workload& w) {
  return std::visit([](const auto& x) { return x.precision; }, w);
}

OperandDTypes operand_dtypes(const Workload& workload) {
  if (is_quantized(precision_of(workload)))
    return {DType::kUInt8, DType::kInt8, DType::kInt32, DType::kInt32};
  return {};
}

OperandShapes operand_shapes(const Workload& workload) {
  if (const auto* w = std::get_if<Conv2dWorkload>(&workload))
    return {{w->batch, w->in_channels, w->in_height, w->in_width},
            {w->out_channels, w->in_channels / w->groups, w->kernel_h, w->kernel_w},
            {w->out_channels},
            {w->batch, w->out_channels, w->out_height(), w->out_width()}};
  if (const auto* b = std::get_if<BatchMatmulWorkload>(&workload))
    return {{b->batch, b->m, b->k},
            b->transpose_b ? std::vector<int64_t>{b->batch, b->n, b->k}
                           : std::vector<int64_t>{b->batch, b->k, b->n},
            {b->n},
            {b->batch, b->m, b->n}};
  if (const auto* a = std::get_if<AttentionWorkload>(&workload))
    return {{a->batch, a->m, a->k},
            {a->batch * a->n * (a->k + a->dv) + a->mask_elements()},
            {a->dv},
            {a->batch, a->m, a->dv}};
  const auto& d = std::get<DenseWorkload>(workload);
  return {{d.batch, d.in_features},
          {d.out_features, d.in_features},
          {d.out_features},
          {d.batch, d.out_features}};
}

double workload_bytes(const Workload& workload) {
  const OperandShapes s = operand_shapes(workload);
  double elements = 0;
  for (const auto* shape : {&s.data, &s.weight, &s.bias, &s.out}) {
    double n = 1;
    for (int64_t d : *shape) n *= static_cast<double>(d);
    elements += n;
  }
  return 4 * elements;
}

int64_t reduction_length(const Workload& workload) {
  if (const auto* w = std::get_if<Conv2dWorkload>(&workload))
    return w->in_channels / w->groups * w->kernel_h * w->kernel_w;
  if (const auto* b = std::get_if<BatchMatmulWorkload>(&workload)) return b->k;
  if (const auto* a = std::get_if<AttentionWorkload>(&workload)) return a->k + a->n;
  return std::get<DenseWorkload>(workload).in_features;
}

}  // namespace tensortune::schedule_space
