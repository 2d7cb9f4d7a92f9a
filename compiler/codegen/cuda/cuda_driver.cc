#include "compiler/codegen/cuda/cuda_driver.h"

#include <cuda.h>
#include <dlfcn.h>

#include "compiler/codegen/cuda/nvrtc.h"

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
  decltype(&cuDevicePrimaryCtxRelease_v2) ctx_release = nullptr;
  decltype(&cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&cuModuleLoadData) module_load = nullptr;
  decltype(&cuModuleUnload) module_unload = nullptr;
  decltype(&cuModuleGetFunction) module_function = nullptr;
  decltype(&cuFuncGetAttribute) function_attribute = nullptr;
  decltype(&cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&cuMemFree_v2) mem_free = nullptr;
  decltype(&cuMemcpyHtoD_v2) copy_to_device = nullptr;
  decltype(&cuMemcpyDtoH_v2) copy_to_host = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
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
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      a.error = "no CUDA driver on this machine (libcuda.so.1 cannot be opened: " +
                std::string(dlerror()) + ")";
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
    load(a.ctx_release, "cuDevicePrimaryCtxRelease_v2");
    load(a.ctx_set_current, "cuCtxSetCurrent");
    load(a.ctx_synchronize, "cuCtxSynchronize");
    load(a.module_load, "cuModuleLoadData");
    load(a.module_unload, "cuModuleUnload");
    load(a.module_function, "cuModuleGetFunction");
    load(a.function_attribute, "cuFuncGetAttribute");
    load(a.mem_alloc, "cuMemAlloc_v2");
    load(a.mem_free, "cuMemFree_v2");
    load(a.copy_to_device, "cuMemcpyHtoD_v2");
    load(a.copy_to_host, "cuMemcpyDtoH_v2");
    load(a.launch, "cuLaunchKernel");
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

Error cuda_error(const DriverApi& api, CUresult r, const std::string& what) {
  const char* text = nullptr;
  api.error_string(r, &text);
  // A fault inside the kernel leaves the context unusable: RUNTIME_DEVICE for the measurer.
  return internal_error(what + ": " + (text ? text : "unknown CUDA error"));
}

#define TT_CU(api, call, what)                                                      \
  do {                                                                              \
    if (CUresult r_ = (call); r_ != CUDA_SUCCESS) return cuda_error(api, r_, what); \
  } while (0)

// Device memory freed on every path.
struct DeviceBuffer {
  const DriverApi& api;
  CUdeviceptr ptr = 0;
  ~DeviceBuffer() {
    if (ptr) api.mem_free(ptr);
  }
};

}  // namespace

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
    d.limits.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    size_t bytes = 0;
    api.total_mem(&bytes, dev);
    d.memory_bytes = static_cast<int64_t>(bytes);
    out.push_back(std::move(d));
  }
  return out;
}

Expected<GpuRun> run_on_gpu(const GpuDevice& device, const CudaKernelSource& kernel,
                            const std::vector<float>& data, const std::vector<float>& weight,
                            const std::vector<float>* bias, int64_t out_floats, int runs) {
  const DriverApi& api = driver();
  if (!api.error.empty()) return unavailable(api.error);
  TT_RETURN_IF_ERROR(schedule_space::check_gpu_limits(kernel.usage(), device.limits));
  TT_ASSIGN_OR_RETURN(NvrtcOutput compiled,
                      nvrtc_compile(kernel, device.compute_capability, /*cubin=*/true));

  CUdevice dev = 0;
  TT_CU(api, api.device_get(&dev, device.ordinal), "cuDeviceGet");
  CUcontext ctx = nullptr;
  TT_CU(api, api.ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  struct Release {
    const DriverApi& api;
    CUdevice dev;
    ~Release() { api.ctx_release(dev); }
  } release{api, dev};
  TT_CU(api, api.ctx_set_current(ctx), "cuCtxSetCurrent");

  CUmodule module = nullptr;
  TT_CU(api, api.module_load(&module, compiled.cubin.data()), "loading the kernel's cubin");
  struct Unload {
    const DriverApi& api;
    CUmodule m;
    ~Unload() { api.module_unload(m); }
  } unload{api, module};
  CUfunction fn = nullptr;
  TT_CU(api, api.module_function(&fn, module, kernel.entry.c_str()), "cuModuleGetFunction");
  int registers = 0, max_threads = 0;
  api.function_attribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  api.function_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
  schedule_space::GpuKernelUsage usage = kernel.usage();
  usage.registers_per_thread = registers;
  TT_RETURN_IF_ERROR(schedule_space::check_gpu_limits(usage, device.limits));
  if (kernel.block.count() > max_threads)
    return Error{ErrorCode::kFailedPrecondition,
                 "threads per block = " + std::to_string(kernel.block.count()) +
                     " exceeds what the compiled kernel allows (" + std::to_string(max_threads) +
                     ")"};

  DeviceBuffer d_data{api}, d_weight{api}, d_bias{api}, d_out{api};
  auto upload = [&](DeviceBuffer& b, const std::vector<float>& host) -> Status {
    TT_CU(api, api.mem_alloc(&b.ptr, std::max<size_t>(4, 4 * host.size())), "cuMemAlloc");
    if (!host.empty())
      TT_CU(api, api.copy_to_device(b.ptr, host.data(), 4 * host.size()), "cuMemcpyHtoD");
    return ok_status();
  };
  TT_RETURN_IF_ERROR(upload(d_data, data));
  TT_RETURN_IF_ERROR(upload(d_weight, weight));
  if (bias) TT_RETURN_IF_ERROR(upload(d_bias, *bias));
  TT_CU(api, api.mem_alloc(&d_out.ptr, 4 * static_cast<size_t>(out_floats)), "cuMemAlloc");
  void* args[] = {&d_data.ptr, &d_weight.ptr, &d_bias.ptr, &d_out.ptr};
  auto launch = [&]() {
    return api.launch(fn, static_cast<unsigned>(kernel.grid.x),
                      static_cast<unsigned>(kernel.grid.y), static_cast<unsigned>(kernel.grid.z),
                      static_cast<unsigned>(kernel.block.x), static_cast<unsigned>(kernel.block.y),
                      static_cast<unsigned>(kernel.block.z), 0, nullptr, args, nullptr);
  };
  TT_CU(api, launch(), "launching " + kernel.entry);
  TT_CU(api, api.ctx_synchronize(), "running " + kernel.entry);
  GpuRun run;
  run.registers_per_thread = registers;
  run.out.resize(static_cast<size_t>(out_floats));
  TT_CU(api, api.copy_to_host(run.out.data(), d_out.ptr, 4 * run.out.size()), "cuMemcpyDtoH");
  if (runs > 0) {
    CUevent start = nullptr, stop = nullptr;
    TT_CU(api, api.event_create(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    TT_CU(api, api.event_create(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    api.event_record(start, nullptr);
    for (int i = 0; i < runs; ++i) TT_CU(api, launch(), "launching " + kernel.entry);
    api.event_record(stop, nullptr);
    TT_CU(api, api.event_synchronize(stop), "running " + kernel.entry);
    float ms = 0;
    api.event_elapsed(&ms, start, stop);
    api.event_destroy(start);
    api.event_destroy(stop);
    run.seconds_per_run = ms / 1000.0 / runs;
  }
  return run;
}

}  // namespace tensortune::codegen::cuda
