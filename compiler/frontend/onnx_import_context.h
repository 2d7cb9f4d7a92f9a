#pragma once
/// \file
/// Internal to the ONNX importer: the state shared by the per-operator converters (the graph
/// being built, ONNX names to values, the opset) and attribute reading.
#include <map>
#include <optional>
#include <string>

#include "compiler/frontend/onnx_proto.h"
#include "compiler/graph/graph.h"
#include "compiler/graph/op_attrs.h"

namespace tensortune::frontend {

class ImportContext {
 public:
  ImportContext(graph::Graph& graph, int64_t opset) : graph_(graph), opset_(opset) {}

  graph::Graph& graph() { return graph_; }
  int64_t opset() const { return opset_; }

  void bind(const std::string& onnx_name, graph::ValueId id) { names_[onnx_name] = id; }
  std::optional<graph::ValueId> find(const std::string& onnx_name) const;

  /// float16, bfloat16 and float64 values are computed in float32 (see in_compute_dtype); the
  /// dtype ONNX gave such a value is noted here, for CastLike.
  void note_storage_dtype(const std::string& onnx_name, graph::DType dtype) {
    storage_dtypes_[onnx_name] = dtype;
  }
  /// The noted dtype of a value, else its graph dtype.
  graph::DType storage_dtype(const std::string& onnx_name, graph::ValueId id) const;

  /// For an integer value the importer computed from a float one holding the same integers
  /// (QuantizeLinear's saturated result before its cast), that float value: DequantizeLinear
  /// reads it instead of casting back, so that a QDQ pair stays float arithmetic that fuses.
  void note_float_twin(graph::ValueId integer, graph::ValueId as_float) {
    float_twins_[integer] = as_float;
  }
  std::optional<graph::ValueId> float_twin(graph::ValueId integer) const {
    auto it = float_twins_.find(integer);
    if (it == float_twins_.end()) return std::nullopt;
    return it->second;
  }

  /// True when input i is present and not the empty name ONNX uses for "omitted".
  bool has_input(const onnx::NodeProto& node, int i) const;
  /// Input i, or an error naming the node and the missing input.
  Expected<graph::ValueId> input(const onnx::NodeProto& node, int i) const;
  /// Input i's value when it is a constant (after shape folding), else an error saying that
  /// the operator needs it constant.
  Expected<const graph::Tensor*> constant_input(const onnx::NodeProto& node, int i,
                                                const char* what) const;
  /// Input i as a list of integers (a constant int64 tensor).
  Expected<std::vector<int64_t>> int_list_input(const onnx::NodeProto& node, int i,
                                                const char* what) const;

  /// The value of `id` when it depends on constants only, computed by the interpreter's loops
  /// through its producers (memoised); nothing when a graph input reaches it.
  Expected<std::optional<graph::Tensor>> try_evaluate(graph::ValueId id);

  /// Adds a node; int64 results of constant inputs (shape arithmetic) and shapes of known
  /// shapes are folded to constants on the spot, so that shapes infer downstream.
  Expected<graph::ValueId> emit(graph::OpKind op, const std::string& name,
                                std::vector<graph::ValueId> inputs, graph::Attrs attrs = {});

 private:
  graph::Graph& graph_;
  int64_t opset_;
  std::map<std::string, graph::ValueId> names_;
  std::map<std::string, graph::DType> storage_dtypes_;
  std::map<graph::ValueId, graph::ValueId> float_twins_;
  std::map<graph::ValueId, std::optional<graph::Tensor>> evaluated_;
};

/// A constant as the graph computes it: float16, bfloat16 and float64 tensors become float32
/// (their values already are float32s); others unchanged. The importer keeps every float
/// computation in float32 and converts at the model's edges and at its Casts.
graph::Tensor in_compute_dtype(graph::Tensor tensor);
/// A node converting `x` to `to` as ONNX's Cast does, bound to output 0: to float16 or bfloat16
/// it rounds onto that grid and goes on in float32; to float64 it goes on in float32.
Status emit_cast(ImportContext& c, const onnx::NodeProto& n, graph::ValueId x, graph::DType to);

/// Reads a NodeProto's attributes by name, with defaults.
class NodeAttributes {
 public:
  explicit NodeAttributes(const onnx::NodeProto& node);
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::string get_string(const std::string& name, std::string fallback) const;
  const onnx::AttributeProto* get(const std::string& name) const;

 private:
  std::map<std::string, const onnx::AttributeProto*> map_;
};

/// A node's display name: its ONNX name, or "<op_type>_<index>" when it has none.
std::string node_label(const onnx::NodeProto& node);

/// kUnimplemented: "node 'NAME' (OP): what" (the importer adds the file and the opset).
Error unsupported(const onnx::NodeProto& n, const std::string& what);
/// Binds output 0 to `id`; a node whose other outputs are used is refused.
Status bind(ImportContext& c, const onnx::NodeProto& n, graph::ValueId id);
/// One node of `op` over input 0 (unary) or inputs 0 and 1 (binary), bound to output 0.
Status emit_unary(ImportContext& c, const onnx::NodeProto& n, graph::OpKind op,
                  graph::Attrs attrs = {});
Status emit_binary(ImportContext& c, const onnx::NodeProto& n, graph::OpKind op);
/// The int list of an opset-dependent operand: attribute `name` before opset `since`, input i
/// from it on (`fallback` when absent).
Expected<std::vector<int64_t>> list_operand(ImportContext& c, const onnx::NodeProto& n,
                                            int64_t since, const char* name, int i,
                                            std::vector<int64_t> fallback);

/// strides, pads (top, left, bottom, right) and dilations of a Conv's 2-D window, resolving
/// auto_pad the way DESIGN.md's Padding section states. ONNX's defaults are the IR's.
Expected<graph::Conv2dAttrs> window_attrs(const onnx::NodeProto& n, const graph::Shape& x,
                                          int64_t kh, int64_t kw);

using Converter = Status (*)(ImportContext&, const onnx::NodeProto&);
/// ONNX op_type -> converter (onnx_ops.cc, onnx_math_ops.cc, onnx_shape_ops.cc).
const std::map<std::string, Converter>& onnx_converters();
/// The converters of onnx_math_ops.cc: element-wise math, comparisons, reductions and
/// normalisation.
void add_math_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_shape_ops.cc: padding, resizing, broadcasting, splitting, gathering,
/// transposed convolution and the generators of constants.
void add_shape_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_index_ops.cc: gathers, scatters and TopK.
void add_index_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_pool_ops.cc: MaxPool, AveragePool, GlobalAveragePool in 1-D, 2-D and
/// 3-D.
void add_pool_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_loop_ops.cc: Loop, unrolled.
void add_loop_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_integer_ops.cc: ConvInteger and MatMulInteger.
void add_integer_converters(std::map<std::string, Converter>& table);
/// The converters of onnx_quantize_ops.cc: QuantizeLinear, DequantizeLinear, QLinearConv and
/// QLinearMatMul.
void add_quantize_converters(std::map<std::string, Converter>& table);

}  // namespace tensortune::frontend
