#include "tuner/task_extraction.h"

#include <map>

#include "compiler/graph/op_attrs.h"
#include "compiler/passes/fusion_rules.h"
#include "compiler/passes/passes.h"
#include "schedule_space/template.h"

namespace tensortune::tuner {

namespace ss = schedule_space;
using graph::OpKind;

namespace {

// The NCHW data and OIHW weight shapes of a conv node in either layout.
std::pair<graph::Shape, graph::Shape> nchw_shapes(const graph::Graph& g, const graph::Node& n) {
  graph::Shape x = g.type(n.inputs[0]).shape, w = g.type(n.inputs[1]).shape;
  if (n.op == OpKind::kConv2dNCHWc) {
    x = {x[0], x[1] * x[4], x[2], x[3]};
    w = {w[0] * w[5], w[1] * w[4], w[2], w[3]};
  }
  return {x, w};
}

}  // namespace

Expected<TaskExtraction> extract_tasks(const graph::Graph& model, const ss::Target& target,
                                       const ss::AlgorithmFilter& algorithms, bool integer_kernels,
                                       ss::Precision precision) {
  const std::string backend = ss::target_backend(target);
  graph::Graph g = model;
  if (integer_kernels) {
    auto served = [&](const ss::Workload& w) {
      return !ss::templates_for(w, backend, algorithms).empty();
    };
    TT_ASSIGN_OR_RETURN(g, passes::run_pass(passes::fake_quantization_to_integer(served), g, {}));
  }
  // The passes that form anchors, as compilation runs them: a MatMul by a weight that an
  // exporter transposes or reshapes at run time is a dense only after FoldConstant and
  // DenseFromMatMul; on the host, PadGemmShapes pads awkward GEMM shapes (not on a GPU, whose
  // compilation leaves it out).
  std::vector<passes::Pass> forming = {passes::simplify_inference(), passes::fold_pad(),
                                       passes::fold_constant(), passes::dense_from_matmul()};
  for (const passes::Pass& p : forming) {
    TT_ASSIGN_OR_RETURN(g, passes::run_pass(p, g, {}));
  }
  // Attention fused (FuseAttention, which compilation runs before PadGemmShapes) is a task of
  // its own beside the two batch matmuls it replaces: with records of both, compilation runs the
  // faster (driver/kernel_choice.h's attention_fused).
  auto serves = [&](const ss::Workload& w) {
    const auto templates = ss::templates_for(w, backend, algorithms);
    if (templates.empty()) return false;
    // A config must fit the target's registers (values too wide for any output tile do not).
    return ss::has_valid_config(*templates.front(), w, target);
  };
  TT_ASSIGN_OR_RETURN(const graph::Graph fused,
                      passes::run_pass(passes::fuse_attention(serves), g, {}));
  const ss::TargetKind* kind = ss::find_target_kind(backend);
  if (kind && !kind->runs_on_gpu()) {
    TT_ASSIGN_OR_RETURN(g, passes::run_pass(passes::pad_gemm_shapes(), g, {}));
  }
  TaskExtraction out;
  std::map<std::string, size_t> index;
  auto add = [&](const ss::Task& task, const std::string& node) {
    const std::string key = ss::workload_key(task);
    auto [it, inserted] = index.emplace(key, out.tasks.size());
    if (inserted) out.tasks.push_back(ExtractedTask{task, key, {}});
    out.tasks[it->second].nodes.push_back(node);
  };
  std::vector<std::pair<const graph::Graph*, const graph::Node*>> nodes;
  for (const auto& n : g.nodes()) nodes.emplace_back(&g, &n);
  for (const auto& n : fused.nodes())
    if (n.op == OpKind::kAttention) nodes.emplace_back(&fused, &n);
  for (const auto& [owner, node] : nodes) {
    const graph::Graph& g = *owner;  // the attention nodes' graph, or the unfused one
    const graph::Node& n = *node;
    ss::Workload workload;
    if (n.op == OpKind::kConv2d || n.op == OpKind::kConv2dNCHWc || n.op == OpKind::kConv2dInteger) {
      const auto attrs = graph::attrs_as<graph::Conv2dAttrs>(n.attrs);
      const auto [x, w] = nchw_shapes(g, n);
      auto conv = ss::conv2d_workload(x, w, attrs.strides, attrs.pads, attrs.dilations);
      if (!conv) return conv.error().with_context("node '" + n.name + "'");
      // Integer convolutions (FakeQuantizationToInteger's) are the int8 templates' tasks.
      const graph::DType xd = g.type(n.inputs[0]).dtype, wd = g.type(n.inputs[1]).dtype;
      if (!graph::is_float(xd)) {
        if (xd != graph::DType::kUInt8 || wd != graph::DType::kInt8) continue;
        conv->precision = passes::integer_precision(g, n.inputs[1]);
      }
      workload = *conv;
    } else if (n.op == OpKind::kDense) {
      auto dense = ss::dense_workload(g.type(n.inputs[0]).shape, g.type(n.inputs[1]).shape);
      if (!dense) return dense.error().with_context("node '" + n.name + "'");
      const graph::DType xd = g.type(n.inputs[0]).dtype, wd = g.type(n.inputs[1]).dtype;
      if (!graph::is_float(xd)) {
        if (xd != graph::DType::kUInt8 || wd != graph::DType::kInt8) continue;
        dense->precision = passes::integer_precision(g, n.inputs[1]);
      }
      workload = *dense;
    } else if (auto batch_matmul = passes::batch_matmul_anchor(g, n)) {
      workload = *batch_matmul;
    } else if (auto attention = passes::attention_anchor(g, n)) {
      workload = *attention;
    } else {
      continue;
    }
    workload = ss::at_precision(workload, precision, backend, algorithms);
    // Compilation fuses attention only where a template computes it at the precision asked
    // for; elsewhere its batch matmuls are the tasks.
    if (n.op == OpKind::kAttention && ss::precision_of(workload) != precision) continue;
    // A task per template that serves the node (e.g. direct and Winograd for a 3x3 stride-1
    // conv): tuning measures each, and compilation runs the fastest.
    bool any = false;
    for (const ss::Template* t : ss::templates_for(workload, backend, algorithms)) {
      if (!t->extracted_for(workload)) continue;
      auto task = ss::make_task(std::string(t->name()), workload, target);
      if (!task) return task.error().with_context("node '" + n.name + "'");
      add(*task, n.name);
      any = true;
    }
    if (!any)
      out.untunable.push_back(n.name + ": " + ss::describe_workload(workload) +
                              ", no template of " + backend + " serves it");
  }
  return out;
}

}  // namespace tensortune::tuner
