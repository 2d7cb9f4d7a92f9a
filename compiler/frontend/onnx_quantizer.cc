#include "compiler/frontend/onnx_quantizer.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "compiler/frontend/onnx_import_context.h"
#include "compiler/frontend/onnx_proto.h"
#include "compiler/graph/interpreter.h"

namespace tensortune::frontend {
namespace {

/// A node whose weight input (1) is a float initializer, and the axis of its output channels.
struct Target {
  int node = 0;
  std::string weight;
  int64_t channel_axis = 0;
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

}  // namespace

Expected<QuantizeReport> quantize_onnx_file(const std::string& in, const std::string& out,
                                            const QuantizeOptions& options) {
  if (options.calibration.empty())
    return invalid_argument("quantizing " + in + " needs at least one calibration sample");
  if (!(options.percentile > 50 && options.percentile <= 100))
    return invalid_argument("--percentile = " + std::to_string(options.percentile) +
                            ": must be above 50 and at most 100");
  std::ifstream file(in, std::ios::binary);
  if (!file) return not_found("cannot open model file " + in);
  std::stringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) return invalid_argument(in + " is not an ONNX model");
  onnx::GraphProto* g = model.mutable_graph();
  const int64_t opset = default_opset(model);
  if (opset < 10)
    return invalid_argument(in + " is at opset " + std::to_string(opset) +
                            ": QuantizeLinear and DequantizeLinear need opset 10 or later");
  QuantizeReport report;
  report.per_channel = options.per_channel && opset >= 13;
  report.weight_max = options.reduce_range ? 64 : 127;

  std::map<std::string, int> initializer;
  for (int i = 0; i < g->initializer_size(); ++i) initializer[g->initializer(i).name()] = i;
  std::vector<Target> targets;
  for (int i = 0; i < g->node_size(); ++i) {
    const onnx::NodeProto& n = g->node(i);
    if (n.op_type() != "Conv" && n.op_type() != "Gemm" && n.op_type() != "MatMul") continue;
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    ++report.candidates;
    const std::string where = "node '" + node_label(n) + "' (" + n.op_type() + ")";
    if (n.input_size() < 2 || !initializer.count(n.input(1))) {
      report.skipped.push_back(where + ": its weight is not an initializer");
      continue;
    }
    if (initializer.count(n.input(0))) {
      report.skipped.push_back(where + ": its data is an initializer");
      continue;
    }
    const onnx::TensorProto& w = g->initializer(initializer[n.input(1)]);
    if (w.data_type() != onnx::TensorProto_DataType_FLOAT) {
      report.skipped.push_back(where + ": its weight is " + onnx_dtype_name(w.data_type()) +
                               ", not float");
      continue;
    }
    int64_t axis = 0;  // Conv: OIHW
    if (n.op_type() == "Gemm") axis = int_attribute(n, "transB", 0) ? 0 : 1;
    if (n.op_type() == "MatMul") axis = w.dims_size() - 1;
    if (w.dims_size() < 2 || (n.op_type() == "MatMul" && w.dims_size() != 2)) {
      report.skipped.push_back(where + ": its weight has rank " + std::to_string(w.dims_size()));
      continue;
    }
    targets.push_back({i, n.input(1), axis});
  }

  // Calibration: the activations the targets read, as extra outputs of a copy of the model.
  std::vector<std::string> activations;
  for (const Target& t : targets) {
    const std::string& a = g->node(t.node).input(0);
    if (std::find(activations.begin(), activations.end(), a) == activations.end())
      activations.push_back(a);
  }
  std::map<std::string, Range> ranges;
  if (!activations.empty()) {
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
        Range& r = ranges[activations[k]];
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
  }

  // The rewrite: Q -> DQ in front of each activation (once per tensor), DQ of an int8 copy of
  // each weight, inserted just before the first node that reads them.
  std::map<int, std::vector<onnx::NodeProto>> before;
  std::map<std::string, std::string> dequantized;  // activation or weight -> its DQ output
  std::set<std::string> replaced_weights;
  for (const Target& t : targets) {
    onnx::NodeProto* n = g->mutable_node(t.node);
    const std::string a = n->input(0);
    if (!dequantized.count(a)) {
      const auto [scale, zp] = activation_parameters(ranges[a]);
      add_initializer(g, graph::Tensor::from_floats({}, {scale}), a + "_scale");
      add_initializer(g, graph::Tensor::from_ints({}, {zp}, graph::DType::kUInt8),
                      a + "_zero_point");
      before[t.node].push_back(make_node("QuantizeLinear", a + "_quantize",
                                         {a, a + "_scale", a + "_zero_point"}, a + "_quantized"));
      before[t.node].push_back(make_node("DequantizeLinear", a + "_dequantize",
                                         {a + "_quantized", a + "_scale", a + "_zero_point"},
                                         a + "_dequantized"));
      dequantized[a] = a + "_dequantized";
    }
    n->set_input(0, dequantized[a]);
    if (!dequantized.count(t.weight)) {
      TT_ASSIGN_OR_RETURN(graph::Tensor w,
                          tensor_from_proto(g->initializer(initializer[t.weight])));
      const graph::Shape& shape = w.shape;
      const int64_t channels = report.per_channel ? shape[static_cast<size_t>(t.channel_axis)] : 1;
      int64_t inner = 1;
      for (size_t d = static_cast<size_t>(t.channel_axis) + 1; d < shape.size(); ++d)
        inner *= shape[d];
      auto channel_of = [&](int64_t i) { return report.per_channel ? i / inner % channels : 0; };
      std::vector<double> largest(static_cast<size_t>(channels), 0.0);
      for (int64_t i = 0; i < w.size(); ++i)
        largest[static_cast<size_t>(channel_of(i))] =
            std::max(largest[static_cast<size_t>(channel_of(i))], std::fabs(double(w.f32[i])));
      std::vector<float> scales(static_cast<size_t>(channels));
      for (size_t c = 0; c < scales.size(); ++c)
        scales[c] = largest[c] > 0 ? static_cast<float>(largest[c] / report.weight_max) : 1.0f;
      std::vector<int64_t> q(static_cast<size_t>(w.size()));
      for (int64_t i = 0; i < w.size(); ++i)
        q[static_cast<size_t>(i)] = static_cast<int64_t>(std::clamp(
            std::nearbyint(double(w.f32[i]) / scales[static_cast<size_t>(channel_of(i))]),
            -double(report.weight_max), double(report.weight_max)));
      const graph::Shape param_shape = report.per_channel ? graph::Shape{channels} : graph::Shape{};
      add_initializer(g, graph::Tensor::from_ints(shape, q, graph::DType::kInt8),
                      t.weight + "_quantized");
      add_initializer(g, graph::Tensor::from_floats(param_shape, scales), t.weight + "_scale");
      add_initializer(g,
                      graph::Tensor::from_ints(param_shape, std::vector<int64_t>(scales.size(), 0),
                                               graph::DType::kInt8),
                      t.weight + "_zero_point");
      onnx::NodeProto dq =
          make_node("DequantizeLinear", t.weight + "_dequantize",
                    {t.weight + "_quantized", t.weight + "_scale", t.weight + "_zero_point"},
                    t.weight + "_dequantized");
      if (report.per_channel) {
        auto* axis = dq.add_attribute();
        axis->set_name("axis");
        axis->set_type(onnx::AttributeProto_AttributeType_INT);
        axis->set_i(t.channel_axis);
      }
      before[t.node].push_back(std::move(dq));
      dequantized[t.weight] = t.weight + "_dequantized";
      replaced_weights.insert(t.weight);
    }
    n->set_input(1, dequantized[t.weight]);
    ++report.quantized;
  }

  // Nodes in order with the new ones in front of their readers; float weights that nothing
  // reads any more leave the file.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g->node_size(); ++i) {
    for (auto& extra : before[i]) *nodes.Add() = std::move(extra);
    *nodes.Add() = g->node(i);
  }
  g->mutable_node()->Swap(&nodes);
  std::set<std::string> read;
  for (const auto& n : g->node())
    for (const auto& i : n.input()) read.insert(i);
  for (const auto& o : g->output()) read.insert(o.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& init : *g->mutable_initializer())
    if (!replaced_weights.count(init.name()) || read.count(init.name()))
      *kept.Add() = std::move(init);
  g->mutable_initializer()->Swap(&kept);
  // Graph inputs that named a removed initializer (IR < 4 models list them) go too.
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (auto& i : *g->mutable_input())
    if (!replaced_weights.count(i.name()) || read.count(i.name())) *inputs.Add() = std::move(i);
  g->mutable_input()->Swap(&inputs);

  std::ofstream sink(out, std::ios::binary);
  if (!sink || !model.SerializeToOstream(&sink) || !sink.flush())
    return invalid_argument("cannot write " + out);
  return report;
}

}  // namespace tensortune::frontend
