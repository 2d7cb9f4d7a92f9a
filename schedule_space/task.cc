#include "schedule_space/task.h"

#include <cstdio>

namespace tensortune::schedule_space {
namespace {

std::string ints(std::initializer_list<int64_t> v) {
  std::string s = "[";
  bool first = true;
  for (int64_t x : v) {
    s += (first ? "" : ", ") + std::to_string(x);
    first = false;
  }
  return s + "]";
}

std::string tensor(std::initializer_list<int64_t> shape, const char* dtype = "float32") {
  return "[\"TENSOR\", " + ints(shape) + ", \"" + dtype + "\"]";
}

// The weight tensor's dtype in the key: AutoTVM's "int8", or "int7" for weights in [-64, 64]
// (no AutoTVM task has those; they keep records of their own).
// A reduced float precision's operands are its dtype ("float16" as AutoTVM's tensor-core tasks
// write them; "tf32" and "bfloat16" are ours), summed and stored as float32.
const char* weight_dtype(Precision p) {
  return p == Precision::kUInt8Int7   ? "int7"
         : p == Precision::kUInt8Int8 ? "int8"
         : is_reduced_float(p)        ? precision_name(p)
                                      : "float32";
}

const char* data_dtype(Precision p) {
  return is_quantized(p) ? "uint8" : is_reduced_float(p) ? precision_name(p) : "float32";
}

std::string precision_suffix(Precision p) {
  if (is_reduced_float(p)) return std::string(" ") + precision_name(p);
  return p == Precision::kUInt8Int7 ? " u8i7" : p == Precision::kUInt8Int8 ? " u8i8" : "";
}

}  // namespace

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  for (const Template* t : all_templates()) names.emplace_back(t->name());
  return names;
}

Expected<Task> make_task(std::string template_name, Workload workload, Target target) {
  const Template* tmpl = find_template(template_name);
  if (!tmpl) {
    std::string known;
    for (const auto& n : template_names()) known += (known.empty() ? "" : ", ") + n;
    return invalid_argument("unknown template '" + template_name + "' (known: " + known + ")");
  }
  if (operator_kind(workload) != tmpl->operator_kind())
    return invalid_argument("template " + template_name + " does not take a " +
                            operator_kind_name(operator_kind(workload)) + " workload");
  TT_RETURN_IF_ERROR(validate(workload));
  TT_RETURN_IF_ERROR(precision_matches(*tmpl, workload));
  TT_RETURN_IF_ERROR(tmpl->accepts(workload));
  const std::string kind = target_backend(target);
  if (kind != tmpl->backend())
    return invalid_argument("template " + template_name + " needs a " +
                            std::string(tmpl->backend()) + " target, not '" + target.spec + "'");
  if (target.vector_lanes < 1 || target.vector_lanes > 64)
    return invalid_argument("target vector_lanes = " + std::to_string(target.vector_lanes) +
                            ", must be in [1, 64]");
  TT_RETURN_IF_ERROR(tmpl->accepts_target(target));
  return Task{std::move(template_name), std::move(workload), std::move(target)};
}

const Template& TemplateConfig::tmpl() const { return template_of(task); }

KernelSignature TemplateConfig::signature() const { return tmpl().signature(task, space, config); }

std::string TemplateConfig::describe() const {
  return task.template_name + " " + space.describe(config);
}

std::string target_backend(const Target& target) {
  return target.spec.substr(0, target.spec.find(' '));
}

CpuModel cpu_model_of(const Target& target) {
  if (target.measured_cpu) return *target.measured_cpu;
  std::string cpu;
  if (const size_t at = target.spec.find("-mcpu="); at != std::string::npos) {
    const size_t begin = at + 6;
    cpu = target.spec.substr(begin, target.spec.find(' ', begin) - begin);
  }
  return cpu_model_for(cpu, target.vector_lanes);
}

std::string workload_key(const Task& task) {
  std::string args;
  if (const auto* c = std::get_if<Conv2dWorkload>(&task.workload)) {
    // AutoTVM's int8 tasks: uint8 data, int8 kernel, "int32" as the output dtype.
    const bool int8 = is_quantized(c->precision);
    const std::string out_dtype = int8 ? "\"int32\"" : "\"float32\"";
    args = tensor({c->batch, c->in_channels, c->in_height, c->in_width}, data_dtype(c->precision)) +
           ", " +
           tensor({c->out_channels, c->in_channels / c->groups, c->kernel_h, c->kernel_w},
                  weight_dtype(c->precision)) +
           ", " + ints({c->stride_h, c->stride_w}) + ", " +
           ints({c->pad_top, c->pad_left, c->pad_bottom, c->pad_right}) + ", " +
           ints({c->dilation_h, c->dilation_w}) +
           (template_of(task).autotvm_conv_args() == ConvArgsLayout::kWithLayouts
                ? ", \"NCHW\", \"NCHW\", " + out_dtype
                : ", " + out_dtype);
  } else if (const auto* b = std::get_if<BatchMatmulWorkload>(&task.workload)) {
    // AutoTVM's batch_matmul(x, y, out_shape, out_dtype, transpose_a, transpose_b).
    const char* dtype = data_dtype(b->precision);
    args = tensor({b->batch, b->m, b->k}, dtype) + ", " +
           (b->transpose_b ? tensor({b->batch, b->n, b->k}, dtype)
                           : tensor({b->batch, b->k, b->n}, dtype)) +
           ", null, \"float32\", false, " + (b->transpose_b ? "true" : "false");
  } else if (const auto* a = std::get_if<AttentionWorkload>(&task.workload)) {
    // Our own operator (AutoTVM has none): (q, k as K^T, v, mask or null, scale).
    char scale[32];
    std::snprintf(scale, sizeof scale, "%.17g", a->scale);
    args = tensor({a->batch, a->m, a->k}) + ", " + tensor({a->batch, a->k, a->n}) + ", " +
           tensor({a->batch, a->n, a->dv}) + ", " +
           (a->has_mask() ? tensor({a->mask_batch, a->mask_rows, a->n}) : std::string("null")) +
           ", " + scale;
  } else {
    const auto& d = std::get<DenseWorkload>(task.workload);
    const bool int8 = is_quantized(d.precision);
    args = tensor({d.batch, d.in_features}, data_dtype(d.precision)) + ", " +
           tensor({d.out_features, d.in_features}, weight_dtype(d.precision)) + ", null, " +
           (int8 ? "\"int32\"" : "\"float32\"");
  }
  return "[\"" + task.template_name + "\", [" + args + "]]";
}

std::string describe_workload(const Workload& w) {
  if (const auto* c = std::get_if<Conv2dWorkload>(&w)) {
    return "conv2d " + std::to_string(c->batch) + "x" + std::to_string(c->in_channels) + "x" +
           std::to_string(c->in_height) + "x" + std::to_string(c->in_width) + " k" +
           std::to_string(c->out_channels) + "x" + std::to_string(c->kernel_h) + "x" +
           std::to_string(c->kernel_w) + " s" + std::to_string(c->stride_h) + "," +
           std::to_string(c->stride_w) + " p" + std::to_string(c->pad_top) + "," +
           std::to_string(c->pad_left) + "," + std::to_string(c->pad_bottom) + "," +
           std::to_string(c->pad_right) + " d" + std::to_string(c->dilation_h) + "," +
           std::to_string(c->dilation_w) +
           (c->groups != 1 ? " g" + std::to_string(c->groups) : std::string()) +
           precision_suffix(c->precision);
  }
  if (const auto* b = std::get_if<BatchMatmulWorkload>(&w)) {
    auto dims = [](int64_t x, int64_t y, int64_t z) {
      return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
    };
    return "batch_matmul " + dims(b->batch, b->m, b->k) + " w" +
           (b->transpose_b ? dims(b->batch, b->n, b->k) : dims(b->batch, b->k, b->n) + " nn") +
           precision_suffix(b->precision);
  }
  if (const auto* a = std::get_if<AttentionWorkload>(&w)) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", a->scale);
    return "attention " + std::to_string(a->batch) + "x" + std::to_string(a->m) + "x" +
           std::to_string(a->k) + " keys " + std::to_string(a->n) + " v" + std::to_string(a->dv) +
           (a->has_mask() ? " mask " + std::to_string(a->mask_batch) + "x" +
                                std::to_string(a->mask_rows) + "x" + std::to_string(a->n)
                          : std::string()) +
           " scale " + scale;
  }
  const auto& d = std::get<DenseWorkload>(w);
  return "dense " + std::to_string(d.batch) + "x" + std::to_string(d.in_features) + " w" +
         std::to_string(d.out_features) + "x" + std::to_string(d.in_features) +
         precision_suffix(d.precision);
}

const Template& template_of(const Task& task) {
  const Template* tmpl = find_template(task.template_name);
  TT_CHECK(tmpl != nullptr) << "task of unknown template '" << task.template_name
                            << "' (tasks come from make_task)";
  return *tmpl;
}

Expected<ConfigSpace> make_config_space(const Task& task) {
  TT_RETURN_IF_ERROR(validate(task.workload));
  const Template* tmpl = find_template(task.template_name);
  if (!tmpl) return invalid_argument("unknown template '" + task.template_name + "'");
  if (operator_kind(task.workload) != tmpl->operator_kind())
    return invalid_argument("template " + task.template_name + " does not take a " +
                            operator_kind_name(operator_kind(task.workload)) + " workload");
  return tmpl->config_space(task);
}

bool has_valid_config(const Template& t, const Workload& w, const Target& target) {
  auto task = make_task(std::string(t.name()), w, target);
  if (!task) return false;
  auto space = make_config_space(*task);
  return space.has_value() && space->valid_count() > 0;
}

Config default_config(const Task& task, const ConfigSpace& space) {
  return template_of(task).default_config(task, space);
}

double task_flop(const Task& task) { return template_of(task).flop(task); }

std::optional<std::pair<int64_t, int64_t>> fallback_blocks(const Workload& w,
                                                           const Target& target) {
  for (const Template* t : templates_for(w, target_backend(target))) {
    if (t->network_layout() != NetworkLayout::kBlocked) continue;
    auto task = make_task(std::string(t->name()), w, target);
    if (!task) continue;
    auto space = make_config_space(*task);
    if (!space) continue;
    const KernelSignature sig = t->signature(*task, *space, t->default_config(*task, *space));
    return std::pair{sig.ic_block, sig.oc_block};
  }
  return std::nullopt;
}

}  // namespace tensortune::schedule_space
