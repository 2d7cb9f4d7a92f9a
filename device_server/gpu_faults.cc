#include "device_server/gpu_faults.h"

#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#endif

namespace tensortune::device_server {

std::string fault_kernel_source(bool hang) {
  // The same three pointers as every template's kernel (data, weight, out). The hang reads its
  // exit condition through a volatile pointer, so the loop is not optimised away, and the value
  // never comes (the data is zeros).
  if (hang)
    return "extern \"C\" __global__ void tt_fault(const float* data, const float* weight, "
           "float* out) {\n"
           "  const volatile float* flag = data;\n"
           "  while (*flag != 12345.0f) {}\n"
           "  out[0] = *flag;\n"
           "}\n";
  return "extern \"C\" __global__ void tt_fault(const float* data, const float* weight, "
         "float* out) {\n"
         "  out[(size_t(1) << 40) + threadIdx.x] = data[0];\n"
         "}\n";
}

Status launch_fault_kernel(int gpu, bool hang) {
#ifdef TT_WITH_CUDA
  namespace cuda = codegen::cuda;
  TT_ASSIGN_OR_RETURN(std::vector<cuda::GpuDevice> gpus, cuda::list_gpus());
  if (gpu < 0 || gpu >= static_cast<int>(gpus.size()))
    return unavailable("GPU " + std::to_string(gpu) + " does not exist");
  cuda::CudaKernelSource kernel;
  kernel.entry = "tt_fault";
  kernel.source = fault_kernel_source(hang);
  TT_ASSIGN_OR_RETURN(auto runner, cuda::GpuKernelRunner::create(gpus[static_cast<size_t>(gpu)],
                                                                 kernel, {0.0f}, {0.0f}, {}, 1));
  TT_RETURN_IF_ERROR(runner->launch());
  TT_ASSIGN_OR_RETURN(double seconds, runner->clock());  // waits for the kernel
  (void)seconds;
  return internal_error("the faulting kernel ran without a fault");
#else
  (void)gpu;
  (void)hang;
  return unavailable("cuda-fault and cuda-hang need a build with the CUDA Toolkit");
#endif
}

}  // namespace tensortune::device_server
