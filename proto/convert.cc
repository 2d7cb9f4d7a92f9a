#include "proto/convert.h"

#include <algorithm>
#include <cmath>

#include "schedule_space/template.h"
#include "support/sha256.h"

namespace tensortune::wire {

namespace ss = schedule_space;

namespace {

Status in_range(const std::string& field, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s = %g, must be in [%g, %g]", field.c_str(), value, lo, hi);
    return invalid_argument(buf);
  }
  return ok_status();
}

constexpr double kMaxDim = 1 << 16;
constexpr double kMaxElements = double(1 << 28);
// Floating-point operations of one run: 2^42 is minutes on one CPU core and seconds on a GPU
// (ResNet-50's largest layer is 2^28).
constexpr double kMaxFlop = double(int64_t{1} << 42);

v1::Precision precision_to_proto(ss::Precision p) {
  switch (p) {
    case ss::Precision::kUInt8Int8:
      return v1::PRECISION_UINT8_INT8;
    case ss::Precision::kUInt8Int7:
      return v1::PRECISION_UINT8_INT7;
    case ss::Precision::kTf32:
      return v1::PRECISION_TF32;
    case ss::Precision::kFloat16:
      return v1::PRECISION_FLOAT16;
    case ss::Precision::kBFloat16:
      return v1::PRECISION_BFLOAT16;
    case ss::Precision::k3xTf32:
      return v1::PRECISION_3XTF32;
    case ss::Precision::kFloat32:
      break;
  }
  return v1::PRECISION_FLOAT32;
}

// Unset (older clients) is float32; a value this build does not know is refused, naming it.
Expected<ss::Precision> precision_from_proto(v1::Precision p, const std::string& field) {
  switch (p) {
    case v1::PRECISION_FLOAT32:
      return ss::Precision::kFloat32;
    case v1::PRECISION_UINT8_INT8:
      return ss::Precision::kUInt8Int8;
    case v1::PRECISION_UINT8_INT7:
      return ss::Precision::kUInt8Int7;
    case v1::PRECISION_TF32:
      return ss::Precision::kTf32;
    case v1::PRECISION_FLOAT16:
      return ss::Precision::kFloat16;
    case v1::PRECISION_BFLOAT16:
      return ss::Precision::kBFloat16;
    case v1::PRECISION_3XTF32:
      return ss::Precision::k3xTf32;
    default:
      return invalid_argument(field + " = " + std::to_string(p) +
                              " is not a precision this server knows");
  }
}

}  // namespace

void task_to_proto(const ss::Task& task, v1::Workload* w, v1::Target* t) {
  w->set_template_name(task.template_name);
  if (const auto* c = std::get_if<ss::Conv2dWorkload>(&task.workload)) {
    auto* p = w->mutable_conv2d();
    p->set_batch(c->batch);
    p->set_in_channels(c->in_channels);
    p->set_in_height(c->in_height);
    p->set_in_width(c->in_width);
    p->set_out_channels(c->out_channels);
    p->set_kernel_h(c->kernel_h);
    p->set_kernel_w(c->kernel_w);
    p->set_stride_h(c->stride_h);
    p->set_stride_w(c->stride_w);
    p->set_pad_top(c->pad_top);
    p->set_pad_left(c->pad_left);
    p->set_pad_bottom(c->pad_bottom);
    p->set_pad_right(c->pad_right);
    p->set_dilation_h(c->dilation_h);
    p->set_dilation_w(c->dilation_w);
    if (c->groups != 1) p->set_groups(c->groups);
    p->set_precision(precision_to_proto(c->precision));
  } else if (const auto* b = std::get_if<ss::BatchMatmulWorkload>(&task.workload)) {
    auto* p = w->mutable_batch_matmul();
    p->set_batch(b->batch);
    p->set_m(b->m);
    p->set_n(b->n);
    p->set_k(b->k);
    p->set_transpose_b(b->transpose_b);
    p->set_precision(precision_to_proto(b->precision));
  } else if (const auto* a = std::get_if<ss::AttentionWorkload>(&task.workload)) {
    auto* p = w->mutable_attention();
    p->set_batch(a->batch);
    p->set_m(a->m);
    p->set_n(a->n);
    p->set_k(a->k);
    p->set_dv(a->dv);
    p->set_mask_batch(a->mask_batch);
    p->set_mask_rows(a->mask_rows);
    p->set_scale(a->scale);
  } else {
    const auto& d = std::get<ss::DenseWorkload>(task.workload);
    auto* p = w->mutable_dense();
    p->set_batch(d.batch);
    p->set_out_features(d.out_features);
    p->set_in_features(d.in_features);
    p->set_precision(precision_to_proto(d.precision));
  }
  t->set_spec(task.target.spec);
  t->set_vector_lanes(task.target.vector_lanes);
}

void layout_transform_to_proto(const ss::LayoutTransformWorkload& l, v1::Workload* w) {
  w->set_template_name(kLayoutTransformName);
  auto* p = w->mutable_layout_transform();
  p->set_batch(l.batch);
  p->set_channels(l.channels);
  p->set_height(l.height);
  p->set_width(l.width);
  p->set_from_block(l.from_block);
  p->set_to_block(l.to_block);
}

Expected<ss::LayoutTransformWorkload> layout_transform_from_proto(const v1::Workload& w) {
  if (!w.has_layout_transform()) return invalid_argument("workload.layout_transform is not set");
  if (w.template_name() != kLayoutTransformName)
    return invalid_argument("workload.template_name = '" + w.template_name().substr(0, 80) +
                            "' with a layout_transform workload, must be '" + kLayoutTransformName +
                            "'");
  const auto& p = w.layout_transform();
  const ss::LayoutTransformWorkload l{p.batch(), p.channels(),   p.height(),
                                      p.width(), p.from_block(), p.to_block()};
  if (Status s = ss::validate(l); !s) return s.error().with_context("workload");
  return l;
}

Expected<ss::Task> task_from_proto(const v1::Workload& w, const v1::Target& t) {
  ss::Workload workload;
  if (w.has_layout_transform()) {
    return invalid_argument(
        "workload.layout_transform is not a template's task (it is timed on its own)");
  } else if (w.has_conv2d()) {
    const auto& p = w.conv2d();
    const std::pair<const char*, int64_t> dims[] = {{"batch", p.batch()},
                                                    {"in_channels", p.in_channels()},
                                                    {"in_height", p.in_height()},
                                                    {"in_width", p.in_width()},
                                                    {"out_channels", p.out_channels()},
                                                    {"kernel_h", p.kernel_h()},
                                                    {"kernel_w", p.kernel_w()},
                                                    {"stride_h", p.stride_h()},
                                                    {"stride_w", p.stride_w()},
                                                    {"dilation_h", p.dilation_h()},
                                                    {"dilation_w", p.dilation_w()}};
    for (const auto& [name, v] : dims)
      TT_RETURN_IF_ERROR(in_range(std::string("workload.conv2d.") + name, double(v), 1, kMaxDim));
    const std::pair<const char*, int64_t> pads[] = {{"pad_top", p.pad_top()},
                                                    {"pad_left", p.pad_left()},
                                                    {"pad_bottom", p.pad_bottom()},
                                                    {"pad_right", p.pad_right()}};
    for (const auto& [name, v] : pads)
      TT_RETURN_IF_ERROR(in_range(std::string("workload.conv2d.") + name, double(v), 0, 1024));
    workload = ss::Conv2dWorkload{p.batch(),        p.in_channels(), p.in_height(), p.in_width(),
                                  p.out_channels(), p.kernel_h(),    p.kernel_w(),  p.stride_h(),
                                  p.stride_w(),     p.pad_top(),     p.pad_left(),  p.pad_bottom(),
                                  p.pad_right(),    p.dilation_h(),  p.dilation_w()};
    // 0 (unset, as older clients send) is an ungrouped convolution.
    TT_RETURN_IF_ERROR(in_range("workload.conv2d.groups", double(p.groups()), 0, kMaxDim));
    std::get<ss::Conv2dWorkload>(workload).groups = p.groups() == 0 ? 1 : p.groups();
    TT_ASSIGN_OR_RETURN(std::get<ss::Conv2dWorkload>(workload).precision,
                        precision_from_proto(p.precision(), "workload.conv2d.precision"));
  } else if (w.has_dense()) {
    const auto& p = w.dense();
    TT_RETURN_IF_ERROR(in_range("workload.dense.batch", double(p.batch()), 1, kMaxDim));
    TT_RETURN_IF_ERROR(
        in_range("workload.dense.out_features", double(p.out_features()), 1, kMaxDim));
    TT_RETURN_IF_ERROR(in_range("workload.dense.in_features", double(p.in_features()), 1, kMaxDim));
    TT_ASSIGN_OR_RETURN(ss::Precision precision,
                        precision_from_proto(p.precision(), "workload.dense.precision"));
    workload = ss::DenseWorkload{p.batch(), p.out_features(), p.in_features(), precision};
  } else if (w.has_batch_matmul()) {
    const auto& p = w.batch_matmul();
    const std::pair<const char*, int64_t> dims[] = {
        {"batch", p.batch()}, {"m", p.m()}, {"n", p.n()}, {"k", p.k()}};
    for (const auto& [name, v] : dims)
      TT_RETURN_IF_ERROR(
          in_range(std::string("workload.batch_matmul.") + name, double(v), 1, kMaxDim));
    TT_ASSIGN_OR_RETURN(ss::Precision precision,
                        precision_from_proto(p.precision(), "workload.batch_matmul.precision"));
    if (ss::is_quantized(precision))
      return invalid_argument(std::string("workload.batch_matmul.precision = ") +
                              ss::precision_name(precision) + ": batch matmuls are float");
    workload = ss::BatchMatmulWorkload{p.batch(), p.m(), p.n(), p.k(), p.transpose_b(), precision};
  } else if (w.has_attention()) {
    const auto& p = w.attention();
    const std::pair<const char*, int64_t> dims[] = {
        {"batch", p.batch()}, {"m", p.m()}, {"n", p.n()}, {"k", p.k()}, {"dv", p.dv()}};
    for (const auto& [name, v] : dims)
      TT_RETURN_IF_ERROR(
          in_range(std::string("workload.attention.") + name, double(v), 1, kMaxDim));
    TT_RETURN_IF_ERROR(
        in_range("workload.attention.mask_batch", double(p.mask_batch()), 0, kMaxDim));
    TT_RETURN_IF_ERROR(in_range("workload.attention.mask_rows", double(p.mask_rows()), 0, kMaxDim));
    ss::AttentionWorkload a{p.batch(), p.m(),          p.n(),         p.k(),
                            p.dv(),    p.mask_batch(), p.mask_rows(), p.scale()};
    if (Status s = ss::validate(a); !s) return s.error().with_context("workload.attention");
    workload = a;
  } else {
    return invalid_argument("workload has none of conv2d, dense, batch_matmul, attention set");
  }
  if (t.spec().empty() || t.spec().size() > 256)
    return invalid_argument("target.spec must be 1 to 256 characters");
  // A CPU target's lanes are its vector width in floats; a GPU target has none (1).
  auto kind = ss::target_kind_of_spec(t.spec());
  if (!kind) return kind.error().with_context("target.spec");
  TT_RETURN_IF_ERROR((*kind)->check_vector_lanes(t.vector_lanes()));
  auto task = ss::make_task(w.template_name(), workload, ss::Target{t.spec(), t.vector_lanes()});
  if (!task) return task.error().with_context("workload");
  // Every tensor a measurement allocates, and the work of one run, before anything runs: a
  // dense 1x65536 by 65536x65536 has fields in range but a 16 GiB weight.
  const ss::OperandShapes shapes = ss::operand_shapes(task->workload);
  const std::pair<const char*, const std::vector<int64_t>*> tensors[] = {
      {"workload data elements", &shapes.data},
      {"workload weight elements", &shapes.weight},
      {"workload output elements", &shapes.out}};
  for (const auto& [field, shape] : tensors) {
    double n = 1;
    for (int64_t d : *shape) n *= static_cast<double>(d);
    TT_RETURN_IF_ERROR(in_range(field, n, 1, kMaxElements));
  }
  TT_RETURN_IF_ERROR(in_range("workload flop", ss::template_of(*task).flop(*task), 1, kMaxFlop));
  return task;
}

void config_to_proto(const ss::ConfigSpace& space, const ss::Config& config, v1::Config* out) {
  out->set_index(config.index);
  for (const auto& [name, value] : space.entity_of(config)) {
    auto* kv = out->add_entity();
    kv->set_name(name);
    if (const auto* split = std::get_if<std::vector<int64_t>>(&value)) {
      for (int64_t s : *split) kv->mutable_split()->add_sizes(s);
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      kv->set_int_value(*i);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      kv->set_bool_value(*b);
    } else {
      kv->set_annotation(std::get<std::string>(value));
    }
  }
}

Expected<ss::Config> config_from_proto(const ss::ConfigSpace& space, const v1::Config& config) {
  if (config.entity_size() > 64) return invalid_argument("config.entity has too many knobs");
  ss::Entity entity;
  for (const auto& kv : config.entity()) {
    ss::KnobValue value;
    switch (kv.value_case()) {
      case v1::KnobValue::kSplit:
        value = std::vector<int64_t>(kv.split().sizes().begin(), kv.split().sizes().end());
        break;
      case v1::KnobValue::kIntValue:
        value = kv.int_value();
        break;
      case v1::KnobValue::kBoolValue:
        value = kv.bool_value();
        break;
      case v1::KnobValue::kAnnotation:
        value = kv.annotation();
        break;
      default:
        return invalid_argument("config.entity knob '" + kv.name() + "' has no value");
    }
    entity.emplace_back(kv.name(), std::move(value));
  }
  const std::string where = "config.index = " + std::to_string(config.index());
  if (config.index() < 0 || config.index() >= space.size())
    return Error{ErrorCode::kOutOfRange, where + " is outside " + space.template_name() +
                                             "'s space [0, " + std::to_string(space.size()) + ")"};
  // The entity names the config; without one the index does. Both given: they must agree.
  auto c = entity.empty() ? space.config_at(config.index()) : space.config_from_entity(entity);
  if (!c) return c.error().with_context(where);
  if (c->index != config.index())
    return invalid_argument(where + " does not match its entity (" + space.describe(*c) +
                            " is index " + std::to_string(c->index) + ")");
  if (!space.is_valid(*c))
    return invalid_argument("config " + std::to_string(config.index()) + " (" + space.describe(*c) +
                            ") is not a valid point of " + space.template_name());
  return c;
}

void result_to_proto(const ss::MeasureResult& r, v1::MeasureResult* out) {
  out->set_config_index(r.config_index);
  for (double c : r.costs) out->add_costs_s(c);
  out->set_error_no(static_cast<v1::MeasureErrorNo>(r.error_no));
  out->set_error_msg(r.error_msg);
  out->set_all_cost_s(r.all_cost_s);
  out->set_compile_s(r.compile_s);
  out->set_timestamp(r.timestamp);
  out->set_threads(r.threads);
  out->set_number(r.number);
  out->set_device_key(r.device_key);
  if (r.kernel) kernel_binary_to_proto(*r.kernel, out->mutable_kernel());
}

Expected<ss::MeasureResult> result_from_proto(const v1::MeasureResult& p) {
  if (p.error_no() < 0 || p.error_no() > 8)
    return invalid_argument("result.error_no = " + std::to_string(p.error_no()) + ", must be 0..8");
  if (p.costs_s_size() == 0 || p.costs_s_size() > 1000)
    return invalid_argument("result.costs_s has " + std::to_string(p.costs_s_size()) +
                            " values, must be 1..1000");
  ss::MeasureResult r;
  r.config_index = p.config_index();
  for (double c : p.costs_s()) {
    if (!std::isfinite(c) || c < 0)
      return invalid_argument("result.costs_s holds " + std::to_string(c) +
                              ", costs must be finite and >= 0");
    r.costs.push_back(c);
  }
  r.error_no = static_cast<ss::MeasureErrorNo>(p.error_no());
  r.error_msg = p.error_msg().substr(0, 4096);
  r.all_cost_s = p.all_cost_s();
  r.compile_s = p.compile_s();
  r.timestamp = p.timestamp();
  r.threads = p.threads();
  r.number = p.number();
  r.device_key = p.device_key();
  if (p.has_kernel()) {
    auto kernel = kernel_binary_from_proto(p.kernel());
    if (!kernel) return kernel.error().with_context("result");
    r.kernel = std::make_shared<const ss::KernelBinary>(std::move(kernel).value());
  }
  return r;
}

void kernel_binary_to_proto(const ss::KernelBinary& b, v1::KernelBinary* out) {
  out->set_format(b.format == ss::KernelFormat::kCubin ? v1::KernelBinary::CUBIN
                                                       : v1::KernelBinary::CPU_OBJECT);
  out->set_arch(b.arch);
  out->clear_features();
  for (const std::string& f : b.features) out->add_features(f);
  out->set_source_sha256(b.source_sha256);
  out->set_sha256(sha256_hex(b.code));
  out->set_compiler(b.compiler);
  out->set_code(b.code);
  out->set_build_s(b.build_s);
  out->set_built_by(b.built_by);
}

namespace {

Status check_label(const std::string& field, const std::string& value, bool may_be_empty) {
  bool printable = true;
  for (unsigned char c : value) printable = printable && c >= 0x20 && c < 0x7f;
  if ((value.empty() && !may_be_empty) || value.size() > 128 || !printable)
    return invalid_argument("kernel." + field + " = '" + value.substr(0, 40) +
                            "' must be 1..128 printable characters");
  return ok_status();
}

}  // namespace

Expected<ss::KernelBinary> kernel_binary_from_proto(const v1::KernelBinary& in) {
  ss::KernelBinary b;
  switch (in.format()) {
    case v1::KernelBinary::CPU_OBJECT:
      b.format = ss::KernelFormat::kCpuObject;
      break;
    case v1::KernelBinary::CUBIN:
      b.format = ss::KernelFormat::kCubin;
      break;
    default:
      return invalid_argument("kernel.format = " + std::to_string(in.format()) +
                              ", must be CPU_OBJECT or CUBIN");
  }
  TT_RETURN_IF_ERROR(check_label("arch", in.arch(), false));
  TT_RETURN_IF_ERROR(check_label("compiler", in.compiler(), false));
  TT_RETURN_IF_ERROR(check_label("built_by", in.built_by(), true));
  if (in.features_size() > 512)
    return invalid_argument("kernel.features has " + std::to_string(in.features_size()) +
                            " entries, at most 512");
  for (const std::string& f : in.features()) TT_RETURN_IF_ERROR(check_label("features", f, false));
  if (!is_sha256_hex(in.source_sha256()))
    return invalid_argument("kernel.source_sha256 = '" + in.source_sha256().substr(0, 80) +
                            "' is not 64 lowercase hex digits");
  if (in.code().empty() || in.code().size() > (size_t{64} << 20))
    return invalid_argument("kernel.code has " + std::to_string(in.code().size()) +
                            " bytes, must be 1..64 MiB");
  if (const std::string digest = sha256_hex(in.code()); digest != in.sha256())
    return invalid_argument("kernel.sha256 = '" + in.sha256().substr(0, 80) +
                            "' is not the digest of kernel.code (" + digest + ")");
  if (!std::isfinite(in.build_s()) || in.build_s() < 0)
    return invalid_argument("kernel.build_s = " + std::to_string(in.build_s()) +
                            ", must be finite and >= 0");
  b.arch = in.arch();
  b.features.assign(in.features().begin(), in.features().end());
  std::sort(b.features.begin(), b.features.end());
  b.source_sha256 = in.source_sha256();
  b.compiler = in.compiler();
  b.code = in.code();
  b.build_s = in.build_s();
  b.built_by = in.built_by();
  return b;
}

Status validate_timing(const v1::TimingOptions& t) {
  TT_RETURN_IF_ERROR(in_range("timing.number", double(t.number()), 1, 1e6));
  TT_RETURN_IF_ERROR(in_range("timing.repeat", t.repeat(), 1, 100));
  TT_RETURN_IF_ERROR(in_range("timing.min_repeat_ms", t.min_repeat_ms(), 0, 60000));
  TT_RETURN_IF_ERROR(in_range("timing.timeout_s", t.timeout_s(), 0, 3600));
  TT_RETURN_IF_ERROR(in_range("timing.threads", t.threads(), 1, 1024));
  return ok_status();
}

}  // namespace tensortune::wire
