// FakeQuantizationToInteger: a float conv2d or dense whose operands are dequantized 8-bit values
// (a QDQ model: DequantizeLinear -> Conv / Gemm, as the importer composes them) computes in
// integers:
//
//   conv(dequantize(q, s, z), dequantize(w, sw))
//     = float(conv_integer(q, w, zero point z)) * (s * sw[oc])
//
// exactly in the integer part (padding reads the zero point, as the float convolution's zero
// padding of the dequantized data is), then one float multiply per output channel. What
// follows the convolution (bias, relu, the next QuantizeLinear) is unchanged and fuses into the
// kernel's epilogue. The data must be uint8 (int8 data is shifted by 128 into uint8, with its
// zero point) and the weights int8 after their zero point is subtracted; anything else, and
// every operator the `runs_in_integers` callback refuses (no kernel serves it), stays float,
// unless padding its input channels to a multiple of 4 (zero-point data, zero weights: the same
// sums) makes a kernel serve it, as AutoTVM's legalization does for an image's 3 channels. A
// dense is the same with (M, K) data and (N, K) weights; its zero point has no padding to fill.
//
// The integer convolutions and 2-D products of QLinearConv, ConvInteger, QLinearMatMul and
// MatMulInteger (8-bit data widened to int32 minus its zero point, constant weights) become the
// same uint8 x int8 nodes, their int32 result unchanged.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "compiler/graph/interpreter.h"
#include "compiler/graph/op_attrs.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace tensortune::passes {
namespace {

using graph::DType;
using graph::Graph;
using graph::Node;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

/// The quantized data of a convolution: the integer value (a float tensor of integers, or an
/// 8-bit tensor), its range, and its zero point.
struct QuantizedData {
  ValueId values = graph::kNoValue;  ///< in the source graph
  bool signed8 = false;              ///< values in [-128, 127] (else [0, 255])
  int64_t zero_point = 0;
  float scale = 0;
};

class Realizer {
 public:
  Realizer(const Graph& g, std::function<bool(const schedule_space::Workload&)> accepts)
      : g_(g), accepts_(std::move(accepts)), rw_(g) {}

  Expected<Graph> run() {
    const auto uses = g_.use_counts();
    consumer_.assign(g_.values().size(), -1);
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      for (ValueId in : g_.nodes()[i].inputs)
        consumer_[static_cast<size_t>(in)] = uses[static_cast<size_t>(in)] == 1 ? int(i) : -1;
    read_in_float_.assign(g_.values().size(), false);
    for (ValueId o : g_.outputs()) read_in_float_[static_cast<size_t>(o)] = true;
    for (const Node& n : g_.nodes())
      if (n.op != OpKind::kConv2d && n.op != OpKind::kDense)
        for (ValueId in : n.inputs) read_in_float_[static_cast<size_t>(in)] = true;
    for (const Node& n : g_.nodes()) {
      if (skipped_.count(n.output)) continue;
      if (n.op == OpKind::kConv2dInteger && n.inputs.size() == 2) {
        TT_ASSIGN_OR_RETURN(bool done, try_integer_depthwise(n));
        if (done) continue;
      }
      if (n.op == OpKind::kConv2d || n.op == OpKind::kDense) {
        TT_ASSIGN_OR_RETURN(bool done, n.op == OpKind::kConv2d ? try_conv(n) : try_dense(n));
        if (done) continue;
      }
      if ((n.op == OpKind::kConv2dInteger || n.op == OpKind::kMatMulInteger) &&
          n.inputs.size() == 2) {
        TT_ASSIGN_OR_RETURN(bool done, try_integer_op(n));
        if (done) continue;
      }
      TT_RETURN_IF_ERROR(rw_.copy(n));
    }
    return rw_.finish();
  }

 private:
  const Node* producer(ValueId v, OpKind op) const { return producer_of(g_, v, op); }

  /// The value of `v` where every value it depends on is a constant (evaluated once).
  const Tensor* constant_value(ValueId v) {
    if (const Tensor* c = g_.constant(v)) return c;
    if (auto it = evaluated_.find(v); it != evaluated_.end())
      return it->second ? &*it->second : nullptr;
    evaluated_[v] = std::nullopt;
    const int p = g_.value(v).producer;
    if (p < 0) return nullptr;
    const Node& n = g_.nodes()[p];
    std::vector<const Tensor*> inputs;
    for (ValueId in : n.inputs) {
      const Tensor* t = constant_value(in);
      if (!t) return nullptr;
      inputs.push_back(t);
    }
    auto value = graph::evaluate_node(n, inputs, g_.type(v));
    if (!value) return nullptr;
    evaluated_[v] = std::move(value).value();
    return &*evaluated_[v];
  }

  /// A constant single number (a scalar or one element).
  std::optional<double> scalar(ValueId v) {
    const Tensor* t = constant_value(v);
    if (!t || t->size() != 1) return std::nullopt;
    return t->at(0);
  }

  static bool is_integer(double v) { return std::isfinite(v) && v == std::round(v); }

  /// x * s, either operand the constant; the other operand and s.
  std::optional<std::pair<ValueId, double>> times_scalar(ValueId v) {
    const Node* mul = producer(v, OpKind::kMultiply);
    if (!mul) return std::nullopt;
    for (int k = 0; k < 2; ++k)
      if (auto s = scalar(mul->inputs[1 - k]); s && *s > 0 && std::isfinite(*s))
        return std::make_pair(mul->inputs[k], *s);
    return std::nullopt;
  }

  /// Whether v's values are integers: round(...) plus an integer zero point, or round alone.
  bool is_rounded(ValueId v) {
    if (const Node* add = producer(v, OpKind::kAdd)) {
      int k = 0;
      for (; k < 2; ++k)
        if (auto z = scalar(add->inputs[1 - k]); z && is_integer(*z)) break;
      if (k == 2) return false;
      v = add->inputs[k];
    }
    return producer(v, OpKind::kRound) != nullptr;
  }

  /// The float value an 8-bit tensor was cast from, where that cast is exact: a clip to the
  /// tensor's range of rounded values (a requantization's).
  std::optional<ValueId> float_of_bytes(ValueId bytes) {
    const Node* cast = producer(bytes, OpKind::kCast);
    if (!cast || g_.type(cast->inputs[0]).dtype != DType::kFloat32) return std::nullopt;
    const Node* clip = producer(cast->inputs[0], OpKind::kClip);
    if (!clip) return std::nullopt;
    const double lo = g_.type(bytes).dtype == DType::kInt8 ? -128 : 0;
    const auto range = graph::attrs_as<graph::ClipAttrs>(clip->attrs);
    if (range.min < lo || range.max > lo + 255 || !is_rounded(clip->inputs[0])) return std::nullopt;
    return cast->inputs[0];
  }

  /// v - z for a constant integer z: (v, z); v alone: (v, 0); nothing for another z.
  std::optional<std::pair<ValueId, int64_t>> minus_zero_point(ValueId v) {
    const Node* sub = producer(v, OpKind::kSubtract);
    if (!sub) return std::make_pair(v, int64_t{0});
    auto z = scalar(sub->inputs[1]);
    if (!z || !is_integer(*z)) return std::nullopt;
    return std::make_pair(sub->inputs[0], static_cast<int64_t>(*z));
  }

  /// dequantize(q, s, z) as the importer composes it: (clip(round(x / s) + z) - z) * s with the
  /// clip to an 8-bit range (QuantizeLinear -> DequantizeLinear).
  std::optional<QuantizedData> dequantized_data(ValueId v) {
    auto scaled = times_scalar(v);
    if (!scaled) return std::nullopt;
    QuantizedData q;
    q.scale = static_cast<float>(scaled->second);
    auto unshifted = minus_zero_point(scaled->first);
    if (!unshifted) return std::nullopt;
    const auto [shifted, zero_point] = *unshifted;
    q.zero_point = zero_point;
    const Node* clip = producer(shifted, OpKind::kClip);
    if (!clip || g_.type(shifted).dtype != DType::kFloat32) return std::nullopt;
    const auto range = graph::attrs_as<graph::ClipAttrs>(clip->attrs);
    if (range.min == 0 && range.max == 255) {
      q.signed8 = false;
    } else if (range.min == -128 && range.max == 127) {
      q.signed8 = true;
    } else {
      return std::nullopt;
    }
    if (!is_rounded(clip->inputs[0])) return std::nullopt;
    const int64_t lo = q.signed8 ? -128 : 0;
    if (q.zero_point < lo || q.zero_point > lo + 255) return std::nullopt;
    q.values = shifted;
    return q;
  }

  /// The weight as int8 values (zero point subtracted) and its per-output-channel scale.
  struct QuantizedWeight {
    Tensor values;             ///< int8, OIHW
    std::vector<float> scale;  ///< one per output channel
  };
  std::optional<QuantizedWeight> dequantized_weight(ValueId v) {
    const Node* mul = producer(v, OpKind::kMultiply);
    if (!mul) return std::nullopt;
    const Shape& shape = g_.type(v).shape;
    const int64_t channels = shape[0];
    for (int k = 0; k < 2; ++k) {
      const Tensor* ints = constant_value(mul->inputs[k]);
      const Tensor* scale = constant_value(mul->inputs[1 - k]);
      if (!ints || !scale || ints->shape != shape || !graph::is_float(scale->dtype)) continue;
      // The scale: one number, or one per output channel ([O], [O, 1, 1, 1]).
      QuantizedWeight w;
      if (scale->size() == 1) {
        w.scale.assign(static_cast<size_t>(channels), scale->f32[0]);
      } else if (scale->size() == channels && !scale->shape.empty() &&
                 scale->shape[0] == channels && scale->shape.size() == shape.size()) {
        w.scale = scale->f32;
      } else {
        continue;
      }
      bool valid = true;
      for (float s : w.scale) valid = valid && s > 0 && std::isfinite(s);
      w.values = Tensor::zeros(DType::kInt8, shape);
      for (int64_t i = 0; valid && i < ints->size(); ++i) {
        const double x = ints->at(i);
        valid = is_integer(x) && x >= -128 && x <= 127;
        w.values.i64[static_cast<size_t>(i)] = static_cast<int64_t>(x);
      }
      if (valid) return w;
    }
    return std::nullopt;
  }

  Expected<bool> try_conv(const Node& n) {
    const auto conv = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    if (conv.groups != 1 || x.size() != 4 || w.size() != 4 || n.inputs.size() != 2) return false;
    auto workload = schedule_space::conv2d_workload(x, w, conv.strides, conv.pads, conv.dilations);
    if (!workload) return false;
    workload->precision = schedule_space::Precision::kUInt8Int8;
    const auto channels = integer_channels(*workload);
    if (!channels) return false;
    return rewrite(n, OpKind::kConv2dInteger, {w[0], 1, 1}, *channels);
  }

  /// The input channels the integer convolution reads: its own where a template serves it as it
  /// is, else rounded up to a multiple of 4 where that makes one serve it (AutoTVM's legalization
  /// pads an int8 convolution's input channels so that each VNNI lane sums four, with zero
  /// weights: an image's 3 channels become 4); nothing where neither is served.
  std::optional<int64_t> integer_channels(schedule_space::Conv2dWorkload conv) const {
    if (!accepts_ || accepts_(conv)) return conv.in_channels;
    if (conv.groups != 1 || conv.in_channels % 4 == 0) return std::nullopt;
    conv.in_channels += 4 - conv.in_channels % 4;
    if (!accepts_(conv)) return std::nullopt;
    return conv.in_channels;
  }

  /// `data` (uint8 NCHW, in the rewritten graph) with zero-point channels appended up to
  /// `channels`, and the OIHW `weight` with zero ones: the same convolution, every product of a
  /// padded channel zero.
  Expected<ValueId> pad_channels(ValueId data, Tensor& weight, int64_t channels, int64_t zero_point,
                                 const std::string& name) {
    const Shape& x = rw_.out().type(data).shape;
    const int64_t extra = channels - x[1];
    if (extra <= 0) return data;
    const Shape& w = weight.shape;
    Tensor padded = Tensor::zeros(weight.dtype, {w[0], channels, w[2], w[3]});
    const int64_t taps = w[2] * w[3];
    for (int64_t o = 0; o < w[0]; ++o)
      for (int64_t i = 0; i < w[1] * taps; ++i)
        padded.i64[static_cast<size_t>(o * channels * taps + i)] =
            weight.i64[static_cast<size_t>(o * w[1] * taps + i)];
    weight = std::move(padded);
    graph::PadAttrs pad;
    pad.pads = {0, 0, 0, 0, 0, extra, 0, 0};
    pad.value = static_cast<double>(zero_point);
    return rw_.emit(OpKind::kPad, name + ".channels_padded", {data}, graph::to_attrs(pad));
  }

  Expected<bool> try_dense(const Node& n) {
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    if (x.size() != 2 || w.size() != 2 || n.inputs.size() != 2) return false;
    auto workload = schedule_space::dense_workload(x, w);
    if (!workload) return false;
    workload->precision = schedule_space::Precision::kUInt8Int8;
    if (accepts_ && !accepts_(*workload)) return false;
    return rewrite(n, OpKind::kDense, {w[0]}, 0);
  }

  /// An 8-bit tensor widened to int32 with its zero point subtracted, as the importer composes
  /// the operands of QLinearConv and ConvInteger: int32(x) - int32(z), z a constant number.
  struct ShiftedBytes {
    ValueId bytes = graph::kNoValue;  ///< uint8 or int8, in the source graph
    int64_t zero_point = 0;
  };
  std::optional<ShiftedBytes> shifted_bytes(ValueId v) {
    auto unshifted = minus_zero_point(v);
    if (!unshifted) return std::nullopt;
    ShiftedBytes out;
    std::tie(v, out.zero_point) = *unshifted;
    const Node* widen = producer(v, OpKind::kCast);
    if (!widen || g_.type(v).dtype != DType::kInt32) return std::nullopt;
    out.bytes = widen->inputs[0];
    const DType d = g_.type(out.bytes).dtype;
    if (d != DType::kUInt8 && d != DType::kInt8) return std::nullopt;
    const int64_t lo = d == DType::kInt8 ? -128 : 0;
    if (out.zero_point < lo || out.zero_point > lo + 255) return std::nullopt;
    return out;
  }

  /// The uint8 node of the quantized values `v` (a source value: integers in float32, or an int8
  /// tensor): as they are, or moved up by 128 from int8's range when `signed8`. Operators of the
  /// same quantized value share one.
  Expected<ValueId> as_uint8(ValueId v, bool signed8, const std::string& name) {
    if (auto known = quantized_.find(v); known != quantized_.end()) return known->second;
    ValueId q = rw_.map(v);
    if (g_.type(v).dtype != DType::kFloat32) {
      TT_ASSIGN_OR_RETURN(
          q, rw_.emit(OpKind::kCast, name + ".float32_data", {q},
                      graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kFloat32)})));
    }
    if (signed8) {
      const ValueId c128 =
          rw_.out().add_constant(name + ".uint8_offset", Tensor::from_floats({}, {128.0f}));
      TT_ASSIGN_OR_RETURN(q, rw_.emit(OpKind::kAdd, name + ".as_uint8", {q, c128}));
    }
    TT_ASSIGN_OR_RETURN(
        q, rw_.emit(OpKind::kCast, name + ".quantized", {q},
                    graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kUInt8)})));
    quantized_.emplace(v, q);
    return q;
  }

  /// Whether a dequantized value is read in float by anything but the convolutions and dense
  /// layers that read its bytes: a residual sum read by the next block's add, in a model that
  /// quantizes every layer's output (ONNX Runtime's quantizer's form).
  bool read_in_float(ValueId dequantized) const {
    return read_in_float_[static_cast<size_t>(dequantized)];
  }

  /// The uint8 node of quantized data computed back from its dequantized value dq = (q - z) * s:
  /// round(dq * (1 / s)) + z. Exact: q - z is an integer of at most 255 in magnitude, and the
  /// three roundings (of the product by s, of 1 / s, of the product by it) move it by less than
  /// 2^-14, far below the half that round() forgives. So the kernel that computes dq stores it
  /// midway for its float readers and goes on to the bytes, where otherwise a kernel of its own
  /// would read q back to dequantize it. Falls back to q's own bytes for a scale whose inverse
  /// is not a normal float.
  Expected<ValueId> requantized(ValueId dequantized, const QuantizedData& data,
                                const std::string& name) {
    const float inverse = 1.0f / data.scale;
    if (!std::isnormal(data.scale) || !std::isnormal(inverse))
      return as_uint8(data.values, data.signed8, name);
    if (auto known = quantized_.find(data.values); known != quantized_.end()) return known->second;
    const int64_t zero_point = data.zero_point + (data.signed8 ? 128 : 0);
    const ValueId inv = rw_.out().add_constant(name + ".requantize.inverse_scale",
                                               Tensor::from_floats({}, {inverse}));
    TT_ASSIGN_OR_RETURN(ValueId q, rw_.emit(OpKind::kMultiply, name + ".requantize.scaled",
                                            {rw_.map(dequantized), inv}));
    TT_ASSIGN_OR_RETURN(q, rw_.emit(OpKind::kRound, name + ".requantize.round", {q}));
    if (zero_point != 0) {
      const ValueId z = rw_.out().add_constant(name + ".requantize.zero_point",
                                               Tensor::from_floats({}, {float(zero_point)}));
      TT_ASSIGN_OR_RETURN(q, rw_.emit(OpKind::kAdd, name + ".requantize.plus_zero_point", {q, z}));
    }
    // A no-op on these values, but it states their range: the cast after it is the quantizing
    // cast that fuses into the kernel computing dq (passes::known_range).
    graph::ClipAttrs bytes;
    bytes.min = 0;
    bytes.max = 255;
    TT_ASSIGN_OR_RETURN(
        q, rw_.emit(OpKind::kClip, name + ".requantize.saturate", {q}, graph::to_attrs(bytes)));
    TT_ASSIGN_OR_RETURN(
        q, rw_.emit(OpKind::kCast, name + ".quantized", {q},
                    graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kUInt8)})));
    quantized_.emplace(data.values, q);
    return q;
  }

  /// An integer convolution or 2-D matrix product of shifted 8-bit data and constant weights
  /// (QLinearConv's, ConvInteger's, QLinearMatMul's and MatMulInteger's composition) as the
  /// one the int8 kernels compute: uint8 data with its zero point (the padding's value), int8
  /// constant weights (a product's (K, N) transposed into the dense's (N, K)). The int32 result
  /// is the same number.
  Expected<bool> try_integer_op(const Node& n) {
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    const bool conv = n.op == OpKind::kConv2dInteger;
    int64_t channels = 0;  // a convolution's input channels, padded as the kernel reads them
    if (conv) {
      const auto attrs = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
      if (attrs.groups != 1 || x.size() != 4 || w.size() != 4) return false;
      auto c = schedule_space::conv2d_workload(x, w, attrs.strides, attrs.pads, attrs.dilations);
      if (!c) return false;
      c->precision = schedule_space::Precision::kUInt8Int8;
      const auto served = integer_channels(*c);
      if (!served) return false;
      channels = *served;
    } else {
      if (x.size() != 2 || w.size() != 2) return false;
      auto d = schedule_space::dense_workload(x, {w[1], w[0]});
      if (!d) return false;
      d->precision = schedule_space::Precision::kUInt8Int8;
      if (accepts_ && !accepts_(*d)) return false;
    }
    auto data = shifted_bytes(n.inputs[0]);
    if (!data) return false;
    const Tensor* ints = constant_value(n.inputs[1]);
    if (!ints) return false;
    const Shape shape = conv ? w : Shape{w[1], w[0]};
    Tensor weight = Tensor::zeros(DType::kInt8, shape);
    for (int64_t i = 0; i < ints->size(); ++i) {
      const double v = ints->at(i);
      if (!is_integer(v) || v < -128 || v > 127) return false;
      // (K, N) element (k, o) is the dense weight's (o, k).
      const int64_t at = conv ? i : (i % w[1]) * w[0] + i / w[1];
      weight.i64[static_cast<size_t>(at)] = static_cast<int64_t>(v);
    }
    const std::string& name = n.name;
    ValueId q = rw_.map(data->bytes);
    int64_t zero_point = data->zero_point;
    if (g_.type(data->bytes).dtype == DType::kInt8) {
      // From the float value the int8 tensor was cast from where there is one, so that the shift
      // and the cast fuse into the kernel that computes it.
      TT_ASSIGN_OR_RETURN(q,
                          as_uint8(float_of_bytes(data->bytes).value_or(data->bytes), true, name));
      zero_point += 128;
    }
    if (conv) {
      TT_ASSIGN_OR_RETURN(q, pad_channels(q, weight, channels, zero_point, name));
    }
    std::vector<ValueId> inputs = {
        q, rw_.out().add_constant(g_.value(n.inputs[1]).name + ".int8", std::move(weight))};
    if (zero_point != 0)
      inputs.push_back(rw_.out().add_constant(name + ".zero_point",
                                              Tensor::from_ints({}, {zero_point}, DType::kUInt8)));
    TT_ASSIGN_OR_RETURN(ValueId acc,
                        conv ? rw_.emit(OpKind::kConv2dInteger, name, std::move(inputs), n.attrs)
                             : rw_.emit(OpKind::kDense, name, std::move(inputs)));
    rw_.set(n.output, acc);
    return true;
  }

  /// The node that alone reads `v`, if `v` has exactly one reader and it is a node of `op`.
  const Node* only_reader(ValueId v, OpKind op) const {
    const int i = consumer_[static_cast<size_t>(v)];
    if (i < 0 || g_.nodes()[static_cast<size_t>(i)].op != op) return nullptr;
    return &g_.nodes()[static_cast<size_t>(i)];
  }

  /// A depthwise integer convolution of shifted 8-bit data (a grouped QLinearConv's or
  /// ConvInteger's), whose int32 result, plus an optional constant int32 bias, is then cast to
  /// float: the float depthwise convolution of (x - zero point) by the shifted weights computes
  /// the same numbers exactly while every sum stays below 2^24 (checked per channel from the
  /// weights and the data's range), so it runs on the depthwise template with the bias and what
  /// follows as its float epilogue.
  Expected<bool> try_integer_depthwise(const Node& n) {
    const auto attrs = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
    const Shape& x = g_.type(n.inputs[0]).shape;
    const Shape& w = g_.type(n.inputs[1]).shape;
    if (x.size() != 4 || w.size() != 4 || attrs.groups != x[1] || w[0] != x[1] || w[1] != 1 ||
        attrs.groups == 1)
      return false;
    auto workload =
        schedule_space::conv2d_workload(x, w, attrs.strides, attrs.pads, attrs.dilations);
    if (!workload || (accepts_ && !accepts_(*workload))) return false;
    auto data = shifted_bytes(n.inputs[0]);
    const Tensor* ints = constant_value(n.inputs[1]);
    if (!data || !ints) return false;
    // What reads the result: an int32 bias (optional), then the cast to float.
    const Node* bias = only_reader(n.output, OpKind::kAdd);
    const Tensor* bias_values = nullptr;
    if (bias) {
      const ValueId other = bias->inputs[0] == n.output ? bias->inputs[1] : bias->inputs[0];
      bias_values = constant_value(other);
      if (!bias_values || bias_values->dtype != DType::kInt32 || bias_values->size() != x[1] ||
          g_.type(bias->output).shape != g_.type(n.output).shape)
        return false;
    }
    const Node* to_float = only_reader(bias ? bias->output : n.output, OpKind::kCast);
    if (!to_float || g_.type(to_float->output).dtype != DType::kFloat32) return false;
    // Exact in float32: |x - z| <= the farther end of the data's range from z.
    const bool signed8 = g_.type(data->bytes).dtype == DType::kInt8;
    const double lo = signed8 ? -128 : 0;
    const double reach = std::max(data->zero_point - lo, lo + 255 - data->zero_point);
    const int64_t taps = w[2] * w[3];
    Tensor weight = Tensor::zeros(DType::kFloat32, w);
    for (int64_t c = 0; c < w[0]; ++c) {
      double sum = bias_values ? std::fabs(bias_values->at(c)) : 0;
      for (int64_t t = 0; t < taps; ++t) {
        const double v = ints->at(c * taps + t);
        if (!is_integer(v)) return false;
        sum += std::fabs(v) * reach;
        weight.f32[static_cast<size_t>(c * taps + t)] = static_cast<float>(v);
      }
      if (sum >= 16777216.0) return false;
    }
    const std::string& name = n.name;
    // The data's values as float32: the value a requantization cast them from, or a cast.
    ValueId xf = graph::kNoValue;
    if (auto f = float_of_bytes(data->bytes)) {
      xf = rw_.map(*f);
    } else {
      TT_ASSIGN_OR_RETURN(
          xf, rw_.emit(OpKind::kCast, name + ".float32_data", {rw_.map(data->bytes)},
                       graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kFloat32)})));
    }
    if (data->zero_point != 0) {
      const ValueId z = rw_.out().add_constant(name + ".zero_point_float",
                                               Tensor::from_floats({}, {float(data->zero_point)}));
      TT_ASSIGN_OR_RETURN(xf, rw_.emit(OpKind::kSubtract, name + ".shifted_float", {xf, z}));
    }
    TT_ASSIGN_OR_RETURN(
        ValueId y, rw_.emit(OpKind::kConv2d, name,
                            {xf, rw_.out().add_constant(g_.value(n.inputs[1]).name + ".float32",
                                                        std::move(weight))},
                            n.attrs));
    if (bias) {
      std::vector<float> b;
      for (int64_t c = 0; c < x[1]; ++c) b.push_back(static_cast<float>(bias_values->at(c)));
      const ValueId bc =
          rw_.out().add_constant(name + ".bias_float", Tensor::from_floats({x[1], 1, 1}, b));
      TT_ASSIGN_OR_RETURN(y, rw_.emit(OpKind::kAdd, bias->name, {y, bc}));
      skipped_.insert(bias->output);
    }
    skipped_.insert(to_float->output);
    rw_.set(to_float->output, y);
    return true;
  }

  /// `n` (a conv2d or dense of dequantized operands) as the integer `op` of the quantized
  /// values, cast to float and times the per-channel multiplier (of shape `multiplier_shape`).
  /// The caller has checked that a kernel serves it; a convolution's data and weights are padded
  /// to `channels` input channels.
  Expected<bool> rewrite(const Node& n, OpKind op, const Shape& multiplier_shape,
                         int64_t channels) {
    auto data = dequantized_data(n.inputs[0]);
    if (!data) return false;
    auto weight = dequantized_weight(n.inputs[1]);
    if (!weight) return false;

    // The data as uint8: int8 values move up by 128, and so does their zero point.
    const std::string& name = n.name;
    const int64_t zero_point = data->zero_point + (data->signed8 ? 128 : 0);
    TT_ASSIGN_OR_RETURN(ValueId q, read_in_float(n.inputs[0])
                                       ? requantized(n.inputs[0], *data, name)
                                       : as_uint8(data->values, data->signed8, name));
    if (op == OpKind::kConv2dInteger) {
      TT_ASSIGN_OR_RETURN(q, pad_channels(q, weight->values, channels, zero_point, name));
    }
    std::vector<ValueId> inputs = {
        q, rw_.out().add_constant(g_.value(n.inputs[1]).name + ".int8", std::move(weight->values))};
    if (zero_point != 0)
      inputs.push_back(rw_.out().add_constant(name + ".zero_point",
                                              Tensor::from_ints({}, {zero_point}, DType::kUInt8)));
    TT_ASSIGN_OR_RETURN(ValueId acc, rw_.emit(op, name, std::move(inputs), n.attrs));
    TT_ASSIGN_OR_RETURN(
        ValueId real,
        rw_.emit(OpKind::kCast, name + ".float32", {acc},
                 graph::to_attrs(graph::CastAttrs{static_cast<int64_t>(DType::kFloat32)})));
    std::vector<float> multiplier;
    for (float s : weight->scale) multiplier.push_back(data->scale * s);
    const ValueId m = rw_.out().add_constant(
        name + ".multiplier", Tensor::from_floats(multiplier_shape, std::move(multiplier)));
    TT_ASSIGN_OR_RETURN(ValueId y, rw_.emit(OpKind::kMultiply, name + ".scaled", {real, m}));
    rw_.set(n.output, y);
    return true;
  }

  const Graph& g_;
  std::function<bool(const schedule_space::Workload&)> accepts_;
  Rewriter rw_;
  std::map<ValueId, std::optional<Tensor>> evaluated_;
  std::map<ValueId, ValueId> quantized_;  ///< source integer values -> their uint8 cast
  std::vector<int> consumer_;             ///< per value: the node that alone reads it, else -1
  /// per value: read by a node other than a conv2d or dense, or a graph output (read_in_float)
  std::vector<bool> read_in_float_;
  std::set<ValueId> skipped_;  ///< outputs of nodes a rewrite replaced (not copied)
};

}  // namespace

Pass fake_quantization_to_integer(
    std::function<bool(const schedule_space::Workload&)> runs_in_integers) {
  return Pass{"FakeQuantizationToInteger",
              3,
              "a conv2d of dequantized uint8/int8 data and int8 weights computes in integers "
              "(conv2d_integer with the data's zero point) times a per-channel float multiplier",
              {},
              [runs_in_integers](const Graph& g) { return Realizer(g, runs_in_integers).run(); }};
}

}  // namespace tensortune::passes
