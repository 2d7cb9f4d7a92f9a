#include "workflow/op_task.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "compiler/codegen/llvm/kernel.h"
#include "schedule_space/gpu_limits.h"

namespace tensortune::workflow {

namespace ss = schedule_space;

namespace {

Expected<std::vector<int64_t>> parse_separated(const std::string& text, char sep,
                                               const std::string& field) {
  std::vector<int64_t> out;
  if (text.empty()) return invalid_argument(field + " is empty");
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return invalid_argument(field + " = '" + text + "': '" + item + "' is not an integer");
    }
  }
  if (!text.empty() && text.back() == sep)
    return invalid_argument(field + " = '" + text + "' ends with '" + sep + "'");
  return out;
}

}  // namespace

Expected<std::vector<int64_t>> parse_shape(const std::string& text, const std::string& field) {
  TT_ASSIGN_OR_RETURN(auto dims, parse_separated(text, 'x', field));
  for (int64_t d : dims)
    if (d <= 0)
      return invalid_argument(field + " = '" + text + "': dimension " + std::to_string(d) +
                              " must be > 0");
  return dims;
}

Expected<std::vector<int64_t>> parse_int_list(const std::string& text, const std::string& field) {
  return parse_separated(text, ',', field);
}

Expected<ss::Target> op_target(const std::string& target) {
  TT_ASSIGN_OR_RETURN(const ss::TargetFlag flag, ss::parse_target_flag(target));
  // The host's own target: its -mcpu and vector lanes, read off this CPU.
  if (flag.kind->device_class() == ss::DeviceClass::kHostCpu) return codegen::host_target();
  return ss::Target{flag.spec, 1};
}

std::string device_key_for(const ss::Target& target) {
  if (auto kind = ss::target_kind_of_spec(target.spec))
    if (auto key = (*kind)->device_key(target)) return *key;
  return codegen::host_device_key();
}

Expected<std::string> template_for_op(const std::string& op, const ss::Target& target) {
  const std::string backend = ss::target_backend(target);
  if (const ss::Template* t = ss::find_template_by_op(op, backend)) return std::string(t->name());
  if (const ss::Template* other = ss::find_template_by_op(op))
    return invalid_argument("--op = '" + op + "' is a " + std::string(other->backend()) +
                            " template; it needs --target " + std::string(other->backend()));
  return invalid_argument("--op = '" + op + "' is not one of " + op_names());
}

std::string op_names() {
  std::string names;
  for (const ss::Template* t : ss::all_templates()) {
    names += (names.empty() ? "" : ", ") + std::string(t->op_name());
    for (std::string_view alias : t->aliases()) names += " (or " + std::string(alias) + ")";
    if (t->target_kind().device_class() != ss::DeviceClass::kHostCpu)
      names += " (--target " + std::string(t->backend()) + ")";
  }
  return names;
}

bool takes_conv2d_shapes(const std::string& template_name) {
  const ss::Template* t = ss::find_template(template_name);
  return t && t->operator_kind() == ss::OperatorKind::kConv2d;
}

namespace {

/// `--op conv2d` (or dense) names the operator: the first template of the backend that computes
/// this workload (a depthwise kernel shape picks the depthwise template). A template named by
/// its name or its own alias stays, and make_task says why it refuses the workload.
std::string serving_template(const std::string& op, const std::string& tmpl,
                             const ss::Workload& w) {
  const ss::Template* t = ss::find_template(tmpl);
  if (!t || (t->accepts(w) && t->computes(ss::precision_of(w))) ||
      op != ss::operator_kind_name(t->operator_kind()))
    return tmpl;
  const auto serving = ss::templates_for(w, t->backend());
  return serving.empty() ? tmpl : std::string(serving.front()->name());
}

// q (B, M, K) by k^T (B, K, N), then --value-dim, --mask and --scale.
Expected<ss::AttentionWorkload> attention_workload(const OpArgs& args,
                                                   const std::vector<int64_t>& q,
                                                   const std::vector<int64_t>& k) {
  auto shape = [](const std::vector<int64_t>& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  };
  if (q.size() != 3 || k.size() != 3 || q[0] != k[0] || q[2] != k[1])
    return invalid_argument("--data " + shape(q) + " and --weight " + shape(k) +
                            ": attention takes q as BxMxK and k^T as BxKxN");
  ss::AttentionWorkload w{q[0], q[1], k[2], q[2], args.value_dim > 0 ? args.value_dim : q[2]};
  if (args.value_dim < 0)
    return invalid_argument("--value-dim = " + std::to_string(args.value_dim) + ", must be > 0");
  w.scale = 1.0 / std::sqrt(double(w.k));
  if (!args.scale.empty()) {
    char* end = nullptr;
    w.scale = std::strtod(args.scale.c_str(), &end);
    if (end == args.scale.c_str() || *end != '\0')
      return invalid_argument("--scale = '" + args.scale + "' is not a number");
  }
  if (!args.mask.empty()) {
    TT_ASSIGN_OR_RETURN(auto m, parse_shape(args.mask, "--mask"));
    if (m.size() != 3 || m[2] != w.n)
      return invalid_argument("--mask " + args.mask +
                              ": the mask is MBxMRxN with N = " + std::to_string(w.n) + " keys");
    w.mask_batch = m[0];
    w.mask_rows = m[1];
  }
  if (Status s = ss::validate(w); !s) return s.error();
  return w;
}

}  // namespace

Expected<ss::Task> make_op_task(const OpArgs& args, const std::vector<int64_t>& data,
                                const std::vector<int64_t>& weight) {
  TT_ASSIGN_OR_RETURN(ss::Target target, op_target(args.target));
  TT_ASSIGN_OR_RETURN(std::string tmpl, template_for_op(args.op, target));
  // The template names the element types (conv2d_NCHWc_int8 tasks are uint8 x int8);
  // --weight-bits 7 narrows a quantized one's weights.
  ss::Precision precision = ss::find_template(tmpl)->precision();
  if (args.weight_bits != 8 && (args.weight_bits != 7 || !ss::is_quantized(precision)))
    return invalid_argument("--weight-bits = " + std::to_string(args.weight_bits) +
                            (ss::is_quantized(precision)
                                 ? ", must be 8 or 7"
                                 : " is for quantized templates; " + tmpl + " is float32"));
  if (args.weight_bits == 7) precision = ss::Precision::kUInt8Int7;
  if (!args.precision.empty()) {
    TT_ASSIGN_OR_RETURN(const ss::Precision p, ss::parse_float_precision(args.precision));
    if (ss::is_quantized(precision))
      return invalid_argument("--precision " + args.precision + " is for float templates; " + tmpl +
                              " is " + ss::precision_name(precision));
    if (ss::is_reduced_float(p) && !ss::target_kind_of(target).runs_on_gpu())
      return invalid_argument("--precision " + args.precision +
                              " runs on a CUDA target's tensor cores (sm_80 or newer); the target "
                              "is '" +
                              target.spec + "'");
    precision = p;
  }
  if (takes_conv2d_shapes(tmpl)) {
    TT_ASSIGN_OR_RETURN(auto strides, parse_int_list(args.strides, "--strides"));
    TT_ASSIGN_OR_RETURN(auto pads, parse_int_list(args.pads, "--pads"));
    TT_ASSIGN_OR_RETURN(auto dil, parse_int_list(args.dilation, "--dilation"));
    auto w = ss::conv2d_workload(data, weight, strides, pads, dil);
    if (!w) return invalid_argument("--" + w.error().message);
    w->precision = precision;
    return ss::make_task(serving_template(args.op, tmpl, *w), *w, target);
  }
  if (ss::find_template(tmpl)->operator_kind() == ss::OperatorKind::kBatchMatmul) {
    auto b = ss::batch_matmul_workload(data, weight, args.transpose_b);
    if (!b) return invalid_argument("--data, --weight: " + b.error().message);
    b->precision = precision;
    return ss::make_task(serving_template(args.op, tmpl, *b), *b, target);
  }
  if (ss::find_template(tmpl)->operator_kind() == ss::OperatorKind::kAttention) {
    TT_ASSIGN_OR_RETURN(auto a, attention_workload(args, data, weight));
    return ss::make_task(serving_template(args.op, tmpl, a), a, target);
  }
  TT_ASSIGN_OR_RETURN(auto d, ss::dense_workload(data, weight));
  d.precision = precision;
  return ss::make_task(serving_template(args.op, tmpl, d), d, target);
}

}  // namespace tensortune::workflow
