#include "compiler/frontend/onnx_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/frontend/onnx_batch_norm_folding.h"
#include "compiler/frontend/onnx_constant_folding.h"
#include "compiler/frontend/onnx_graph_index.h"
#include "compiler/frontend/onnx_import_context.h"
#include "compiler/frontend/onnx_proto.h"
#include "compiler/frontend/qdq_output_plan.h"
#include "compiler/frontend/weight_quantization.h"
#include "compiler/graph/interpreter.h"

namespace tensortune::frontend {
namespace {

constexpr int kFullRange = 127;
constexpr int kReducedRange = 64;

/// A node whose weight input (1) is a float initializer: how its weight's elements map to output
/// channels and input features, and the axis of its activation's features.
struct Target {
  int node = 0;
  std::string weight;
  int64_t channel_axis = 0;  ///< of the weight: its output channels
  int64_t feature_axis = 1;  ///< of the activation; -1: the last
  WeightGeometry geometry;
  /// The bias that takes the mean-error correction: input `bias_input` of node `bias_node`:
  /// Conv's input 2, Gemm's C (divided by beta), or the constant operand of the Add that alone
  /// reads a MatMul; -1 where there is no place for one.
  int bias_node = 0;
  int bias_input = -1;
  double bias_factor = 1;
};

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 1;
}

int64_t int_attribute(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

double float_attribute(const onnx::NodeProto& n, const std::string& name, double fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return fallback;
}

int64_t product(const google::protobuf::RepeatedField<int64_t>& dims, int from) {
  int64_t p = 1;
  for (int d = from; d < dims.size(); ++d) p *= dims[d];
  return p;
}

/// Sums that become FeatureMoments: per feature, the values' sum and square sum, and the count.
struct MomentSums {
  std::vector<double> sum, square;
  double count = 0;

  void add(const graph::Tensor& t, int64_t axis) {
    const int64_t rank = static_cast<int64_t>(t.shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return;
    const int64_t features = t.shape[static_cast<size_t>(axis)];
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= t.shape[static_cast<size_t>(d)];
    if (sum.empty()) sum.assign(static_cast<size_t>(features), 0), square = sum;
    if (sum.size() != static_cast<size_t>(features)) return;
    for (int64_t i = 0; i < t.size(); ++i) {
      const double v = t.at(i);
      const auto f = static_cast<size_t>(i / inner % features);
      sum[f] += v;
      square[f] += v * v;
    }
    count += features > 0 ? double(t.size()) / double(features) : 0;
  }
  FeatureMoments moments() const {
    FeatureMoments m;
    if (count <= 0) return m;
    for (size_t f = 0; f < sum.size(); ++f) {
      m.mean.push_back(sum[f] / count);
      m.mean_square.push_back(square[f] / count);
    }
    return m;
  }
};

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
};

/// uint8 activation parameters of a range that includes 0: scale and zero point.
std::pair<float, uint8_t> activation_parameters(const Range& r) {
  const double lo = std::min(r.lo, 0.0), hi = std::max(r.hi, 0.0);
  const double scale = hi > lo ? (hi - lo) / 255.0 : 1.0;
  const double zp = std::clamp(std::nearbyint(-lo / scale), 0.0, 255.0);
  return {static_cast<float>(scale), static_cast<uint8_t>(zp)};
}

onnx::NodeProto make_node(const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, const std::string& output) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : inputs) n.add_input(i);
  n.add_output(output);
  return n;
}

void add_initializer(onnx::GraphProto* g, const graph::Tensor& t, const std::string& name) {
  tensor_to_proto(t, name, g->add_initializer());
}

Expected<onnx::ModelProto> read_model(const std::string& in) {
  std::ifstream file(in, std::ios::binary);
  if (!file) return not_found("cannot open model file " + in);
  std::stringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) return invalid_argument(in + " is not an ONNX model");
  const int64_t opset = default_opset(model);
  if (opset < 10)
    return invalid_argument(in + " is at opset " + std::to_string(opset) +
                            ": QuantizeLinear and DequantizeLinear need opset 10 or later");
  return model;
}

/// The Conv, Gemm and MatMul nodes whose weights can be quantized; the others are named in
/// report.skipped with the reason.
std::vector<Target> find_targets(const onnx::GraphProto& g, const OnnxGraphIndex& index,
                                 QuantizeReport& report) {
  std::vector<Target> targets;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    if (n.op_type() != "Conv" && n.op_type() != "Gemm" && n.op_type() != "MatMul") continue;
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    ++report.candidates;
    const std::string where = "node '" + node_label(n) + "' (" + n.op_type() + ")";
    const std::string weight = n.input_size() < 2 ? "" : index.initializer_of(n.input(1));
    if (weight.empty()) {
      report.skipped.push_back(where + ": its weight is not an initializer");
      continue;
    }
    if (index.initializer.count(n.input(0))) {
      report.skipped.push_back(where + ": its data is an initializer");
      continue;
    }
    const onnx::TensorProto& w = g.initializer(index.initializer.at(weight));
    if (w.data_type() != onnx::TensorProto_DataType_FLOAT) {
      report.skipped.push_back(where + ": its weight is " + onnx_dtype_name(w.data_type()) +
                               ", not float");
      continue;
    }
    if (w.dims_size() < 2 || (n.op_type() != "Conv" && w.dims_size() != 2)) {
      report.skipped.push_back(where + ": its weight has rank " + std::to_string(w.dims_size()));
      continue;
    }
    Target t;
    t.node = t.bias_node = i;
    t.weight = weight;
    using Form = WeightGeometry::Form;
    if (n.op_type() == "Conv") {
      const int64_t groups = std::max<int64_t>(1, int_attribute(n, "group", 1));
      t.geometry = {Form::kConv, w.dims(0), w.dims(1) * groups, groups, product(w.dims(), 2)};
      if (w.dims(0) % groups != 0) {
        report.skipped.push_back(where + ": its " + std::to_string(w.dims(0)) +
                                 " output channels do not split into " + std::to_string(groups) +
                                 " groups");
        continue;
      }
      t.bias_input = 2;
    } else if (n.op_type() == "Gemm" && int_attribute(n, "transB", 0)) {
      t.geometry = {Form::kOutputsByInputs, w.dims(0), w.dims(1)};
    } else {
      t.geometry = {Form::kInputsByOutputs, w.dims(1), w.dims(0)};
      t.channel_axis = 1;
      t.feature_axis = n.op_type() == "MatMul" ? -1 : 1;
    }
    if (n.op_type() == "Gemm") {
      if (int_attribute(n, "transA", 0)) t.feature_axis = 0;
      t.bias_factor = float_attribute(n, "beta", 1.0);
      t.bias_input = t.bias_factor != 0 ? 2 : -1;
    }
    const auto readers = index.readers.find(n.output(0));
    if (n.op_type() == "MatMul" && readers != index.readers.end() && readers->second.size() == 1 &&
        readers->second[0] >= 0) {
      // MatMul + Add, as exporters write a linear layer: the Add's constant operand.
      const onnx::NodeProto& add = g.node(readers->second[0]);
      if (add.op_type() == "Add" && add.input_size() == 2)
        for (int k = 0; k < 2; ++k)
          if (add.input(1 - k) == n.output(0) && !index.initializer_of(add.input(k)).empty()) {
            t.bias_node = readers->second[0];
            t.bias_input = k;
          }
    }
    targets.push_back(t);
  }
  return targets;
}

/// What the calibration samples say of the activations the targets read: each one's range, and
/// its features' moments per feature axis a target reads it by.
struct Calibration {
  std::map<std::string, Range> ranges;
  std::map<std::pair<std::string, int64_t>, MomentSums> sums;  // (activation, feature axis)
};

/// Runs the samples through a copy of the model whose extra outputs are the activations.
/// `outputs`: values whose range alone is wanted (quantized outputs).
Expected<Calibration> calibrate(const onnx::ModelProto& model, const std::vector<Target>& targets,
                                const std::vector<std::string>& outputs, const std::string& in,
                                const QuantizeOptions& options) {
  const onnx::GraphProto& g = model.graph();
  std::vector<std::string> activations;
  auto want = [&](const std::string& a) {
    if (std::find(activations.begin(), activations.end(), a) == activations.end())
      activations.push_back(a);
  };
  for (const Target& t : targets) want(g.node(t.node).input(0));
  for (const std::string& v : outputs) want(v);
  Calibration c;
  std::map<std::string, std::set<int64_t>> feature_axes;
  for (const Target& t : targets) feature_axes[g.node(t.node).input(0)].insert(t.feature_axis);
  if (activations.empty()) return c;
  onnx::ModelProto probe = model;
  const int original_outputs = probe.graph().output_size();
  for (const std::string& a : activations) probe.mutable_graph()->add_output()->set_name(a);
  TT_ASSIGN_OR_RETURN(graph::Graph imported,
                      import_onnx_bytes(probe.SerializeAsString(), in, options.import));
  for (size_t s = 0; s < options.calibration.size(); ++s) {
    auto outputs = graph::interpret(imported, options.calibration[s]);
    if (!outputs)
      return outputs.error().with_context("calibration sample " + std::to_string(s + 1));
    for (size_t k = 0; k < activations.size(); ++k) {
      const graph::Tensor& t = (*outputs)[static_cast<size_t>(original_outputs) + k];
      for (int64_t axis : feature_axes[activations[k]]) c.sums[{activations[k], axis}].add(t, axis);
      Range& r = c.ranges[activations[k]];
      if (options.percentile >= 100) {
        for (int64_t i = 0; i < t.size(); ++i) {
          r.lo = std::min(r.lo, t.at(i));
          r.hi = std::max(r.hi, t.at(i));
        }
        continue;
      }
      std::vector<double> v(static_cast<size_t>(t.size()));
      for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = t.at(i);
      if (v.empty()) continue;
      const auto at = [&](double q) {
        const auto k = static_cast<size_t>(std::llround(q / 100 * double(v.size() - 1)));
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
        return v[k];
      };
      const double n = double(options.calibration.size());
      if (s == 0) r.lo = r.hi = 0;
      r.lo += at(100 - options.percentile) / n;
      r.hi += at(options.percentile) / n;
    }
  }
  return c;
}

/// The nodes of the rewrite to insert before node i, and what the rewrite replaced.
struct Rewrite {
  std::map<int, std::vector<onnx::NodeProto>> before;
  std::map<std::string, std::string> dequantized;  ///< activation or weight -> its DQ output
  std::set<std::string> replaced;  ///< initializers that leave the file if nothing reads them
  std::map<std::string, int> weight_max_of;
};

/// Nodes in order with the new ones in front of their readers; float weights that nothing reads
/// any more leave the file, with the Identity nodes that only passed them on, and graph inputs
/// that named them (IR < 4 models list them).
void splice_and_prune(onnx::GraphProto* g, Rewrite& rewrite) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g->node_size(); ++i) {
    for (auto& extra : rewrite.before[i]) *nodes.Add() = std::move(extra);
    *nodes.Add() = g->node(i);
  }
  g->mutable_node()->Swap(&nodes);
  const std::set<std::string>& replaced = rewrite.replaced;
  std::set<std::string> forwards_replaced;  // outputs of Identity chains from a replaced weight
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& n : g->node())
      if (n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
          (replaced.count(n.input(0)) || forwards_replaced.count(n.input(0))))
        grew |= forwards_replaced.insert(n.output(0)).second;
  }
  std::set<std::string> read;
  for (bool dropped = true; dropped;) {
    read.clear();
    for (const auto& n : g->node())
      for (const auto& i : n.input()) read.insert(i);
    for (const auto& o : g->output()) read.insert(o.name());
    google::protobuf::RepeatedPtrField<onnx::NodeProto> live;
    dropped = false;
    for (auto& n : *g->mutable_node()) {
      if (n.op_type() == "Identity" && n.output_size() == 1 && !read.count(n.output(0)) &&
          forwards_replaced.count(n.output(0)))
        dropped = true;
      else
        *live.Add() = std::move(n);
    }
    g->mutable_node()->Swap(&live);
  }
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& init : *g->mutable_initializer())
    if (!replaced.count(init.name()) || read.count(init.name())) *kept.Add() = std::move(init);
  g->mutable_initializer()->Swap(&kept);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (auto& i : *g->mutable_input())
    if (!replaced.count(i.name()) || read.count(i.name())) *inputs.Add() = std::move(i);
  g->mutable_input()->Swap(&inputs);
}

/// Quantize -> dequantize of a value where it is computed (in front of its first reader); every
/// reader reads the dequantized value, a layer's activation input through rewrite_target, which
/// finds the pair made.
void quantize_value(onnx::GraphProto* g, const std::string& v, const OnnxGraphIndex& index,
                    const std::set<int>& layer_nodes, Calibration& calibration, Rewrite& rewrite) {
  const auto [scale, zp] = activation_parameters(calibration.ranges[v]);
  add_initializer(g, graph::Tensor::from_floats({}, {scale}), v + "_scale");
  add_initializer(g, graph::Tensor::from_ints({}, {zp}, graph::DType::kUInt8), v + "_zero_point");
  const std::vector<int>& readers = index.readers_of(v);
  const int first = *std::min_element(readers.begin(), readers.end());
  rewrite.before[first].push_back(make_node(
      "QuantizeLinear", v + "_quantize", {v, v + "_scale", v + "_zero_point"}, v + "_quantized"));
  rewrite.before[first].push_back(make_node("DequantizeLinear", v + "_dequantize",
                                            {v + "_quantized", v + "_scale", v + "_zero_point"},
                                            v + "_dequantized"));
  rewrite.dequantized[v] = v + "_dequantized";
  for (int r : readers) {
    onnx::NodeProto* n = g->mutable_node(r);
    for (int k = layer_nodes.count(r) ? 1 : 0; k < n->input_size(); ++k)
      if (n->input(k) == v) n->set_input(k, v + "_dequantized");
  }
}

/// The target's weight in int8: [-127, 127], or [-64, 64] where options.reduce_range asks (where
/// quiet: only if the layer's output noise grows by at most options.noise_growth; the others are
/// named in report.kept_full_range). Returns the values and the range's bound.
std::pair<QuantizedWeight, int> quantize_in_range(const graph::Tensor& w, const Target& t,
                                                  const onnx::NodeProto& n, double activation_scale,
                                                  const FeatureMoments& moments, bool measured,
                                                  bool correct_bias, const QuantizeOptions& options,
                                                  QuantizeReport& report) {
  const bool per_channel = report.per_channel;
  QuantizedWeight full_range = quantize_weight(w.f32, t.geometry, per_channel, kFullRange);
  if (options.reduce_range == ReduceRange::kAll)
    return {quantize_weight(w.f32, t.geometry, per_channel, kReducedRange), kReducedRange};
  if (options.reduce_range != ReduceRange::kWhereQuiet || !measured)
    return {std::move(full_range), kFullRange};
  QuantizedWeight reduced = quantize_weight(w.f32, t.geometry, per_channel, kReducedRange);
  const LayerNoise full =
      layer_noise(w.f32, t.geometry, full_range, activation_scale, moments, correct_bias);
  const LayerNoise narrow =
      layer_noise(w.f32, t.geometry, reduced, activation_scale, moments, correct_bias);
  const double growth = std::sqrt((narrow.activation + narrow.weight) /
                                  std::max(full.activation + full.weight, 1e-300));
  if (growth <= options.noise_growth) return {std::move(reduced), kReducedRange};
  char growth_text[32];
  std::snprintf(growth_text, sizeof growth_text, "%.1f%%", (growth - 1) * 100);
  report.kept_full_range.push_back("node '" + node_label(n) + "' (" + n.op_type() +
                                   "): [-64, 64] would grow its output noise by " + growth_text);
  return {std::move(full_range), kFullRange};
}

/// The int8 copy of the target's weight, its scales and zero points as initializers, and the
/// DequantizeLinear node that reads them (per output channel where `per_channel`).
onnx::NodeProto dequantized_weight(onnx::GraphProto* g, const Target& t, const graph::Shape& shape,
                                   const QuantizedWeight& q, bool per_channel) {
  const int64_t channels = per_channel ? t.geometry.out_channels : 1;
  const graph::Shape param_shape = per_channel ? graph::Shape{channels} : graph::Shape{};
  add_initializer(g, graph::Tensor::from_ints(shape, q.values, graph::DType::kInt8),
                  t.weight + "_quantized");
  add_initializer(g, graph::Tensor::from_floats(param_shape, q.scales), t.weight + "_scale");
  add_initializer(g,
                  graph::Tensor::from_ints(param_shape, std::vector<int64_t>(q.scales.size(), 0),
                                           graph::DType::kInt8),
                  t.weight + "_zero_point");
  onnx::NodeProto dq =
      make_node("DequantizeLinear", t.weight + "_dequantize",
                {t.weight + "_quantized", t.weight + "_scale", t.weight + "_zero_point"},
                t.weight + "_dequantized");
  if (per_channel) {
    auto* axis = dq.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto_AttributeType_INT);
    axis->set_i(t.channel_axis);
  }
  return dq;
}

/// One target rewritten: its activation quantized and dequantized (once per tensor), an int8
/// copy of its weight dequantized (once per weight; [-64, 64] where options.reduce_range says),
/// its bias corrected for the weight's mean rounding error where options.bias_correction says.
Status rewrite_target(onnx::GraphProto* g, const Target& t, const OnnxGraphIndex& index,
                      Calibration& calibration, const QuantizeOptions& options,
                      QuantizeReport& report, Rewrite& rewrite) {
  auto& ranges = calibration.ranges;
  auto& sums = calibration.sums;
  const auto& initializer = index.initializer;
  auto initializer_of = [&](const std::string& v) { return index.initializer_of(v); };
  auto& before = rewrite.before;
  auto& dequantized = rewrite.dequantized;
  auto& replaced_weights = rewrite.replaced;
  auto& weight_max_of = rewrite.weight_max_of;
  onnx::NodeProto* n = g->mutable_node(t.node);
  const std::string a = n->input(0);
  if (!dequantized.count(a)) {
    const auto [scale, zp] = activation_parameters(ranges[a]);
    add_initializer(g, graph::Tensor::from_floats({}, {scale}), a + "_scale");
    add_initializer(g, graph::Tensor::from_ints({}, {zp}, graph::DType::kUInt8), a + "_zero_point");
    before[t.node].push_back(make_node("QuantizeLinear", a + "_quantize",
                                       {a, a + "_scale", a + "_zero_point"}, a + "_quantized"));
    before[t.node].push_back(make_node("DequantizeLinear", a + "_dequantize",
                                       {a + "_quantized", a + "_scale", a + "_zero_point"},
                                       a + "_dequantized"));
    dequantized[a] = a + "_dequantized";
  }
  n->set_input(0, dequantized[a]);
  const FeatureMoments moments = sums[{a, t.feature_axis}].moments();
  // The bias that takes the correction: none yet, or a float initializer of one value per
  // output channel; any other bias (computed, broadcast) is left as it is.
  std::optional<graph::Tensor> bias;
  onnx::NodeProto* bias_node = g->mutable_node(t.bias_node);
  const bool has_bias = t.bias_input >= 0 && bias_node->input_size() > t.bias_input &&
                        !bias_node->input(t.bias_input).empty();
  const std::string bias_name = has_bias ? initializer_of(bias_node->input(t.bias_input)) : "";
  if (!bias_name.empty()) {
    auto read = tensor_from_proto(g->initializer(initializer.at(bias_name)));
    if (read && read->dtype == graph::DType::kFloat32 && read->size() == t.geometry.out_channels)
      bias = std::move(*read);
  }
  const bool measured = moments.mean.size() == static_cast<size_t>(t.geometry.inputs);
  const bool correct_bias =
      options.bias_correction && t.bias_input >= 0 && measured && (bias || !has_bias);
  std::optional<graph::Tensor> w;
  if (!dequantized.count(t.weight) || correct_bias) {
    TT_ASSIGN_OR_RETURN(w, tensor_from_proto(g->initializer(initializer.at(t.weight))));
  }
  std::optional<QuantizedWeight> written;  // this weight's int8 copy, when this node wrote it
  if (!dequantized.count(t.weight)) {
    const double activation_scale = activation_parameters(ranges[a]).first;
    auto [q, weight_max] = quantize_in_range(*w, t, *n, activation_scale, moments, measured,
                                             correct_bias, options, report);
    (weight_max == kReducedRange ? report.reduced : report.full) += 1;
    weight_max_of[t.weight] = weight_max;
    before[t.node].push_back(dequantized_weight(g, t, w->shape, q, report.per_channel));
    dequantized[t.weight] = t.weight + "_dequantized";
    replaced_weights.insert(t.weight);
    written = std::move(q);
  }
  if (correct_bias) {
    // The node's own bias (an initializer may be shared): old bias - mean error / beta. A
    // weight that an earlier node wrote is quantized again, as it was (same range).
    const QuantizedWeight q =
        written ? std::move(*written)
                : quantize_weight(w->f32, t.geometry, report.per_channel, weight_max_of[t.weight]);
    const std::vector<double> error = mean_output_error(w->f32, t.geometry, q, moments);
    std::vector<float> corrected(error.size());
    for (size_t c = 0; c < error.size(); ++c)
      corrected[c] =
          static_cast<float>((bias ? double(bias->f32[c]) : 0.0) - error[c] / t.bias_factor);
    const std::string name = bias_node->output(0) + "_corrected_bias";
    add_initializer(g, graph::Tensor::from_floats({t.geometry.out_channels}, corrected), name);
    if (!bias_name.empty()) replaced_weights.insert(bias_name);
    while (bias_node->input_size() <= t.bias_input) bias_node->add_input("");
    bias_node->set_input(t.bias_input, name);
    ++report.bias_corrected;
  }
  n->set_input(1, dequantized[t.weight]);
  ++report.quantized;
  return ok_status();
}

}  // namespace

Expected<QuantizeReport> quantize_onnx_file(const std::string& in, const std::string& out,
                                            const QuantizeOptions& options) {
  if (options.calibration.empty())
    return invalid_argument("quantizing " + in + " needs at least one calibration sample");
  if (!(options.percentile > 50 && options.percentile <= 100))
    return invalid_argument("--percentile = " + std::to_string(options.percentile) +
                            ": must be above 50 and at most 100");
  TT_ASSIGN_OR_RETURN(onnx::ModelProto model, read_model(in));
  onnx::GraphProto* g = model.mutable_graph();
  QuantizeReport report;
  // Weights written as Constant nodes (and casts, reshapes, transposes of them) are weights.
  auto folded = fold_constant_weights(g, default_opset(model));
  if (!folded) return folded.error().with_context(in);
  report.folded = *folded;
  // Batch norms after convolutions fold into their weights first, as runtimes fold them: after
  // quantization the weights are no initializers to fold into.
  auto batch_norms = fold_batch_norms(g);
  if (!batch_norms) return batch_norms.error().with_context(in);
  report.batch_norms_folded = *batch_norms;
  report.per_channel = options.per_channel && default_opset(model) >= 13;
  const OnnxGraphIndex index(*g);
  const std::vector<Target> targets = find_targets(*g, index, report);
  QuantizedOutputPlan outputs;
  std::set<int> layer_nodes;
  if (options.quantize_outputs) {
    std::map<int, int> layers;  // node -> the node computing its result (a MatMul's bias Add)
    for (const Target& t : targets) {
      layers[t.node] = g->node(t.bias_node).op_type() == "Add" ? t.bias_node : t.node;
      layer_nodes.insert(t.node);
    }
    outputs = plan_quantized_outputs(index, layers);
  }
  std::vector<std::string> measured_outputs;
  for (const std::string& v : outputs.values)
    if (!outputs.same_as.count(v)) measured_outputs.push_back(v);
  TT_ASSIGN_OR_RETURN(Calibration calibration,
                      calibrate(model, targets, measured_outputs, in, options));
  for (const auto& [value, source] : outputs.same_as)
    calibration.ranges[value] = calibration.ranges[source];
  // The rewrite: Q -> DQ in front of each activation (once per tensor) and after each quantized
  // output, DQ of an int8 copy of each weight, inserted just before the first node that reads
  // them.
  Rewrite rewrite;
  for (const std::string& v : outputs.values)
    quantize_value(g, v, index, layer_nodes, calibration, rewrite);
  report.outputs_quantized = static_cast<int>(outputs.values.size());
  for (const Target& t : targets)
    TT_RETURN_IF_ERROR(rewrite_target(g, t, index, calibration, options, report, rewrite));
  splice_and_prune(g, rewrite);
  if (report.quantized == 0 && !options.allow_none) {
    // A "quantized" model that is the float one is a mistake to say, not a file to write.
    std::string why;
    for (size_t i = 0; i < report.skipped.size() && i < 3; ++i)
      why += (why.empty() ? "" : "; ") + report.skipped[i];
    if (report.skipped.size() > 3)
      why += "; and " + std::to_string(report.skipped.size() - 3) + " more";
    return invalid_argument(in + ": quantized none of its " + std::to_string(report.candidates) +
                            " Conv, Gemm and MatMul nodes" + (why.empty() ? "" : " (" + why + ")") +
                            "; nothing written (--allow-none writes the model even so)");
  }

  report.weight_max = report.full > 0 || report.reduced == 0 ? kFullRange : kReducedRange;
  std::ofstream sink(out, std::ios::binary);
  if (!sink || !model.SerializeToOstream(&sink) || !sink.flush())
    return invalid_argument("cannot write " + out);
  return report;
}

}  // namespace tensortune::frontend
