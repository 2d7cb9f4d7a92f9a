// The one list of templates, and the defaults of the Template interface.
#include "schedule_space/conv2d_cuda_template.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/conv2d_winograd_template.h"
#include "schedule_space/dense_cuda_template.h"
#include "schedule_space/dense_template.h"
#include "schedule_space/task.h"
#include "schedule_space/template.h"

namespace tensortune::schedule_space {

const std::vector<const Template*>& all_templates() {
  // Explicit, in one place: the order is the order of `--help` texts and error messages.
  static const std::vector<const Template*> templates{
      &conv2d_nchwc_template(),
      &conv2d_winograd_template(),
      &dense_pack_template(),
      &dense_nopack_template(),
      &conv2d_nchw_cuda_template(),
      &conv2d_nchwc_cuda_template(),
      &dense_small_batch_gpu_template(),
      &dense_large_batch_gpu_template(),
  };
  return templates;
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

OperatorKind operator_kind(const Workload& w) {
  return std::holds_alternative<Conv2dWorkload>(w) ? OperatorKind::kConv2d : OperatorKind::kDense;
}

const char* operator_kind_name(OperatorKind kind) {
  switch (kind) {
    case OperatorKind::kConv2d:
      return "conv2d";
    case OperatorKind::kDense:
      return "dense";
  }
  return "?";
}

Status Template::accepts(const Workload&) const { return ok_status(); }

PackedOperands Template::pack_operands(const KernelSignature&, const Tensor& data,
                                       const Tensor& weight) const {
  return {data, weight};
}

Tensor Template::output_to_plain(const KernelSignature&, const Tensor& out) const { return out; }

Tensor Template::output_from_plain(const KernelSignature&, const Tensor& plain) const {
  return plain;
}

double Template::flop(const Task& task) const { return workload_flop(task.workload); }

double Template::fewest_flop(const Task& task, const ConfigSpace&, const Config&) const {
  return flop(task);
}

}  // namespace tensortune::schedule_space
