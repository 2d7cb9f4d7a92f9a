#pragma once
/// \file
/// ONNX files in and out: the importer (its operators are listed in onnx_ops.cc), the exporter
/// (for the zoo, so that other runtimes run the very same model) and TensorProto files (the
/// inputs and outputs of ONNX's own backend tests).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::frontend {

/// What a model file may hold before it is refused unread (a peer or a user controls the
/// file; protobuf itself stops at 2 GiB). The CLI's --max-model-bytes, --max-onnx-nodes and
/// --max-initializers set them; the error names the flag.
struct OnnxLimits {
  int64_t max_model_bytes = int64_t{2} << 30;
  int64_t max_nodes = 1'000'000;
  int64_t max_initializers = 100'000;
};

struct OnnxImportOptions {
  OnnxLimits limits;
  /// Shapes for graph inputs by name: required for every dynamic dimension (dim_param or
  /// unset), and may override a static one.
  std::map<std::string, graph::Shape> input_shapes;
  /// Graph inputs bound to constant values (as TVM's freeze_params): they stop being inputs.
  std::map<std::string, graph::Tensor> frozen_inputs;
};

/// Fails with kInvalidArgument for a file that is not a valid ONNX model (named), with
/// kUnimplemented naming the operator and node, dtype or attribute we do not support, and
/// with kInvalidArgument naming the node whose shapes do not infer or the input that is
/// unknown or left dynamic.
Expected<graph::Graph> import_onnx_file(const std::string& path,
                                        const OnnxImportOptions& options = {});
Expected<graph::Graph> import_onnx_bytes(const std::string& bytes, const std::string& what,
                                         const OnnxImportOptions& options = {});

/// A graph input as the model declares it.
struct OnnxInputInfo {
  std::string name;
  std::optional<graph::DType> dtype;  ///< nothing when we do not hold its dtype
};
/// The graph inputs of a model file that are not initializers, in order.
Expected<std::vector<OnnxInputInfo>> onnx_model_inputs(const std::string& path);

/// One graph input or output as the file declares it.
struct OnnxValueSummary {
  std::string name;
  std::string dtype;  ///< ours ("float32") or ONNX's name ("FLOAT16")
  bool supported_dtype = false;
  std::vector<std::string> dims;  ///< "224", a dim_param ("batch") or "?"
};

/// One operator of the file: how many nodes use it, the first of them, whether we import it.
struct OnnxOpSummary {
  std::string op_type;  ///< "Conv"; another domain's as "com.microsoft::Attention"
  int nodes = 0;
  std::string first_node;
  bool supported = false;
};

/// What an ONNX file holds, read without importing it (`tensortune check-model`).
struct OnnxModelSummary {
  int64_t ir_version = 0;
  std::string producer;  ///< "pytorch 1.13.0"
  int64_t opset = 0;     ///< of the default domain
  std::vector<std::pair<std::string, int64_t>> other_domains;
  std::vector<OnnxValueSummary> inputs, outputs;  ///< inputs: those that are not initializers
  std::vector<OnnxOpSummary> ops;                 ///< in order of first use
  int64_t initializers = 0, parameters = 0;
  std::set<std::string> initializer_dtypes;  ///< ONNX's names
};

/// kNotFound, kOutOfRange (--max-model-bytes) or kInvalidArgument (not a model).
Expected<OnnxModelSummary> summarize_onnx_file(const std::string& path,
                                               const OnnxLimits& limits = {});

/// Writes the graph as an ONNX model (opset 14). Works for graphs before AlterOpLayout; an
/// operator without an ONNX equivalent (conv2d_nchwc, layout_transform, ...) is refused by
/// name.
Status export_onnx(const graph::Graph& graph, const std::string& path);

/// Reads a serialized onnx::TensorProto (the .pb files of ONNX's backend tests).
Expected<graph::Tensor> read_onnx_tensor(const std::string& path);

}  // namespace tensortune::frontend
