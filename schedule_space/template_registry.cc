// The one list of templates, and the defaults of the Template interface.
#include <algorithm>

#include "schedule_space/attention_cuda_template.h"
#include "schedule_space/attention_template.h"
#include "schedule_space/batch_matmul_cuda_template.h"
#include "schedule_space/batch_matmul_template.h"
#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/conv2d_nchwc_int8_template.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/conv2d_winograd_cuda_template.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/dense_cuda_template.h"
#include "schedule_space/dense_int8_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/depthwise_conv2d_cuda_template.h"
#include "schedule_space/depthwise_conv2d_nchwc_template.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"
#include "schedule_space/tensorcore_gemm_template.h"

namespace tensortune::schedule_space {

const std::vector<const Template*>& all_templates() {
  // Explicit, in one place: the order is the order of `--help` texts and error messages.
  static const std::vector<const Template*> templates{
      &conv2d_nchwc_template(),
      &conv2d_winograd_template(),
      &dense_pack_template(),
      &dense_nopack_template(),
      &depthwise_conv2d_nchwc_template(),
      &conv2d_nchwc_int8_template(),
      &dense_int8_template(),
      &batch_matmul_template(),
      &attention_template(),
      &conv2d_nchw_cuda_template(),
      &conv2d_nchwc_cuda_template(),
      &conv2d_nchw_winograd_cuda_template(),
      &depthwise_conv2d_nchw_cuda_template(),
      &dense_small_batch_gpu_template(),
      &dense_large_batch_gpu_template(),
      &batch_matmul_cuda_template(),
      &attention_cuda_template(),
      &dense_tensorcore_cuda_template(),
      &batch_matmul_tensorcore_cuda_template(),
      &conv2d_nchw_tensorcore_cuda_template(),
  };
  return templates;
}

const TargetKind& Template::target_kind() const {
  const TargetKind* kind = find_target_kind(backend());
  TT_CHECK(kind != nullptr) << name() << "'s backend " << backend() << " is no target kind";
  return *kind;
}

const Template* find_template(std::string_view name) {
  for (const Template* t : all_templates())
    if (t->name() == name) return t;
  return nullptr;
}

const Template* find_template_by_op(std::string_view op, std::string_view backend) {
  for (const Template* t : all_templates()) {
    if (t->backend() != backend) continue;
    if (op == t->name() || op == t->op_name()) return t;
    for (std::string_view alias : t->aliases())
      if (op == alias) return t;
  }
  for (const Template* t : all_templates())
    if (t->backend() == backend && op == operator_kind_name(t->operator_kind())) return t;
  return nullptr;
}

const Template* find_template_by_op(std::string_view op) {
  for (const Template* t : all_templates())
    if (op == t->name() || op == t->op_name()) return t;
  for (const Template* t : all_templates())
    for (std::string_view alias : t->aliases())
      if (op == alias) return t;
  return nullptr;
}

bool AlgorithmFilter::allows(const Template& t) const {
  for (const auto& a : excluded)
    if (t.algorithm() == a) return false;
  return true;
}

std::vector<std::string_view> algorithm_names() {
  std::vector<std::string_view> names;
  for (const Template* t : all_templates())
    if (std::find(names.begin(), names.end(), t->algorithm()) == names.end())
      names.push_back(t->algorithm());
  return names;
}

Expected<AlgorithmFilter> exclude_algorithms(const std::vector<std::string>& names,
                                             std::string_view field) {
  const auto known = algorithm_names();
  AlgorithmFilter filter;
  for (const std::string& name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return invalid_argument(std::string(field) + " = '" + name +
                              "' is no template's algorithm (known: " + list + ")");
    }
    if (name == kDirectAlgorithm)
      return invalid_argument(std::string(field) + " = '" + name +
                              "': every node needs the direct algorithm as its fallback");
    filter.excluded.push_back(name);
  }
  return filter;
}

std::vector<const Template*> templates_for(const Workload& w, std::string_view backend,
                                           const AlgorithmFilter& filter) {
  std::vector<const Template*> out;
  for (const Template* t : all_templates())
    if (t->backend() == backend && t->operator_kind() == operator_kind(w) && filter.allows(*t) &&
        precision_matches(*t, w).has_value() && t->accepts(w))
      out.push_back(t);
  return out;
}

Workload at_precision(const Workload& w, Precision p, std::string_view backend,
                      const AlgorithmFilter& filter) {
  if (!is_reduced_float(p) || precision_of(w) != Precision::kFloat32) return w;
  Workload relabelled = w;
  std::visit([p](auto& x) { x.precision = p; }, relabelled);
  return templates_for(relabelled, backend, filter).empty() ? w : relabelled;
}

bool has_template_for(const Workload& w) {
  for (const Template* t : all_templates())
    if (t->operator_kind() == operator_kind(w) && precision_matches(*t, w).has_value() &&
        t->accepts(w))
      return true;
  return false;
}

OperatorKind operator_kind(const Workload& w) {
  if (std::holds_alternative<Conv2dWorkload>(w)) return OperatorKind::kConv2d;
  if (std::holds_alternative<BatchMatmulWorkload>(w)) return OperatorKind::kBatchMatmul;
  if (std::holds_alternative<AttentionWorkload>(w)) return OperatorKind::kAttention;
  return OperatorKind::kDense;
}

const char* operator_kind_name(OperatorKind kind) {
  switch (kind) {
    case OperatorKind::kConv2d:
      return "conv2d";
    case OperatorKind::kDense:
      return "dense";
    case OperatorKind::kBatchMatmul:
      return "batch_matmul";
    case OperatorKind::kAttention:
      return "attention";
  }
  return "?";
}

Status precision_matches(const Template& t, const Workload& w) {
  const Precision p = precision_of(w);
  // A template of int8 weights computes 7-bit ones too (its kernel may take a faster form).
  if (t.computes(p) || (p == Precision::kUInt8Int7 && t.computes(Precision::kUInt8Int8)))
    return ok_status();
  return invalid_argument("template " + std::string(t.name()) + " computes " +
                          precision_name(t.precision()) + "; the workload is " + precision_name(p) +
                          " (" + describe_workload(w) + ")");
}

Status Template::accepts(const Workload& w) const {
  if (const auto* c = std::get_if<Conv2dWorkload>(&w); c && c->groups != 1)
    return invalid_argument(std::string(name()) +
                            " computes ungrouped convolutions; this one has"
                            " groups = " +
                            std::to_string(c->groups) + " (" + describe_workload(w) + ")");
  return ok_status();
}

Status Template::accepts_target(const Target&) const { return ok_status(); }

Tensor Template::pack_data(const KernelSignature&, const Tensor& data) const { return data; }

Tensor Template::pack_weight(const KernelSignature&, const Tensor& weight) const { return weight; }

Tensor Template::output_to_plain(const KernelSignature&, const Tensor& out) const { return out; }

Tensor Template::output_from_plain(const KernelSignature&, const Tensor& plain) const {
  return plain;
}

double Template::flop(const Task& task) const { return workload_flop(task.workload); }

double Template::fewest_flop(const Task& task, const ConfigSpace&, const Config&) const {
  return flop(task);
}

bool Template::extracted_for(const Workload& w) const { return static_cast<bool>(accepts(w)); }

NetworkLayout Template::network_layout() const {
  return operator_kind() == OperatorKind::kConv2d ? NetworkLayout::kBlocked : NetworkLayout::kPlain;
}

std::optional<Config> Template::config_for_blocks(const Task& task, const ConfigSpace& space,
                                                  int64_t ic_block, int64_t oc_block) const {
  for (int64_t i = 0; i < space.size(); ++i) {
    if (!space.is_valid_index(i)) continue;
    auto config = space.config_at(i);
    if (!config) continue;
    const KernelSignature sig = signature(task, space, *config);
    if (sig.ic_block == ic_block && sig.oc_block == oc_block) return *config;
  }
  return std::nullopt;
}

}  // namespace tensortune::schedule_space
