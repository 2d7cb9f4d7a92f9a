// Implements executor.h.
#include "compiler/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>

#include "compiler/codegen/cuda/emulator.h"
#include "compiler/graph/interpreter.h"
#include "compiler/runtime/gpu_executor.h"
#include "compiler/runtime/native_kernels.h"
#include "support/aligned_buffer.h"
#include "support/stopwatch.h"
#include "support/thread_pool.h"

namespace tensortune::runtime {

using graph::DType;
using graph::Tensor;
using graph::ValueId;

namespace {

// Values live in buffers at their dtype's width (uint8 one byte): what kernels read and write.
int64_t element_bytes(DType d) { return graph::buffer_element_size(d); }

/// 64-byte aligned bytes.
class Bytes {
 public:
  explicit Bytes(int64_t bytes) : buffer_((bytes + 3) / 4) {}
  void* data() { return buffer_.data(); }

 private:
  AlignedBuffer buffer_;
};

}  // namespace

std::string describe_target(const CompiledNetwork& network) {
  if (network.target == TargetKind::kCuda)
    return "cuda -arch=sm_" + std::to_string(network.compute_capability);
  return "llvm -mcpu=" + network.cpu.cpu;
}

const char* step_kind_name(Step::Kind kind) {
  switch (kind) {
    case Step::Kind::kKernel:
      return "kernel";
    case Step::Kind::kNative:
      return "native";
    case Step::Kind::kInterpret:
      return "interpret";
  }
  return "?";
}

struct Executable::Impl {
  std::shared_ptr<const CompiledNetwork> net;
  std::unique_ptr<ThreadPool> pool;
  std::optional<codegen::LoadedObject> object;
  std::optional<codegen::cuda::EmulatedModule> emulated;  ///< a CUDA network's kernels
  std::unique_ptr<GpuExecution> gpu;  ///< a CUDA network on a GPU: everything delegates
  graph::MemoryPlan plan;
  std::vector<std::unique_ptr<Bytes>> storage;  ///< arena, inputs, outputs, aligned weights
  std::vector<void*> value_ptr;                 ///< by value id; null: not materialised
  std::vector<void*> param_ptr;
  std::vector<std::function<Status()>> steps;
  /// By step: its parallel loop where it is one (a generated CPU kernel or a native loop);
  /// such steps back to back run as one sequence on the pool (one hand-off per run of steps).
  std::vector<std::optional<ParallelLoop>> loops;
  /// The steps in order as the runs `run` makes: [first, end) of `steps`, and the loops of a
  /// run of two or more parallel steps (empty for a step that runs alone).
  struct Run {
    size_t first = 0, end = 0;
    std::vector<ParallelLoop> sequence;
  };
  std::vector<Run> runs;
  bool batch_steps = true;
  /// By step: the whole loop of a kernel whose rows can be cut (Step::rows_follow_sequence).
  std::vector<std::optional<ParallelLoop>> whole_loops;
  int64_t active_rows = 0;  ///< 0: every row

  float* f32(ValueId v) const { return static_cast<float*>(value_ptr[v]); }
  /// The plan's view that `v` is, or null.
  const graph::BufferView* view_of(ValueId v) const {
    for (const graph::BufferView& view : plan.views)
      if (view.value == v) return &view;
    return nullptr;
  }

  void* allocate(int64_t bytes) {
    storage.push_back(std::make_unique<Bytes>(std::max<int64_t>(bytes, 64)));
    return storage.back()->data();
  }

  void parallel(int64_t extent, const std::function<void(int64_t, int64_t)>& fn) {
    pool->parallel_for(extent, fn);
  }

  Status bind_buffers();
  Status bind_steps();
  void plan_runs();
  void add_loop_step(ParallelLoop loop) {
    loops.push_back(std::move(loop));
    steps.push_back([this, i = loops.size() - 1]() {
      parallel(loops[i]->extent, loops[i]->body);
      return Status{};
    });
  }
  /// `step`'s loop over its first `blocks` row blocks only, the output's rows past them zeroed.
  ParallelLoop row_blocks_loop(const Step& step, const ParallelLoop& whole, int64_t blocks);
  void set_active_rows(int64_t rows);
  ParallelLoop bind_kernel(const Step& step, codegen::NetworkKernelFn fn);
  Expected<std::function<Status()>> bind_emulated(const Step& step);
  std::function<Status()> bind_interpreted(const Step& step);
};

Status Executable::Impl::bind_buffers() {
  const graph::Graph& g = net->graph;
  value_ptr.assign(g.values().size(), nullptr);
  // Reshapes of intermediate tensors are views: their steps copy nothing.
  plan = graph::plan_memory(g, 64, /*views=*/true);
  char* arena = static_cast<char*>(allocate(plan.arena_bytes));
  for (const auto& b : plan.buffers) value_ptr[b.value] = arena + b.offset;
  for (const auto& v : plan.views) value_ptr[v.value] = value_ptr[v.root];
  for (ValueId in : g.inputs())
    value_ptr[in] =
        allocate(graph::num_elements(g.type(in).shape) * element_bytes(g.type(in).dtype));
  for (ValueId out : g.outputs())
    if (!value_ptr[out] && !g.is_constant(out))
      value_ptr[out] =
          allocate(graph::num_elements(g.type(out).shape) * element_bytes(g.type(out).dtype));
  // Constants that kernels read get aligned copies, all in one buffer with the parameters: a
  // network streams them every run, and one buffer of 2 MiB or more gets huge pages (see
  // support/aligned_buffer.h) where each small tensor alone would take its TLB misses page by
  // page. The rest are read where they are.
  std::vector<bool> kernel_reads(g.values().size(), false);
  for (const Step& s : net->steps)
    for (const ArgRef& a : s.args)
      if (a.kind == ArgRef::Kind::kValue) kernel_reads[a.index] = true;
  // Where each copied tensor's address goes, and the tensor.
  std::vector<std::pair<void**, const Tensor*>> copies;
  for (size_t v = 0; v < g.values().size(); ++v) {
    const Tensor* c = g.constant(static_cast<ValueId>(v));
    if (!c) continue;
    if (!kernel_reads[v] && graph::is_float(c->dtype)) {
      value_ptr[v] = const_cast<float*>(c->f32.data());
      continue;
    }
    copies.emplace_back(&value_ptr[v], c);
  }
  param_ptr.assign(net->params.size(), nullptr);
  for (size_t i = 0; i < net->params.size(); ++i)
    copies.emplace_back(&param_ptr[i], &net->params[i]);
  auto padded_bytes = [](const Tensor& t) {
    return (std::max<int64_t>(t.size() * element_bytes(t.dtype), 1) + 63) / 64 * 64;
  };
  int64_t total = 0;
  for (const auto& [slot, t] : copies) total += padded_bytes(*t);
  char* next = static_cast<char*>(allocate(total));
  for (const auto& [slot, t] : copies) {
    *slot = next;
    graph::write_buffer(*t, next);
    next += padded_bytes(*t);
  }
  return Status{};
}

ParallelLoop Executable::Impl::bind_kernel(const Step& step, codegen::NetworkKernelFn fn) {
  std::vector<const float*> args;
  for (const ArgRef& a : step.args)
    args.push_back(static_cast<const float*>(a.kind == ArgRef::Kind::kValue ? value_ptr[a.index]
                                                                            : param_ptr[a.index]));
  return ParallelLoop{
      step.extent, [fn, args = std::move(args)](int64_t b, int64_t e) { fn(args.data(), b, e); }};
}

/// A CUDA network's kernel step, emulated: the grid's blocks split over the pool's threads.
Expected<std::function<Status()>> Executable::Impl::bind_emulated(const Step& step) {
  const auto& kernels = emulated->kernels();
  size_t index = 0;
  while (index < kernels.size() && kernels[index].entry != step.symbol) ++index;
  if (index == kernels.size())
    return data_loss("step " + step.label + " launches " + step.symbol +
                     ", which is not among the network's GPU kernels");
  if (kernels[index].arg_count != static_cast<int>(step.args.size()))
    return data_loss("step " + step.label + " passes " + std::to_string(step.args.size()) +
                     " arguments to " + step.symbol + ", which takes " +
                     std::to_string(kernels[index].arg_count));
  std::vector<float*> args;
  for (const ArgRef& a : step.args)
    args.push_back(static_cast<float*>(a.kind == ArgRef::Kind::kValue ? value_ptr[a.index]
                                                                      : param_ptr[a.index]));
  const codegen::cuda::EmulatedModule* module = &*emulated;
  ThreadPool* threads = pool.get();
  return std::function<Status()>(
      [module, index, args, threads]() { return module->launch(index, args, threads); });
}

/// The interpreter's code for one group: inputs copied out of the buffers, the nodes
/// evaluated in order, materialised results copied back.
std::function<Status()> Executable::Impl::bind_interpreted(const Step& step) {
  return [this, &step]() -> Status {
    const graph::Graph& g = net->graph;
    std::map<ValueId, Tensor> local;
    auto read = [&](ValueId v) -> const Tensor* {
      if (const Tensor* c = g.constant(v)) return c;
      auto it = local.find(v);
      if (it != local.end()) return &it->second;
      return &local.emplace(v, graph::read_buffer(g.type(v), value_ptr[v])).first->second;
    };
    // The interpreter's loops keep to this executable's threads.
    const graph::ScopedInterpreterPool threads(*pool);
    for (int i : step.nodes) {
      const graph::Node& n = g.nodes()[i];
      std::vector<const Tensor*> inputs;
      for (ValueId in : n.inputs) inputs.push_back(read(in));
      TT_ASSIGN_OR_RETURN(Tensor out, graph::evaluate_node(n, inputs, g.type(n.output)));
      if (void* dst = value_ptr[n.output]) graph::write_buffer(out, dst);
      local[n.output] = std::move(out);
    }
    return Status{};
  };
}

Status Executable::Impl::bind_steps() {
  const graph::Graph& g = net->graph;
  for (const Step& step : net->steps) {
    if (!value_ptr[step.output] && step.kind != Step::Kind::kInterpret)
      return internal_error("step " + step.label + ": its output is not materialised");
    switch (step.kind) {
      case Step::Kind::kKernel: {
        for (const ArgRef& a : step.args)
          if (a.kind == ArgRef::Kind::kValue && !value_ptr[a.index])
            return internal_error("step " + step.label + ": an argument is not materialised");
        if (emulated) {
          TT_ASSIGN_OR_RETURN(auto run, bind_emulated(step));
          steps.push_back(std::move(run));
          loops.emplace_back();
          break;
        }
        if (!object) return internal_error("the artifact has kernels but no object code");
        TT_ASSIGN_OR_RETURN(auto fn, object->lookup(step.symbol));
        add_loop_step(bind_kernel(step, fn));
        break;
      }
      case Step::Kind::kNative: {
        const graph::Node& n = g.nodes()[step.nodes.at(0)];
        if (const graph::BufferView* view = view_of(n.output)) {
          // A view: nothing to copy; a pad's view sets its tail to zero.
          char* tail = static_cast<char*>(value_ptr[view->root]) + view->zeroed_from;
          const auto bytes = static_cast<size_t>(view->zeroed_to - view->zeroed_from);
          add_loop_step(ParallelLoop{1, [tail, bytes](int64_t, int64_t) {
                                       if (bytes) std::memset(tail, 0, bytes);
                                     }});
          break;
        }
        std::vector<const float*> inputs;
        for (ValueId in : n.inputs) inputs.push_back(f32(in));
        TT_ASSIGN_OR_RETURN(NativeKernel k, bind_native(g, n, inputs, f32(n.output)));
        add_loop_step(ParallelLoop{k.extent, k.run});
        break;
      }
      case Step::Kind::kInterpret:
        steps.push_back(bind_interpreted(step));
        loops.emplace_back();
        break;
    }
  }
  whole_loops.assign(steps.size(), std::nullopt);
  for (size_t i = 0; i < net->steps.size() && i < loops.size(); ++i) {
    const Step& s = net->steps[i];
    if (s.kind == Step::Kind::kKernel && s.rows_follow_sequence && s.rows_per_block > 0 &&
        loops[i] && !emulated)
      whole_loops[i] = loops[i];
  }
  plan_runs();
  return Status{};
}

ParallelLoop Executable::Impl::row_blocks_loop(const Step& step, const ParallelLoop& whole,
                                               int64_t blocks) {
  const graph::TensorType& out = net->graph.type(step.output);
  const int64_t rows = out.shape[out.shape.size() - 2], cols = out.shape.back();
  const int64_t matrices = graph::num_elements(out.shape) / std::max<int64_t>(rows * cols, 1);
  const int64_t first_zero = std::min(rows, blocks * step.rows_per_block);
  const int64_t row_bytes = cols * element_bytes(out.dtype);
  char* data = static_cast<char*>(value_ptr[step.output]);
  const int64_t span = blocks * step.row_inner, whole_span = step.row_blocks * step.row_inner;
  const int64_t outer = step.extent / whole_span;
  return ParallelLoop{outer * span, [=, body = whole.body](int64_t b, int64_t e) {
                        // The rows no block computes: zero, so that what reads them (a product
                        // with masked weights) sees finite values, not an older tensor's.
                        if (b == 0 && first_zero < rows)
                          for (int64_t m = 0; m < matrices; ++m)
                            std::memset(data + (m * rows + first_zero) * row_bytes, 0,
                                        static_cast<size_t>((rows - first_zero) * row_bytes));
                        for (int64_t j = b; j < e;) {
                          const int64_t o = j / span, at = j % span;
                          const int64_t n = std::min(e - j, span - at);
                          body(o * whole_span + at, o * whole_span + at + n);
                          j += n;
                        }
                      }};
}

void Executable::Impl::set_active_rows(int64_t rows) {
  if (rows == active_rows || gpu) return;
  active_rows = rows;
  for (size_t i = 0; i < whole_loops.size(); ++i) {
    if (!whole_loops[i]) continue;
    const Step& step = net->steps[i];
    const int64_t blocks =
        rows <= 0
            ? step.row_blocks
            : std::min(step.row_blocks, (rows + step.rows_per_block - 1) / step.rows_per_block);
    loops[i] = blocks == step.row_blocks ? *whole_loops[i]
                                         : row_blocks_loop(step, *whole_loops[i], blocks);
  }
  plan_runs();
}

void Executable::Impl::plan_runs() {
  runs.clear();
  for (size_t i = 0; i < steps.size();) {
    Run r{i, i + 1, {}};
    if (batch_steps && loops[i]) {
      while (r.end < steps.size() && loops[r.end]) ++r.end;
      if (r.end - r.first > 1)
        for (size_t k = r.first; k < r.end; ++k) r.sequence.push_back(*loops[k]);
    }
    runs.push_back(std::move(r));
    i = runs.back().end;
  }
}

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::~Executable() = default;

Expected<std::unique_ptr<Executable>> Executable::load(
    std::shared_ptr<const CompiledNetwork> network, int threads, bool emulate, int gpu) {
  if (threads < 1)
    return invalid_argument("threads = " + std::to_string(threads) + ", must be at least 1");
  if (network->target == TargetKind::kCuda) {
    if (!emulate) {
#ifdef TT_WITH_CUDA
      auto impl = std::make_unique<Impl>();
      impl->pool = std::make_unique<ThreadPool>(1);
      TT_ASSIGN_OR_RETURN(impl->gpu, GpuExecution::load(network, gpu));
      impl->net = std::move(network);
      return std::unique_ptr<Executable>(new Executable(std::move(impl)));
#else
      return Error{ErrorCode::kFailedPrecondition,
                   network->model + " is compiled for " + describe_target(*network) +
                       " and this tensortune was built without the CUDA Toolkit, so it runs GPU "
                       "networks only emulated on the CPU (`tensortune run --emulate`)"};
#endif
    }
    auto impl = std::make_unique<Impl>();
    impl->net = std::move(network);
    impl->pool = std::make_unique<ThreadPool>(threads);
    TT_ASSIGN_OR_RETURN(auto module,
                        codegen::cuda::compile_module_for_emulation(impl->net->gpu_kernels));
    impl->emulated.emplace(std::move(module));
    TT_RETURN_IF_ERROR(impl->bind_buffers());
    TT_RETURN_IF_ERROR(impl->bind_steps());
    return std::unique_ptr<Executable>(new Executable(std::move(impl)));
  }
  if (emulate)
    return invalid_argument("--emulate runs networks compiled for cuda; " + network->model +
                            " is compiled for " + describe_target(*network));
  const codegen::CpuDescription here = codegen::host_cpu();
  const auto missing = codegen::missing_features(network->cpu, here);
  if (network->cpu.triple != here.triple || !missing.empty()) {
    std::string names;
    for (const auto& f : missing) names += (names.empty() ? "" : ", ") + f;
    return Error{ErrorCode::kFailedPrecondition,
                 "compiled for " + network->cpu.triple + " cpu " + network->cpu.cpu +
                     ", but this machine is " + here.triple + " cpu " + here.cpu +
                     (names.empty() ? std::string() : " and lacks the features " + names) +
                     ": compile the model again on this machine"};
  }
  auto impl = std::make_unique<Impl>();
  impl->net = std::move(network);
  impl->pool = std::make_unique<ThreadPool>(threads);
  if (!impl->net->object_code.empty()) {
    TT_ASSIGN_OR_RETURN(auto object, codegen::LoadedObject::load(impl->net->object_code));
    impl->object.emplace(std::move(object));
  }
  TT_RETURN_IF_ERROR(impl->bind_buffers());
  TT_RETURN_IF_ERROR(impl->bind_steps());
  return std::unique_ptr<Executable>(new Executable(std::move(impl)));
}

const CompiledNetwork& Executable::network() const { return *impl_->net; }
int Executable::threads() const { return impl_->pool->size(); }

void Executable::set_active_rows(int64_t rows) { impl_->set_active_rows(rows); }

void Executable::set_step_batching(bool on) {
  impl_->batch_steps = on;
  impl_->plan_runs();
}
const graph::MemoryPlan& Executable::memory_plan() const {
  return impl_->gpu ? impl_->gpu->memory_plan() : impl_->plan;
}

Status Executable::set_input(const std::string& name, const Tensor& value) {
  if (impl_->gpu) {
    TT_RETURN_IF_ERROR(check_input(name, value.type()));
    return impl_->gpu->set_input(impl_->net->graph.find_input(name), value);
  }
  return set_input(name, value.type(),
                   graph::is_float(value.dtype) ? static_cast<const void*>(value.f32.data())
                                                : static_cast<const void*>(value.i64.data()));
}

Status Executable::set_input(const std::string& name, const graph::TensorType& type,
                             const void* data) {
  TT_RETURN_IF_ERROR(check_input(name, type));
  const ValueId id = impl_->net->graph.find_input(name);
  if (impl_->gpu) return impl_->gpu->set_input(id, graph::tensor_from_storage(type, data));
  if (graph::is_float(type.dtype)) {
    const size_t bytes = static_cast<size_t>(graph::num_elements(type.shape) * 4);
    if (bytes > 0) std::memcpy(impl_->value_ptr[id], data, bytes);
    return Status{};
  }
  graph::write_buffer(graph::tensor_from_storage(type, data), impl_->value_ptr[id]);
  return Status{};
}

Expected<graph::TensorType> Executable::input_type(const std::string& name) const {
  const graph::Graph& g = impl_->net->graph;
  const ValueId id = g.find_input(name);
  if (id == graph::kNoValue) {
    std::string names;
    for (ValueId in : g.inputs()) names += (names.empty() ? "" : ", ") + g.value(in).name;
    return invalid_argument("input '" + name +
                            "' is not an input of the network (its inputs: " + names + ")");
  }
  return g.type(id);
}

Status Executable::check_input(const std::string& name, const graph::TensorType& type) const {
  TT_ASSIGN_OR_RETURN(graph::TensorType want, input_type(name));
  if (type != want)
    return invalid_argument("input '" + name + "' is " + graph::type_string(type) +
                            ", the network takes " + graph::type_string(want));
  return Status{};
}

Status Executable::run(std::vector<double>* step_seconds) {
  if (impl_->gpu) return impl_->gpu->run(step_seconds);
  auto& steps = impl_->steps;
  if (!step_seconds) {
    for (const Impl::Run& r : impl_->runs) {
      if (!r.sequence.empty()) {
        impl_->pool->parallel_for_sequence(r.sequence);
        continue;
      }
      for (size_t i = r.first; i < r.end; ++i) TT_RETURN_IF_ERROR(steps[i]());
    }
    return Status{};
  }
  step_seconds->resize(steps.size(), 0.0);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Stopwatch start;
    TT_RETURN_IF_ERROR(steps[i]());
    (*step_seconds)[i] += start.seconds();
  }
  return Status{};
}

std::vector<Tensor> Executable::outputs() const {
  if (impl_->gpu) return impl_->gpu->outputs();
  const graph::Graph& g = impl_->net->graph;
  std::vector<Tensor> out;
  for (ValueId v : g.outputs()) {
    if (const Tensor* c = g.constant(v)) {
      out.push_back(*c);
      continue;
    }
    out.push_back(graph::read_buffer(g.type(v), impl_->value_ptr[v]));
  }
  return out;
}

Expected<std::vector<Tensor>> Executable::run(const std::map<std::string, Tensor>& inputs) {
  const graph::Graph& g = impl_->net->graph;
  for (ValueId in : g.inputs())
    if (!inputs.count(g.value(in).name))
      return invalid_argument("input '" + g.value(in).name + "' is missing");
  for (const auto& [name, value] : inputs) TT_RETURN_IF_ERROR(set_input(name, value));
  TT_RETURN_IF_ERROR(run(nullptr));
  return outputs();
}

}  // namespace tensortune::runtime
