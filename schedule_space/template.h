#pragma once
/// \file
/// The contract of a schedule template, and the one list of them.
///
/// A template is everything tensortune knows about one way of computing one operator, from
/// tuning to the compiled network: its config space, its fallback config, the cost-model
/// features of a config, the buffers its kernel reads and writes for a config (layouts and
/// parallel extent), how plain operands are packed into those layouts, which network nodes it
/// serves and in which layout. Every part of the system that used to match a template's name
/// goes through this interface; only the code generator's emitter lives elsewhere
/// (compiler/codegen/<backend>/, which schedule_space must not depend on), registered there
/// under the same name.
///
/// Adding a template: implement Template in one file of schedule_space/ (see
/// conv2d_nchwc_template.cc), add one line to the list in template_registry.cc, and add its
/// emitter to its backend's list (compiler/codegen/llvm/template_emitters.cc, or the CUDA
/// one). Task extraction, the records, graph tuning and network compilation then take it up;
/// nothing else dispatches on template names (tests/schedule_space/template_names_test.cc keeps it
/// so) or includes a template's own header (tests/house/layering_test.py).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/target_kind.h"
#include "schedule_space/workload.h"
#include "support/tensor.h"

namespace tensortune::schedule_space {

struct Target;
struct Task;

/// Which Workload alternative a template computes.
enum class OperatorKind { kConv2d, kDense, kBatchMatmul, kAttention };
OperatorKind operator_kind(const Workload& w);
/// "conv2d", "dense", "batch_matmul", "attention".
const char* operator_kind_name(OperatorKind kind);

/// The buffers of a kernel in its own layouts, and its parallel loop.
///
/// Every generated kernel computes the slice [begin, end) of one fused parallel loop of
/// `parallel_extent` iterations, so a thread pool runs one slice per thread.
struct KernelSignature {
  std::vector<int64_t>
      data_shape;  ///< conv2d_NCHWc: N, IC/x, H, W, x;   dense: M, K; batch_matmul: B, M, K
  std::vector<int64_t>
      weight_shape;  ///< conv2d_NCHWc: OC/y, IC/x, KH, KW, x, y; dense_pack: N/bn, K, bn
  std::vector<int64_t> out_shape;  ///< conv2d_NCHWc: N, OC/y, OH, OW, y; dense: M, N
  int64_t parallel_extent = 1;
  int64_t ic_block = 1, oc_block = 1;  ///< conv2d data and output blocks; dense_pack: oc_block = bn
  /// How the parallel loop walks the output's rows (dense's M, batch matmul's M), where the
  /// template says: iteration (o * row_blocks + r) * row_inner + j computes rows
  /// [r * rows_per_block, (r + 1) * rows_per_block) for every o and j. A sequence shorter than
  /// its bucket then runs only the row blocks its tokens are in. 0: not said.
  int64_t rows_per_block = 0, row_blocks = 0, row_inner = 1;
  friend bool operator==(const KernelSignature&, const KernelSignature&) = default;
};

/// How AutoTVM writes a conv2d task's arguments after (data, kernel, strides, padding,
/// dilation): the x86 templates add the data and kernel layouts ("NCHW", "NCHW") before the
/// output dtype; conv2d_nchw.cuda has only the output dtype.
enum class ConvArgsLayout { kWithLayouts, kNoLayouts };

/// How a network lays out a node that this template runs: plain (NCHW data, OIHW weights, or a
/// dense's (M, K) and (N, K)) or blocked (NCHW[x]c data and output, OIHW[x]i[y]o weights, with
/// the blocks of KernelSignature::ic_block and oc_block).
enum class NetworkLayout { kPlain, kBlocked };

/// Data and weight in a kernel's layouts.
struct PackedOperands {
  Tensor data, weight;
};

/// The algorithm of the templates every node can fall back to.
inline constexpr std::string_view kDirectAlgorithm = "direct";

class Template {
 public:
  virtual ~Template() = default;

  /// AutoTVM's task name ("conv2d_NCHWc.x86"): the key of records and logs.
  virtual std::string_view name() const = 0;
  /// The name without its target suffix ("conv2d_NCHWc"): what `--op` and tables show.
  std::string_view op_name() const {
    const std::string_view n = name();
    return n.substr(0, n.rfind('.'));
  }
  /// Other names `--op` accepts for it ("conv2d"), besides name() and op_name().
  virtual std::vector<std::string_view> aliases() const { return {}; }
  /// The code generator that builds its kernels, and the kind of target its tasks have
  /// ("llvm" or "cuda"; AutoTVM's target kinds).
  virtual std::string_view backend() const { return "llvm"; }
  /// The kind of backend(): where its kernels run, its targets' strings and device keys.
  const TargetKind& target_kind() const;
  virtual OperatorKind operator_kind() const = 0;
  /// OK when the template can compute the workload (of its operator kind; validated).
  /// Templates that serve only some shapes (Winograd: 3x3, stride 1) refuse the rest here,
  /// naming what disqualifies them, so that no task for them exists. Default: every dense
  /// workload and every ungrouped (groups = 1) convolution.
  virtual Status accepts(const Workload& w) const;
  /// OK when its kernels run on the target (of its backend). Templates that need a newer
  /// GPU (the tensor cores' sm_80) refuse older ones here, naming the target. Default: every
  /// target of its backend.
  virtual Status accepts_target(const Target& target) const;
  /// The element types it computes; make_task and templates_for pair it only with workloads of
  /// the same precision.
  virtual Precision precision() const { return Precision::kFloat32; }
  /// Whether it computes workloads of precision `p` (a tensor-core template takes several).
  /// Default: precision() only.
  virtual bool computes(Precision p) const { return p == precision(); }
  /// The shape of its workload in AutoTVM's logs (conv2d templates only).
  virtual ConvArgsLayout autotvm_conv_args() const { return ConvArgsLayout::kWithLayouts; }
  /// An entity as an AutoTVM log wrote it, in this template's knob names (before
  /// ConfigSpace::config_from_entity). Names and order of knobs changed between AutoTVM
  /// versions; the default keeps the entity as it is.
  virtual Entity entity_from_autotvm(Entity logged) const { return logged; }

  /// The space of the task's workload on the task's target.
  virtual ConfigSpace config_space(const Task& task) const = 0;
  /// The config used when no record exists (AutoTVM's fallback); always valid.
  virtual Config default_config(const Task& task, const ConfigSpace& space) const = 0;

  /// Cost-model features: the same length and names for every config of the template.
  virtual const std::vector<std::string>& feature_names() const = 0;
  virtual std::vector<float> features(const Task& task, const ConfigSpace& space,
                                      const Config& config) const = 0;

  /// The kernel's buffers for a valid config.
  virtual KernelSignature signature(const Task& task, const ConfigSpace& space,
                                    const Config& config) const = 0;
  /// Plain operands (NCHW / OIHW, or (M, K) / (N, K)) into the kernel's layouts. Default: as
  /// they are.
  virtual Tensor pack_data(const KernelSignature& sig, const Tensor& data) const;
  virtual Tensor pack_weight(const KernelSignature& sig, const Tensor& weight) const;
  PackedOperands pack_operands(const KernelSignature& sig, const Tensor& data,
                               const Tensor& weight) const {
    return {pack_data(sig, data), pack_weight(sig, weight)};
  }
  /// The kernel's output to the plain layout and back (the reference check compares in the
  /// kernel's layout). Default: as it is.
  virtual Tensor output_to_plain(const KernelSignature& sig, const Tensor& out) const;
  virtual Tensor output_from_plain(const KernelSignature& sig, const Tensor& plain) const;

  /// Floating-point operations of one run (the workload's, unless the template does more).
  virtual double flop(const Task& task) const;
  /// The fewest floating-point operations any kernel of this config must do: a lower bound,
  /// so that a timing faster than it allows on a device's peak is impossible (the tracker
  /// rejects it). Default: flop(task). Fast algorithms do fewer (Winograd's products).
  virtual double fewest_flop(const Task& task, const ConfigSpace& space,
                             const Config& config) const;

  // In a network. A node runs one of the templates that serve it (same backend and operator,
  // accepts() its workload, its layout, its weights constant where it needs them); which one is
  // the records' choice (compiler/driver/kernel_choice.h).

  /// Whether task extraction gives a network node of this workload a task of this template:
  /// AutoTVM's strategy, which registers some implementations for every node and others only
  /// for some shapes. Default: every workload it accepts.
  virtual bool extracted_for(const Workload& w) const;
  /// The algorithm it computes by (kDirectAlgorithm, "winograd"): `--exclude-algorithm` leaves
  /// out templates by it. Default: kDirectAlgorithm.
  virtual std::string_view algorithm() const { return kDirectAlgorithm; }
  /// The layout of the nodes it runs. Default: kBlocked for conv2d, kPlain for dense.
  virtual NetworkLayout network_layout() const;
  /// true when its kernel reads the weight transformed or packed at compile time (Winograd's
  /// U, dense_pack's blocks): a node whose weight is computed at run time runs another
  /// template. Default: false (the kernel reads the weight in the node's layout).
  virtual bool needs_constant_weight() const { return false; }
  /// Run-time tensors its kernel reads besides data and weight (attention's v, then its mask):
  /// in a network they are the kernel's first operands, before the epilogue's; a tuning kernel
  /// finds them after the weight in its one weight buffer (operand_shapes). Default: none.
  virtual int extra_inputs(const Task&) const { return 0; }
  /// A valid config whose kernel reads and writes these blocks (signature's ic_block and
  /// oc_block), for a node whose layout its neighbours fixed; nothing when it has none.
  /// Default: the first valid config in index order with those blocks.
  virtual std::optional<Config> config_for_blocks(const Task& task, const ConfigSpace& space,
                                                  int64_t ic_block, int64_t oc_block) const;
};

/// Every template, in a stable order (the registry: template_registry.cc).
const std::vector<const Template*>& all_templates();
/// nullptr when no template has that name.
const Template* find_template(std::string_view name);
/// The template of `backend` ("llvm", "cuda") that `--op`-style text names: its name, the name
/// without its suffix, an alias, or the operator ("conv2d", "dense": the backend's first
/// template of it). Op names repeat across backends (conv2d_NCHWc is both a CPU and a GPU
/// template); within one they are unique. nullptr when none matches.
const Template* find_template_by_op(std::string_view op, std::string_view backend);
/// Any backend's template with that name, op name or alias (the first in registry order).
const Template* find_template_by_op(std::string_view op);

/// OK when the template computes the workload's element types (Template::precision); the
/// message names both.
Status precision_matches(const Template& t, const Workload& w);

/// Which algorithms a network may run: `excluded` lists Template::algorithm() values
/// (`--exclude-algorithm`).
struct AlgorithmFilter {
  std::vector<std::string> excluded;
  bool allows(const Template& t) const;
};

/// The algorithms the registered templates implement (Template::algorithm()), each once, in
/// registry order: "direct" first.
std::vector<std::string_view> algorithm_names();
/// A filter excluding `names`; an error naming `field` and the unknown value (with the known
/// ones) when a name is no registered template's algorithm, and when one is the direct
/// algorithm, which every node needs as its fallback.
Expected<AlgorithmFilter> exclude_algorithms(const std::vector<std::string>& names,
                                             std::string_view field);

/// Whether some registered template, of any backend, computes the workload (its precision and
/// its acceptance): what a graph pass asks before it forms a node only a template can run.
bool has_template_for(const Workload& w);

/// The templates, in registry order, that can run a network node of this workload on a target
/// of `backend` ("llvm", "cuda"): same backend and operator kind, the workload accepted, the
/// algorithm allowed. Task extraction keeps those with extracted_for(); the compiler those of
/// the node's layout and, where the weight is computed at run time, without
/// needs_constant_weight(). The first is the node's default (the direct algorithm, registered
/// first).
std::vector<const Template*> templates_for(const Workload& w, std::string_view backend,
                                           const AlgorithmFilter& filter = {});

/// A network's float32 operator at the precision the compile asks for (`--precision tf32`):
/// the workload relabelled where a template of `backend` computes it at `p` (the tensor-core
/// dense and batch matmul), else as it is (a convolution without a tensor-core template stays
/// float32; quantized workloads keep theirs). The one rule compile and task extraction share.
Workload at_precision(const Workload& w, Precision p, std::string_view backend,
                      const AlgorithmFilter& filter = {});

}  // namespace tensortune::schedule_space
