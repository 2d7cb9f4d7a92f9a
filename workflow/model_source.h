#pragma once
/// \file
/// Where a job's model comes from: a zoo name or an ONNX file, input shapes, the opt level and
/// the records it compiles with; loading, optimising and compiling it, its inputs and outputs.
/// The CLI's --model options (cli/option_groups.h) and the Python module fill ModelOptions.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/graph.h"
#include "compiler/graph/sequence_range.h"
#include "compiler/runtime/compiled_network.h"
#include "schedule_space/template.h"
#include "support/error.h"
#include "workflow/image_input.h"

namespace tensortune::workflow {

struct ModelOptions {
  std::string model;
  std::vector<std::string> input_shapes;  ///< NAME=1x3x224x224, or NAME=1x1..512 (a range)
  /// With a range: "half-octaves" (default: powers of two and 1.5x each), "octaves" (powers of
  /// two) or the bucket lengths ("16,64,128,512").
  std::string sequence_buckets;
  int opt_level = 3;
  bool print_after_each = false;
  std::string records;     ///< a record DB or an AutoTVM log: block sizes for AlterOpLayout
  std::string device_key;  ///< records of this device key only (default: this host's)
  bool no_borrow = false;  ///< untuned workloads take the default config, not a borrowed one
  /// Template::algorithm() values (--exclude-algorithm): tasks/tune extract no tasks of those
  /// templates, compile runs none of their kernels.
  std::vector<std::string> excluded_algorithms;
  bool no_int8 = false;  ///< quantized convolutions compute in float32, not with int8 kernels
  /// Attention runs unfused (two batch matmuls around a softmax) where records do not decide.
  bool no_fuse_attention = false;
  std::string target;  ///< compile, run, bench: llvm (default) or cuda[-smXY]
  /// The products' precision of the float dense and batch matmul layers (a CUDA target's
  /// tensor cores): "" or "fp32", "tf32", "fp16", "bf16", "3xtf32" (parse_float_precision).
  std::string precision;
  bool gpu_blocked = false;     ///< compile --gpu-layout nchwc
  frontend::OnnxLimits limits;  ///< --max-model-bytes, --max-onnx-nodes, --max-initializers
};

/// The precision --precision names, for `target_spec` (the flags' own target when empty): a
/// reduced one on a CPU target is refused, naming both.
Expected<schedule_space::Precision> model_precision(const ModelOptions& flags,
                                                    const std::string& target_spec = "");
/// The algorithms the flags leave out (--exclude-algorithm); an error naming an unknown one.
Expected<schedule_space::AlgorithmFilter> algorithm_filter(const ModelOptions& flags);

/// The zoo model or ONNX file named by --model, with --input-shape applied; a range
/// (NAME=1x1..512) is refused, naming the commands that take one.
Expected<graph::Graph> load_model(const ModelOptions& flags);

/// The range of sequence lengths --input-shape gives (NAME=1x1..512; the inputs whose shapes
/// have the same range share the length), or nothing.
Expected<std::optional<graph::SequenceRange>> sequence_range(const ModelOptions& flags);
/// load_model with every ranged axis at `length`.
Expected<graph::Graph> load_model_at_length(const ModelOptions& flags, int64_t length);
/// The range's plan (graph/sequence_range.h): its error names what makes padding inexact.
Expected<graph::SequencePlan> plan_model_range(const ModelOptions& flags);

/// The standard pipeline at --opt-level for the host (prints the IR after every pass with
/// --print-after-each).
Expected<graph::Graph> optimise_model(const graph::Graph& graph, const ModelOptions& flags);

/// Loads the model and compiles it for flags.target with flags' records and opt level:
/// `compile`, and `run`/`bench --model`. `layout_aware` false: each workload's fastest record;
/// `use_graph_best` false: ignore graph-tune's choices. `on_node_kernel` sees every conv2d and
/// dense node's kernel choice.
Expected<runtime::CompiledNetwork> compile_model(const ModelOptions& flags, int threads,
                                                 bool layout_aware = true,
                                                 bool use_graph_best = true,
                                                 driver::NodeKernelObserver on_node_kernel = {});

/// Called after each bucket of a ranged compile (index of count, its length, its network).
using RangedProgress = std::function<void(size_t index, size_t count, int64_t length,
                                          const runtime::CompiledNetwork& network)>;
/// compile_model for a range of sequence lengths: every bucket compiled with its padding
/// masked, into a ranged artifact's bytes (runtime/ranged_artifact.h).
Expected<std::string> compile_ranged_model(const ModelOptions& flags, int threads,
                                           bool layout_aware = true, bool use_graph_best = true,
                                           const RangedProgress& progress = {});

/// The data of `--input NAME=random` and of `bench`: deterministic uniform values for a float
/// input; zeros for an integer one (token ids, indices: zero is valid for every table).
graph::Tensor random_input(const graph::TensorType& type);

/// --input NAME=x.npy, NAME=photo.jpg|png (a float32 NCHW image input: resized and normalised
/// by `images`) or NAME=random (deterministic uniform data of the input's type), checked against
/// the graph's inputs: the error names an unknown input and lists the real ones.
Expected<std::map<std::string, graph::Tensor>> read_inputs(const graph::Graph& graph,
                                                           const std::vector<std::string>& items,
                                                           const ImageNormalization& images = {});

/// Prints one line per output (type, min, max and arg-max) and writes the first paths.size()
/// outputs to those .npy files, in order (a decoder's logits without its cache); more paths than
/// outputs is an error naming both counts.
Status report_outputs(const graph::Graph& graph, const std::vector<graph::Tensor>& outputs,
                      const std::vector<std::string>& paths);

}  // namespace tensortune::workflow
