#pragma once
/// \file
/// Running generated kernels on a real GPU through the CUDA driver API. libcuda is opened at
/// run time (dlopen), so the same binary starts on machines without a GPU and says why it has
/// none. Built only with the CUDA Toolkit (TT_WITH_CUDA), for its headers.
///
/// No GPU was lent while this was written: it is compiled and its failure paths are tested
/// here; the GPU paths run only where `list_gpus()` finds one (tests skip otherwise).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cuda_kernel.h"
#include "schedule_space/gpu_limits.h"
#include "support/error.h"

namespace tensortune::codegen::cuda {

/// One GPU as the driver reports it.
struct GpuDevice {
  int ordinal = 0;
  std::string name;
  int compute_capability = 0;  ///< 90 for sm_90
  int sm_count = 0;
  int clock_khz = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  schedule_space::GpuLimits limits;
};

/// The GPUs of this machine. kUnavailable naming the reason: no libcuda (no driver), the
/// driver failed to initialise, or it reports no device.
Expected<std::vector<GpuDevice>> list_gpus();

/// After an error that lost the process's CUDA context on `device` (ss::gpu_context_lost: an
/// illegal address, a failed launch), resets the device's primary context, so that the next
/// runner or module gets a working one. Everything allocated in the lost context is gone: call
/// it when no runner or module of that device is alive.
Status reset_gpu_context(const GpuDevice& device);

/// How the error of a cubin the driver refuses to load begins (its JIT log follows).
inline constexpr char kLoadingCubin[] = "loading the kernel's cubin";

/// A kernel compiled for one GPU: NVRTC's cubin for its compute capability. Compiling needs
/// no device state, so a measurer compiles a batch's configs on all cores at once.
struct CompiledKernel {
  std::string cubin;
  double compile_seconds = 0;
};

/// Checks the launch against the device's limits (kFailedPrecondition naming the limit), then
/// compiles (kInternal with NVRTC's log; kUnavailable without NVRTC). Thread-safe.
Expected<CompiledKernel> compile_for_gpu(const GpuDevice& device, const CudaKernelSource& kernel);

/// One compiled kernel with its operands resident on one GPU: what a measurer times.
class GpuKernelRunner {
 public:
  /// Loads the compiled kernel on the device, checks its threads, shared memory and registers
  /// against the device's limits (kFailedPrecondition naming the limit: never a launch
  /// failure) and uploads the operands (data, weight, then the epilogue's,
  /// kernel.epilogue_operands of them).
  static Expected<std::unique_ptr<GpuKernelRunner>> create(
      const GpuDevice& device, const CudaKernelSource& kernel, const CompiledKernel& compiled,
      const std::vector<float>& data, const std::vector<float>& weight,
      const std::vector<std::vector<float>>& operands, int64_t out_floats);
  /// compile_for_gpu, then the above.
  static Expected<std::unique_ptr<GpuKernelRunner>> create(
      const GpuDevice& device, const CudaKernelSource& kernel, const std::vector<float>& data,
      const std::vector<float>& weight, const std::vector<std::vector<float>>& operands,
      int64_t out_floats);
  ~GpuKernelRunner();
  /// Queues one run (asynchronous).
  Status launch();
  /// Seconds since the runner was created, read after everything queued has run: a CUDA-event
  /// clock for time_evaluator. kInternal when a queued run failed (an illegal address leaves
  /// the context unusable: the caller reports RUNTIME_DEVICE and replaces its process).
  Expected<double> clock();
  /// Queues a write over a scratch buffer twice the L2 cache's size, evicting the operands
  /// from L2 (the GPU's cache flush between timing rounds).
  Status flush_l2();
  /// The output buffer after the queued runs.
  Expected<std::vector<float>> output();
  int64_t registers_per_thread() const;
  double compile_seconds() const;

  struct Impl;

 private:
  explicit GpuKernelRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// What one kernel did on a GPU.
struct GpuRun {
  std::vector<float> out;
  double seconds_per_run = 0;  ///< mean of `runs` launches, CUDA events
  int64_t registers_per_thread = 0;
};

/// GpuKernelRunner in one call: the output of one run, and the mean of `runs` more.
Expected<GpuRun> run_on_gpu(const GpuDevice& device, const CudaKernelSource& kernel,
                            const std::vector<float>& data, const std::vector<float>& weight,
                            const std::vector<std::vector<float>>& operands, int64_t out_floats,
                            int runs);

/// A module of kernels (a compiled network's) loaded on one GPU, with the device memory its
/// buffers live in: what the GPU network executor (runtime/gpu_executor.h) drives. Everything
/// queues on one stream (the context's default) in call order; downloads wait for it.
class GpuModule {
 public:
  /// Loads `ptx` (NVRTC's, for a compute capability the device can run), or compiles `source`
  /// with NVRTC for the device when `ptx` is empty, and finds every kernel's entry. Each kernel's
  /// threads, shared memory and registers are checked against the device's limits
  /// (kFailedPrecondition naming the kernel and the limit, before any launch).
  static Expected<std::unique_ptr<GpuModule>> load(const GpuDevice& device,
                                                   const std::string& source,
                                                   const std::string& ptx,
                                                   const std::vector<CudaKernelSource>& kernels);
  ~GpuModule();

  /// Device memory of `bytes` (at least 4), freed with the module.
  Expected<uint64_t> allocate(int64_t bytes);
  /// Host to device, synchronous.
  Status upload(uint64_t device, const void* host, int64_t bytes);
  /// Device to host, after everything queued.
  Status download(void* host, uint64_t device, int64_t bytes);
  /// Device to device, queued.
  Status copy(uint64_t to, uint64_t from, int64_t bytes);
  /// Queues kernels()[index] on `args` (its arg_count device pointers, ABI order).
  Status launch(size_t index, const std::vector<uint64_t>& args);
  /// Waits for everything queued; kInternal naming the failure (an illegal address leaves the
  /// context unusable).
  Status synchronize();
  const std::vector<CudaKernelSource>& kernels() const;
  const GpuDevice& device() const;

  struct Impl;

 private:
  explicit GpuModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::codegen::cuda
