#include "schedule_space/task.h"

#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"

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

std::string tensor(std::initializer_list<int64_t> shape) {
  return "[\"TENSOR\", " + ints(shape) + ", \"float32\"]";
}

bool is_conv_template(const std::string& name) { return name == kConv2dNCHWc; }
bool is_dense_template(const std::string& name) { return name == kDensePack || name == kDenseNopack; }

}  // namespace

const std::vector<std::string>& template_names() {
  static const std::vector<std::string> names{kConv2dNCHWc, kDensePack, kDenseNopack};
  return names;
}

Expected<Task> make_task(std::string template_name, Workload workload, Target target) {
  if (!is_conv_template(template_name) && !is_dense_template(template_name)) {
    std::string known;
    for (const auto& n : template_names()) known += (known.empty() ? "" : ", ") + n;
    return invalid_argument("unknown template '" + template_name + "' (known: " + known + ")");
  }
  const bool conv = std::holds_alternative<Conv2dWorkload>(workload);
  if (conv != is_conv_template(template_name))
    return invalid_argument("template " + template_name + " does not take a " +
                            (conv ? "conv2d" : "dense") + " workload");
  TT_RETURN_IF_ERROR(validate(workload));
  if (target.vector_lanes < 1 || target.vector_lanes > 64)
    return invalid_argument("target vector_lanes = " + std::to_string(target.vector_lanes) +
                            ", must be in [1, 64]");
  return Task{std::move(template_name), std::move(workload), std::move(target)};
}

std::string workload_key(const Task& task) {
  std::string args;
  if (const auto* c = std::get_if<Conv2dWorkload>(&task.workload)) {
    args = tensor({c->batch, c->in_channels, c->in_height, c->in_width}) + ", " +
           tensor({c->out_channels, c->in_channels, c->kernel_h, c->kernel_w}) + ", " +
           ints({c->stride_h, c->stride_w}) + ", " +
           ints({c->pad_top, c->pad_left, c->pad_bottom, c->pad_right}) + ", " +
           ints({c->dilation_h, c->dilation_w}) + ", \"NCHW\", \"NCHW\", \"float32\"";
  } else {
    const auto& d = std::get<DenseWorkload>(task.workload);
    args = tensor({d.batch, d.in_features}) + ", " + tensor({d.out_features, d.in_features}) +
           ", null, \"float32\"";
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
           std::to_string(c->dilation_w);
  }
  const auto& d = std::get<DenseWorkload>(w);
  return "dense " + std::to_string(d.batch) + "x" + std::to_string(d.in_features) + " w" +
         std::to_string(d.out_features) + "x" + std::to_string(d.in_features);
}

Expected<ConfigSpace> make_config_space(const Task& task) {
  TT_RETURN_IF_ERROR(validate(task.workload));
  if (task.template_name == kConv2dNCHWc)
    return conv2d_nchwc_space(std::get<Conv2dWorkload>(task.workload), task.target.vector_lanes);
  if (is_dense_template(task.template_name))
    return dense_space(std::get<DenseWorkload>(task.workload), task.template_name == kDensePack,
                       task.target.vector_lanes);
  return invalid_argument("unknown template '" + task.template_name + "'");
}

Config default_config(const Task& task, const ConfigSpace& space) {
  if (task.template_name == kConv2dNCHWc)
    return conv2d_nchwc_default(space, std::get<Conv2dWorkload>(task.workload),
                                task.target.vector_lanes);
  return dense_default(space, std::get<DenseWorkload>(task.workload),
                       task.template_name == kDensePack, task.target.vector_lanes);
}

double task_flop(const Task& task) { return workload_flop(task.workload); }

}  // namespace tensortune::schedule_space
