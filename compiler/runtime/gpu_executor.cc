// Implements gpu_executor.h over the CUDA driver (codegen/cuda/cuda_driver.h).
#include "compiler/runtime/gpu_executor.h"

#include <chrono>
#include <functional>
#include <map>

#include "compiler/codegen/cuda/cuda_driver.h"
#include "compiler/graph/interpreter.h"
#include "support/stopwatch.h"

namespace tensortune::runtime {

using codegen::cuda::GpuModule;
using graph::DType;
using graph::Tensor;
using graph::ValueId;

namespace {

// Device buffers hold values at their dtype's width, as the CPU executor's do.
int64_t bytes_of(const graph::TensorType& t) {
  return graph::num_elements(t.shape) * graph::buffer_element_size(t.dtype);
}

Status upload(GpuModule& m, uint64_t device, const Tensor& t) {
  if (graph::is_float(t.dtype)) return m.upload(device, t.f32.data(), bytes_of(t.type()));
  std::vector<char> staged(static_cast<size_t>(bytes_of(t.type())));
  graph::write_buffer(t, staged.data());
  return m.upload(device, staged.data(), bytes_of(t.type()));
}

Expected<Tensor> download(GpuModule& m, uint64_t device, const graph::TensorType& type) {
  std::vector<char> staged(static_cast<size_t>(bytes_of(type)));
  TT_RETURN_IF_ERROR(m.download(staged.data(), device, bytes_of(type)));
  return graph::read_buffer(type, staged.data());
}

}  // namespace

struct GpuExecution::Impl {
  std::shared_ptr<const CompiledNetwork> net;
  std::unique_ptr<GpuModule> module;
  graph::MemoryPlan plan;
  std::vector<uint64_t> value_ptr;  ///< by value id; 0: not materialised
  std::vector<uint64_t> param_ptr;
  std::vector<std::function<Status()>> steps;
  std::vector<Tensor> outputs;

  const graph::Graph& g() const { return net->graph; }

  Status bind_buffers() {
    value_ptr.assign(g().values().size(), 0);
    plan = graph::plan_memory(g());
    TT_ASSIGN_OR_RETURN(uint64_t arena, module->allocate(plan.arena_bytes));
    for (const auto& b : plan.buffers) value_ptr[b.value] = arena + static_cast<uint64_t>(b.offset);
    for (ValueId in : g().inputs()) {
      TT_ASSIGN_OR_RETURN(value_ptr[in], module->allocate(bytes_of(g().type(in))));
    }
    for (ValueId out : g().outputs())
      if (!value_ptr[out] && !g().is_constant(out)) {
        TT_ASSIGN_OR_RETURN(value_ptr[out], module->allocate(bytes_of(g().type(out))));
      }
    // Constants that kernels or device copies read are uploaded once; host steps read the
    // graph's own.
    std::vector<bool> device_reads(g().values().size(), false);
    for (const Step& s : net->steps) {
      for (const ArgRef& a : s.args)
        if (a.kind == ArgRef::Kind::kValue) device_reads[a.index] = true;
      if (s.kind == Step::Kind::kNative)
        for (ValueId in : g().nodes()[s.nodes.at(0)].inputs) device_reads[in] = true;
    }
    for (size_t v = 0; v < g().values().size(); ++v) {
      const Tensor* c = g().constant(static_cast<ValueId>(v));
      if (!c || !device_reads[v]) continue;
      TT_ASSIGN_OR_RETURN(value_ptr[v], module->allocate(bytes_of(c->type())));
      TT_RETURN_IF_ERROR(upload(*module, value_ptr[v], *c));
    }
    for (const Tensor& p : net->params) {
      TT_ASSIGN_OR_RETURN(uint64_t d, module->allocate(bytes_of(p.type())));
      TT_RETURN_IF_ERROR(upload(*module, d, p));
      param_ptr.push_back(d);
    }
    return ok_status();
  }

  Expected<std::function<Status()>> bind_kernel(const Step& step) {
    const auto& kernels = module->kernels();
    size_t index = 0;
    while (index < kernels.size() && kernels[index].entry != step.symbol) ++index;
    if (index == kernels.size())
      return data_loss("step " + step.label + " launches " + step.symbol +
                       ", which is not among the network's GPU kernels");
    std::vector<uint64_t> args;
    for (const ArgRef& a : step.args) {
      const uint64_t p = a.kind == ArgRef::Kind::kValue ? value_ptr[a.index] : param_ptr[a.index];
      if (!p) return internal_error("step " + step.label + ": an argument is not materialised");
      args.push_back(p);
    }
    GpuModule* m = module.get();
    return std::function<Status()>([m, index, args] { return m->launch(index, args); });
  }

  /// The interpreter's code for a group on the host: operands downloaded, results uploaded.
  std::function<Status()> bind_host(const Step& step) {
    return [this, &step]() -> Status {
      std::map<ValueId, Tensor> local;
      auto read = [&](ValueId v) -> Expected<const Tensor*> {
        if (const Tensor* c = g().constant(v)) return c;
        if (auto it = local.find(v); it != local.end()) return &it->second;
        if (!value_ptr[v])
          return internal_error("step " + step.label + " reads an unmaterialised value");
        TT_ASSIGN_OR_RETURN(Tensor t, download(*module, value_ptr[v], g().type(v)));
        return &local.emplace(v, std::move(t)).first->second;
      };
      for (int i : step.nodes) {
        const graph::Node& n = g().nodes()[i];
        std::vector<const Tensor*> inputs;
        for (ValueId in : n.inputs) {
          TT_ASSIGN_OR_RETURN(const Tensor* t, read(in));
          inputs.push_back(t);
        }
        TT_ASSIGN_OR_RETURN(Tensor out, graph::evaluate_node(n, inputs, g().type(n.output)));
        if (value_ptr[n.output]) TT_RETURN_IF_ERROR(upload(*module, value_ptr[n.output], out));
        local[n.output] = std::move(out);
      }
      return ok_status();
    };
  }

  Status bind_steps() {
    for (const Step& step : net->steps) {
      if (!value_ptr[step.output] && step.kind != Step::Kind::kInterpret)
        return internal_error("step " + step.label + ": its output is not materialised");
      const graph::Node& head = g().nodes()[step.nodes.at(0)];
      if (step.kind == Step::Kind::kKernel) {
        TT_ASSIGN_OR_RETURN(auto run, bind_kernel(step));
        steps.push_back(std::move(run));
      } else if (step.kind == Step::Kind::kNative && graph::is_view_op(head.op) &&
                 value_ptr[head.inputs[0]]) {
        const uint64_t to = value_ptr[head.output], from = value_ptr[head.inputs[0]];
        const int64_t bytes = bytes_of(g().type(head.output));
        GpuModule* m = module.get();
        steps.push_back([m, to, from, bytes] { return m->copy(to, from, bytes); });
      } else {
        steps.push_back(bind_host(step));
      }
    }
    return ok_status();
  }
};

GpuExecution::GpuExecution(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuExecution::~GpuExecution() = default;

Expected<std::unique_ptr<GpuExecution>> GpuExecution::load(
    std::shared_ptr<const CompiledNetwork> net, int gpu_ordinal) {
  const std::string target = describe_target(*net);
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus)
    return Error{ErrorCode::kFailedPrecondition,
                 net->model + " is compiled for " + target +
                     " and this machine has no GPU to run it (" + gpus.error().message +
                     "); `tensortune run --emulate` runs it on this CPU"};
  if (gpu_ordinal < 0 || gpu_ordinal >= static_cast<int>(gpus->size())) {
    std::string have;
    for (const auto& g : *gpus)
      have += (have.empty() ? "" : ", ") + std::to_string(g.ordinal) + ": " + g.name;
    return Error{
        ErrorCode::kFailedPrecondition,
        "--gpu " + std::to_string(gpu_ordinal) + ": no such GPU (this machine has " + have + ")"};
  }
  // PTX runs on its compute capability and later ones (the driver compiles it for the GPU).
  const codegen::cuda::GpuDevice& gpu = (*gpus)[static_cast<size_t>(gpu_ordinal)];
  if (gpu.compute_capability < net->compute_capability)
    return Error{
        ErrorCode::kFailedPrecondition,
        net->model + " is compiled for " + target + " but GPU " + std::to_string(gpu_ordinal) +
            " (" + gpu.name + ") is sm_" + std::to_string(gpu.compute_capability) +
            ": compile it again with --target cuda-sm" + std::to_string(gpu.compute_capability)};
  auto impl = std::make_unique<Impl>();
  impl->net = std::move(net);
  TT_ASSIGN_OR_RETURN(impl->module, GpuModule::load(gpu, impl->net->gpu_source, impl->net->gpu_ptx,
                                                    impl->net->gpu_kernels));
  TT_RETURN_IF_ERROR(impl->bind_buffers());
  TT_RETURN_IF_ERROR(impl->bind_steps());
  return std::unique_ptr<GpuExecution>(new GpuExecution(std::move(impl)));
}

const graph::MemoryPlan& GpuExecution::memory_plan() const { return impl_->plan; }

Status GpuExecution::set_input(ValueId input, const Tensor& value) {
  return upload(*impl_->module, impl_->value_ptr[input], value);
}

Status GpuExecution::run(std::vector<double>* step_seconds) {
  Impl& m = *impl_;
  if (step_seconds) step_seconds->resize(m.steps.size(), 0.0);
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const Stopwatch start;
    TT_RETURN_IF_ERROR(m.steps[i]());
    if (step_seconds) {
      TT_RETURN_IF_ERROR(m.module->synchronize());
      (*step_seconds)[i] += start.seconds();
    }
  }
  TT_RETURN_IF_ERROR(m.module->synchronize());
  m.outputs.clear();
  for (ValueId v : m.g().outputs()) {
    if (const Tensor* c = m.g().constant(v)) {
      m.outputs.push_back(*c);
      continue;
    }
    TT_ASSIGN_OR_RETURN(Tensor t, download(*m.module, m.value_ptr[v], m.g().type(v)));
    m.outputs.push_back(std::move(t));
  }
  return ok_status();
}

const std::vector<Tensor>& GpuExecution::outputs() const { return impl_->outputs; }

}  // namespace tensortune::runtime
