#include "compiler/codegen/cuda/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <map>
#include <mutex>

#include "compiler/codegen/cuda/library_search.h"
#include "compiler/codegen/cuda/nvrtc.h"
#include "schedule_space/measure.h"
#include "support/stopwatch.h"

namespace tensortune::codegen::cuda {
namespace {

// The driver entry points used, by their versioned symbol names where the API has versions.
struct DriverApi {
  decltype(&cuInit) init = nullptr;
  decltype(&cuGetErrorString) error_string = nullptr;
  decltype(&cuDeviceGetCount) device_count = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetName) device_name = nullptr;
  decltype(&cuDeviceGetAttribute) attribute = nullptr;
  decltype(&cuDeviceTotalMem_v2) total_mem = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) ctx_retain = nullptr;
  decltype(&cuDevicePrimaryCtxReset_v2) ctx_reset = nullptr;
  decltype(&cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&cuModuleLoadDataEx) module_load_ex = nullptr;
  decltype(&cuModuleUnload) module_unload = nullptr;
  decltype(&cuModuleGetFunction) module_function = nullptr;
  decltype(&cuFuncGetAttribute) function_attribute = nullptr;
  decltype(&cuFuncSetAttribute) set_function_attribute = nullptr;
  decltype(&cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&cuMemFree_v2) mem_free = nullptr;
  decltype(&cuMemcpyHtoD_v2) copy_to_device = nullptr;
  decltype(&cuMemcpyDtoH_v2) copy_to_host = nullptr;
  decltype(&cuMemcpyDtoDAsync_v2) copy_on_device = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuMemsetD8_v2) memset8 = nullptr;
  decltype(&cuEventCreate) event_create = nullptr;
  decltype(&cuEventRecord) event_record = nullptr;
  decltype(&cuEventSynchronize) event_synchronize = nullptr;
  decltype(&cuEventElapsedTime_v2) event_elapsed = nullptr;
  decltype(&cuEventDestroy_v2) event_destroy = nullptr;
  std::string error;
};

const DriverApi& driver() {
  static const DriverApi api = [] {
    DriverApi a;
    const OpenedLibrary lib = open_cuda_library("TT_LIBCUDA", {"libcuda.so.1"}, "");
    void* h = lib.handle;
    if (!h) {
      a.error = "no CUDA driver on this machine (libcuda.so.1 cannot be opened; " + lib.tried() +
                "; TT_LIBCUDA names it where it is elsewhere)";
      return a;
    }
    auto load = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, symbol));
      if (!fn && a.error.empty()) a.error = std::string("the CUDA driver has no ") + symbol;
    };
    load(a.init, "cuInit");
    load(a.error_string, "cuGetErrorString");
    load(a.device_count, "cuDeviceGetCount");
    load(a.device_get, "cuDeviceGet");
    load(a.device_name, "cuDeviceGetName");
    load(a.attribute, "cuDeviceGetAttribute");
    load(a.total_mem, "cuDeviceTotalMem_v2");
    load(a.ctx_retain, "cuDevicePrimaryCtxRetain");
    load(a.ctx_reset, "cuDevicePrimaryCtxReset_v2");
    load(a.ctx_set_current, "cuCtxSetCurrent");
    load(a.ctx_synchronize, "cuCtxSynchronize");
    load(a.module_load_ex, "cuModuleLoadDataEx");
    load(a.module_unload, "cuModuleUnload");
    load(a.module_function, "cuModuleGetFunction");
    load(a.function_attribute, "cuFuncGetAttribute");
    load(a.set_function_attribute, "cuFuncSetAttribute");
    load(a.mem_alloc, "cuMemAlloc_v2");
    load(a.mem_free, "cuMemFree_v2");
    load(a.copy_to_device, "cuMemcpyHtoD_v2");
    load(a.copy_to_host, "cuMemcpyDtoH_v2");
    load(a.copy_on_device, "cuMemcpyDtoDAsync_v2");
    load(a.launch, "cuLaunchKernel");
    load(a.memset8, "cuMemsetD8_v2");
    load(a.event_create, "cuEventCreate");
    load(a.event_record, "cuEventRecord");
    load(a.event_synchronize, "cuEventSynchronize");
    // CUDA 13 renamed it; drivers before 12.8 have only the first name.
    a.event_elapsed =
        reinterpret_cast<decltype(a.event_elapsed)>(dlsym(h, "cuEventElapsedTime_v2"));
    if (!a.event_elapsed) load(a.event_elapsed, "cuEventElapsedTime");
    load(a.event_destroy, "cuEventDestroy_v2");
    if (a.error.empty()) {
      if (CUresult r = a.init(0); r != CUDA_SUCCESS) {
        const char* text = nullptr;
        a.error_string(r, &text);
        a.error = std::string("the CUDA driver failed to initialise: ") + (text ? text : "?");
      }
    }
    return a;
  }();
  return api;
}

// The errors after which every later call in the context fails too ("sticky"): a fault inside a
// kernel. Everything else (a refused launch, an allocation failure) leaves the context working.
bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

Error cuda_error(const DriverApi& api, CUresult r, const std::string& what) {
  const char* text = nullptr;
  api.error_string(r, &text);
  std::string message = what + ": " + (text ? text : "unknown CUDA error") + " (CUDA error " +
                        std::to_string(static_cast<int>(r)) + ")";
  if (is_sticky(r)) message += "; " + std::string(schedule_space::kGpuContextLost);
  return internal_error(message);
}

#define TT_CU(api, call, what)                                                      \
  do {                                                                              \
    if (CUresult r_ = (call); r_ != CUDA_SUCCESS) return cuda_error(api, r_, what); \
  } while (0)

// The primary context of a device, retained once per process and kept: releasing the last
// reference destroys the context with everything in it, and a measurer makes a runner per
// config (a context per config would cost its creation and every module's reload each time).
struct RetainedContexts {
  std::mutex mu;
  std::map<int, CUcontext> by_ordinal;
};
RetainedContexts& retained_contexts() {
  static auto* contexts = new RetainedContexts;  // never destroyed, as the contexts
  return *contexts;
}

Expected<CUcontext> primary_context(const DriverApi& api, int ordinal) {
  RetainedContexts& r = retained_contexts();
  std::lock_guard lock(r.mu);
  if (auto it = r.by_ordinal.find(ordinal); it != r.by_ordinal.end()) return it->second;
  CUdevice dev = 0;
  TT_CU(api, api.device_get(&dev, ordinal), "cuDeviceGet");
  CUcontext ctx = nullptr;
  TT_CU(api, api.ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  r.by_ordinal.emplace(ordinal, ctx);
  return ctx;
}

// Loads a module image (a cubin, or PTX the driver JIT-compiles), with the JIT's error log in
// the error.
Expected<CUmodule> load_module(const DriverApi& api, const void* image, const std::string& what) {
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
  CUmodule module = nullptr;
  if (CUresult r = api.module_load_ex(&module, image, 2, options, values); r != CUDA_SUCCESS) {
    Error e = cuda_error(api, r, what);
    if (log[0]) e.message += "; JIT log: " + std::string(log);
    return e;
  }
  return module;
}

// A kernel's function opted into its dynamic shared memory: beyond 48 KiB a launch that asks
// for it fails unless the function's attribute allows it (the device's own limit was checked).
Status allow_dynamic_shared(const DriverApi& api, CUfunction fn, const CudaKernelSource& k) {
  if (k.dynamic_shared_bytes <= 48 * 1024) return ok_status();
  TT_CU(api,
        api.set_function_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(k.dynamic_shared_bytes)),
        "allowing " + k.entry + " " + std::to_string(k.dynamic_shared_bytes) +
            " bytes of dynamic shared memory");
  return ok_status();
}

}  // namespace

Status reset_gpu_context(const GpuDevice& device) {
  const DriverApi& api = driver();
  if (!api.error.empty()) return unavailable(api.error);
  RetainedContexts& r = retained_contexts();
  std::lock_guard lock(r.mu);
  CUdevice dev = 0;
  TT_CU(api, api.device_get(&dev, device.ordinal), "cuDeviceGet");
  TT_CU(api, api.ctx_reset(dev), "cuDevicePrimaryCtxReset");
  r.by_ordinal.erase(device.ordinal);  // the next runner retains the fresh context
  return ok_status();
}

Expected<std::vector<GpuDevice>> list_gpus() {
  const DriverApi& api = driver();
  if (!api.error.empty()) return unavailable(api.error);
  int count = 0;
  TT_CU(api, api.device_count(&count), "cuDeviceGetCount");
  if (count == 0) return unavailable("the CUDA driver reports no GPU");
  std::vector<GpuDevice> out;
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    TT_CU(api, api.device_get(&dev, i), "cuDeviceGet");
    GpuDevice d;
    d.ordinal = i;
    char name[256] = {};
    api.device_name(name, sizeof name, dev);
    d.name = name;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      api.attribute(&v, a, dev);
      return v;
    };
    d.compute_capability = 10 * attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
                           attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    d.limits.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d.limits.max_shared_bytes_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    d.limits.max_dynamic_shared_bytes_per_block =
        std::max<int64_t>(d.limits.max_shared_bytes_per_block,
                          attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    d.limits.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d.limits.max_block_dims = {attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
                               attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                               attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)};
    d.limits.max_grid_dims = {attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
                              attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                              attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)};
    d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    size_t bytes = 0;
    api.total_mem(&bytes, dev);
    d.memory_bytes = static_cast<int64_t>(bytes);
    out.push_back(std::move(d));
  }
  return out;
}

struct GpuKernelRunner::Impl {
  const DriverApi& api = driver();
  CUcontext ctx = nullptr;  ///< the device's primary context (kept for the process)
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  CUdeviceptr data = 0, weight = 0, out = 0, scratch = 0;
  std::vector<CUdeviceptr> operands;
  size_t scratch_bytes = 0;
  CUevent base = nullptr, now = nullptr;
  CudaKernelSource kernel;
  int64_t out_floats = 0;
  int registers = 0;
  double compile_s = 0;

  ~Impl() {
    if (!ctx || api.ctx_set_current(ctx) != CUDA_SUCCESS) return;
    for (CUdeviceptr p : {data, weight, out, scratch})
      if (p) api.mem_free(p);
    for (CUdeviceptr p : operands)
      if (p) api.mem_free(p);
    if (base) api.event_destroy(base);
    if (now) api.event_destroy(now);
    if (module) api.module_unload(module);
  }
};

GpuKernelRunner::GpuKernelRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuKernelRunner::~GpuKernelRunner() = default;
int64_t GpuKernelRunner::registers_per_thread() const { return impl_->registers; }
double GpuKernelRunner::compile_seconds() const { return impl_->compile_s; }

Expected<CompiledKernel> compile_for_gpu(const GpuDevice& device, const CudaKernelSource& kernel) {
  TT_RETURN_IF_ERROR(schedule_space::check_gpu_limits(kernel.usage(), device.limits));
  const Stopwatch t0;
  TT_ASSIGN_OR_RETURN(NvrtcOutput out,
                      nvrtc_compile(kernel, device.compute_capability, /*cubin=*/true));
  return CompiledKernel{std::move(out.cubin), t0.seconds()};
}

Expected<std::unique_ptr<GpuKernelRunner>> GpuKernelRunner::create(
    const GpuDevice& device, const CudaKernelSource& kernel, const std::vector<float>& data,
    const std::vector<float>& weight, const std::vector<std::vector<float>>& operands,
    int64_t out_floats) {
  if (const DriverApi& api = driver(); !api.error.empty()) return unavailable(api.error);
  TT_ASSIGN_OR_RETURN(CompiledKernel compiled, compile_for_gpu(device, kernel));
  return create(device, kernel, compiled, data, weight, operands, out_floats);
}

Expected<std::unique_ptr<GpuKernelRunner>> GpuKernelRunner::create(
    const GpuDevice& device, const CudaKernelSource& kernel, const CompiledKernel& compiled,
    const std::vector<float>& data, const std::vector<float>& weight,
    const std::vector<std::vector<float>>& operands, int64_t out_floats) {
  const DriverApi& api = driver();
  if (!api.error.empty()) return unavailable(api.error);
  if (static_cast<int>(operands.size()) != kernel.epilogue_operands)
    return invalid_argument(kernel.entry + " takes " + std::to_string(kernel.epilogue_operands) +
                            " epilogue operands, not " + std::to_string(operands.size()));
  TT_RETURN_IF_ERROR(schedule_space::check_gpu_limits(kernel.usage(), device.limits));
  auto impl = std::make_unique<Impl>();
  impl->compile_s = compiled.compile_seconds;
  impl->kernel = kernel;
  impl->out_floats = out_floats;
  TT_ASSIGN_OR_RETURN(impl->ctx, primary_context(api, device.ordinal));
  TT_CU(api, api.ctx_set_current(impl->ctx), "cuCtxSetCurrent");
  TT_ASSIGN_OR_RETURN(impl->module, load_module(api, compiled.cubin.data(), kLoadingCubin));
  TT_CU(api, api.module_function(&impl->fn, impl->module, kernel.entry.c_str()),
        "cuModuleGetFunction");
  TT_RETURN_IF_ERROR(allow_dynamic_shared(api, impl->fn, kernel));
  int max_threads = 0;
  api.function_attribute(&impl->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, impl->fn);
  api.function_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, impl->fn);
  schedule_space::GpuKernelUsage usage = kernel.usage();
  usage.registers_per_thread = impl->registers;
  TT_RETURN_IF_ERROR(schedule_space::check_gpu_limits(usage, device.limits));
  if (kernel.block.count() > max_threads)
    return Error{ErrorCode::kFailedPrecondition,
                 "threads per block = " + std::to_string(kernel.block.count()) +
                     " exceeds what the compiled kernel allows (" + std::to_string(max_threads) +
                     ")"};
  auto upload = [&](CUdeviceptr& p, const std::vector<float>& host) -> Status {
    TT_CU(api, api.mem_alloc(&p, std::max<size_t>(4, 4 * host.size())), "cuMemAlloc");
    if (!host.empty())
      TT_CU(api, api.copy_to_device(p, host.data(), 4 * host.size()), "cuMemcpyHtoD");
    return ok_status();
  };
  TT_RETURN_IF_ERROR(upload(impl->data, data));
  TT_RETURN_IF_ERROR(upload(impl->weight, weight));
  for (const std::vector<float>& host : operands)
    TT_RETURN_IF_ERROR(upload(impl->operands.emplace_back(0), host));
  TT_CU(api, api.mem_alloc(&impl->out, 4 * static_cast<size_t>(out_floats)), "cuMemAlloc");
  impl->scratch_bytes = static_cast<size_t>(std::max<int64_t>(2 * device.l2_bytes, 1 << 20));
  TT_CU(api, api.event_create(&impl->base, CU_EVENT_DEFAULT), "cuEventCreate");
  TT_CU(api, api.event_create(&impl->now, CU_EVENT_DEFAULT), "cuEventCreate");
  TT_CU(api, api.event_record(impl->base, nullptr), "cuEventRecord");
  return std::unique_ptr<GpuKernelRunner>(new GpuKernelRunner(std::move(impl)));
}

Status GpuKernelRunner::launch() {
  Impl& m = *impl_;
  TT_CU(m.api, m.api.ctx_set_current(m.ctx), "cuCtxSetCurrent");
  const CudaKernelSource& k = m.kernel;
  std::vector<void*> args{&m.data, &m.weight, &m.out};
  for (CUdeviceptr& p : m.operands) args.push_back(&p);
  TT_CU(m.api,
        m.api.launch(m.fn, static_cast<unsigned>(k.grid.x), static_cast<unsigned>(k.grid.y),
                     static_cast<unsigned>(k.grid.z), static_cast<unsigned>(k.block.x),
                     static_cast<unsigned>(k.block.y), static_cast<unsigned>(k.block.z),
                     static_cast<unsigned>(k.dynamic_shared_bytes), nullptr, args.data(), nullptr),
        "launching " + k.entry);
  return ok_status();
}

Expected<double> GpuKernelRunner::clock() {
  Impl& m = *impl_;
  TT_CU(m.api, m.api.ctx_set_current(m.ctx), "cuCtxSetCurrent");
  TT_CU(m.api, m.api.event_record(m.now, nullptr), "cuEventRecord");
  TT_CU(m.api, m.api.event_synchronize(m.now), "running " + m.kernel.entry);
  float ms = 0;
  TT_CU(m.api, m.api.event_elapsed(&ms, m.base, m.now), "cuEventElapsedTime");
  return ms / 1000.0;
}

Status GpuKernelRunner::flush_l2() {
  Impl& m = *impl_;
  TT_CU(m.api, m.api.ctx_set_current(m.ctx), "cuCtxSetCurrent");
  if (!m.scratch)
    TT_CU(m.api, m.api.mem_alloc(&m.scratch, m.scratch_bytes), "cuMemAlloc (L2 flush buffer)");
  TT_CU(m.api, m.api.memset8(m.scratch, 0, m.scratch_bytes), "cuMemsetD8 (L2 flush)");
  return ok_status();
}

Expected<std::vector<float>> GpuKernelRunner::output() {
  Impl& m = *impl_;
  TT_CU(m.api, m.api.ctx_set_current(m.ctx), "cuCtxSetCurrent");
  TT_CU(m.api, m.api.ctx_synchronize(), "running " + m.kernel.entry);
  std::vector<float> out(static_cast<size_t>(m.out_floats));
  TT_CU(m.api, m.api.copy_to_host(out.data(), m.out, 4 * out.size()), "cuMemcpyDtoH");
  return out;
}

Expected<GpuRun> run_on_gpu(const GpuDevice& device, const CudaKernelSource& kernel,
                            const std::vector<float>& data, const std::vector<float>& weight,
                            const std::vector<std::vector<float>>& operands, int64_t out_floats,
                            int runs) {
  TT_ASSIGN_OR_RETURN(auto runner,
                      GpuKernelRunner::create(device, kernel, data, weight, operands, out_floats));
  TT_RETURN_IF_ERROR(runner->launch());
  GpuRun run;
  TT_ASSIGN_OR_RETURN(run.out, runner->output());
  run.registers_per_thread = runner->registers_per_thread();
  if (runs > 0) {
    TT_ASSIGN_OR_RETURN(double t0, runner->clock());
    for (int i = 0; i < runs; ++i) TT_RETURN_IF_ERROR(runner->launch());
    TT_ASSIGN_OR_RETURN(double t1, runner->clock());
    run.seconds_per_run = (t1 - t0) / runs;
  }
  return run;
}

struct GpuModule::Impl {
  const DriverApi& api = driver();
  GpuDevice device;
  CUcontext ctx = nullptr;  ///< the device's primary context (kept for the process)
  CUmodule module = nullptr;
  std::vector<CudaKernelSource> kernels;
  std::vector<CUfunction> functions;
  std::vector<CUdeviceptr> allocations;

  ~Impl() {
    if (!ctx || api.ctx_set_current(ctx) != CUDA_SUCCESS) return;
    for (CUdeviceptr p : allocations) api.mem_free(p);
    if (module) api.module_unload(module);
  }
};

GpuModule::GpuModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuModule::~GpuModule() = default;
const std::vector<CudaKernelSource>& GpuModule::kernels() const { return impl_->kernels; }
const GpuDevice& GpuModule::device() const { return impl_->device; }

Expected<std::unique_ptr<GpuModule>> GpuModule::load(const GpuDevice& device,
                                                     const std::string& source,
                                                     const std::string& ptx,
                                                     const std::vector<CudaKernelSource>& kernels) {
  const DriverApi& api = driver();
  if (!api.error.empty()) return unavailable(api.error);
  for (const CudaKernelSource& k : kernels)
    if (auto fits = schedule_space::check_gpu_limits(k.usage(), device.limits); !fits)
      return fits.error().with_context("kernel " + k.entry);
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->kernels = kernels;
  TT_ASSIGN_OR_RETURN(impl->ctx, primary_context(api, device.ordinal));
  TT_CU(api, api.ctx_set_current(impl->ctx), "cuCtxSetCurrent");
  CudaKernelSource whole;
  whole.entry = "network";
  whole.source = source;
  auto cubin_for_this_gpu = [&]() -> Expected<std::string> {
    TT_ASSIGN_OR_RETURN(NvrtcOutput out, nvrtc_compile(whole, device.compute_capability, true));
    return std::move(out.cubin);
  };
  if (ptx.empty()) {  // compiled here, for this device
    TT_ASSIGN_OR_RETURN(std::string cubin, cubin_for_this_gpu());
    TT_ASSIGN_OR_RETURN(impl->module,
                        load_module(api, cubin.data(), "loading the network's cubin"));
  } else if (auto loaded = load_module(api, ptx.c_str(), "loading the network's PTX")) {
    impl->module = *loaded;
  } else {
    // The driver refused the PTX (an NVRTC newer than the driver wrote it, say): a cubin
    // built here from the artifact's source, where NVRTC is.
    auto cubin = cubin_for_this_gpu();
    if (!cubin)
      return internal_error(
          loaded.error().message +
          "; and no cubin could be built from the source instead: " + cubin.error().message);
    TT_ASSIGN_OR_RETURN(impl->module,
                        load_module(api, cubin->data(), "loading the network's cubin"));
  }
  for (const CudaKernelSource& k : kernels) {
    CUfunction fn = nullptr;
    TT_CU(api, api.module_function(&fn, impl->module, k.entry.c_str()),
          "finding kernel " + k.entry);
    schedule_space::GpuKernelUsage usage = k.usage();
    int registers = 0, max_threads = 0;
    api.function_attribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
    api.function_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    usage.registers_per_thread = registers;
    if (auto fits = schedule_space::check_gpu_limits(usage, device.limits); !fits)
      return fits.error().with_context("kernel " + k.entry);
    TT_RETURN_IF_ERROR(allow_dynamic_shared(api, fn, k));
    if (k.block.count() > max_threads)
      return Error{ErrorCode::kFailedPrecondition,
                   "kernel " + k.entry +
                       ": threads per block = " + std::to_string(k.block.count()) +
                       " exceeds what it allows (" + std::to_string(max_threads) + ")"};
    impl->functions.push_back(fn);
  }
  return std::unique_ptr<GpuModule>(new GpuModule(std::move(impl)));
}

Expected<uint64_t> GpuModule::allocate(int64_t bytes) {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  Impl& m = *impl_;
  CUdeviceptr p = 0;
  TT_CU(m.api, m.api.mem_alloc(&p, static_cast<size_t>(std::max<int64_t>(bytes, 4))),
        "allocating " + std::to_string(bytes) + " bytes on the GPU");
  m.allocations.push_back(p);
  return static_cast<uint64_t>(p);
}

Status GpuModule::upload(uint64_t device, const void* host, int64_t bytes) {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  if (bytes <= 0) return ok_status();
  TT_CU(impl_->api, impl_->api.copy_to_device(device, host, static_cast<size_t>(bytes)),
        "cuMemcpyHtoD");
  return ok_status();
}

Status GpuModule::download(void* host, uint64_t device, int64_t bytes) {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  if (bytes <= 0) return ok_status();
  TT_CU(impl_->api, impl_->api.copy_to_host(host, device, static_cast<size_t>(bytes)),
        "cuMemcpyDtoH (after the queued kernels)");
  return ok_status();
}

Status GpuModule::copy(uint64_t to, uint64_t from, int64_t bytes) {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  if (bytes <= 0) return ok_status();
  TT_CU(impl_->api, impl_->api.copy_on_device(to, from, static_cast<size_t>(bytes), nullptr),
        "cuMemcpyDtoDAsync");
  return ok_status();
}

Status GpuModule::launch(size_t index, const std::vector<uint64_t>& args) {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  Impl& m = *impl_;
  if (index >= m.kernels.size())
    return invalid_argument("kernel " + std::to_string(index) + " of a module of " +
                            std::to_string(m.kernels.size()));
  const CudaKernelSource& k = m.kernels[index];
  if (static_cast<int>(args.size()) != k.arg_count)
    return invalid_argument(k.entry + " takes " + std::to_string(k.arg_count) + " arguments, not " +
                            std::to_string(args.size()));
  std::vector<CUdeviceptr> values(args.begin(), args.end());
  std::vector<void*> params;
  for (CUdeviceptr& v : values) params.push_back(&v);
  TT_CU(m.api,
        m.api.launch(
            m.functions[index], static_cast<unsigned>(k.grid.x), static_cast<unsigned>(k.grid.y),
            static_cast<unsigned>(k.grid.z), static_cast<unsigned>(k.block.x),
            static_cast<unsigned>(k.block.y), static_cast<unsigned>(k.block.z),
            static_cast<unsigned>(k.dynamic_shared_bytes), nullptr, params.data(), nullptr),
        "launching " + k.entry);
  return ok_status();
}

Status GpuModule::synchronize() {
  TT_CU(impl_->api, impl_->api.ctx_set_current(impl_->ctx), "cuCtxSetCurrent");
  TT_CU(impl_->api, impl_->api.ctx_synchronize(), "running the network on the GPU");
  return ok_status();
}

}  // namespace tensortune::codegen::cuda
