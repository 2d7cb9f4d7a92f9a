// A GPU device server's worker: replaced after a kernel fault that loses the CUDA context (the
// next config needs a fresh one), kept after a launch the driver refused (the context works).
// The GPU measurer's two answers are injected (gpu-fault@N, gpu-error@N), so no GPU is needed.
#include "device_server/worker_process.h"

#include <gtest/gtest.h>

#include "device_server/gpu_faults.h"
#include "farm_test_fixture.h"
#include "proto/convert.h"

#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/nvrtc.h"
#endif

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

tt::v1::WorkItem item_of(const ss::Task& task, const ss::ConfigSpace& space, const ss::Config& c) {
  tt::v1::WorkItem item;
  tt::wire::task_to_proto(task, item.mutable_workload(), item.mutable_target());
  tt::wire::config_to_proto(space, c, item.mutable_config());
  item.mutable_timing()->set_number(1);
  item.mutable_timing()->set_repeat(1);
  item.mutable_timing()->set_threads(1);
  return item;
}

}  // namespace

TEST(WorkerProcess, OnlyAFaultThatLosesTheGpuContextReplacesTheWorker) {
  const ss::Task task = tt::testing::dense_task(64);
  const ss::ConfigSpace space = *ss::make_config_space(task);
  const auto configs = tt::testing::valid_configs(space, 4);
  const int64_t refused = configs[1].index, fault = configs[2].index;
  tt::device_server::WorkerOptions options;
  options.device_key = "cuda-sm90";
  options.gpu = 0;
  options.fault_inject =
      "gpu-error@" + std::to_string(refused) + ",gpu-fault@" + std::to_string(fault);
  tt::device_server::WorkerProcess worker(TENSORTUNE_BINARY, options);
  ASSERT_TRUE(worker.start());

  auto measure = [&](const ss::Config& c) { return worker.measure(item_of(task, space, c), 60); };
  const auto first = measure(configs[0]);
  EXPECT_EQ(first.error_no(), tt::v1::NO_ERROR) << first.error_msg();
  const pid_t pid = worker.pid();

  const auto launch_refused = measure(configs[1]);
  EXPECT_EQ(launch_refused.error_no(), tt::v1::RUNTIME_DEVICE);
  EXPECT_FALSE(ss::gpu_context_lost(launch_refused.error_msg())) << launch_refused.error_msg();
  EXPECT_EQ(worker.pid(), pid);  // the same worker goes on
  EXPECT_EQ(worker.restarts(), 0);

  const auto faulted = measure(configs[2]);
  EXPECT_EQ(faulted.error_no(), tt::v1::RUNTIME_DEVICE);
  EXPECT_TRUE(ss::gpu_context_lost(faulted.error_msg())) << faulted.error_msg();

  // The next config gets a fresh worker (a fresh CUDA context) and measures.
  const auto after = measure(configs[3]);
  EXPECT_EQ(after.error_no(), tt::v1::NO_ERROR) << after.error_msg();
  EXPECT_NE(worker.pid(), pid);
  EXPECT_EQ(worker.restarts(), 1);
}

// A device refuses an item whose operands need more memory than it allows, before allocating.
TEST(WorkerProcess, RefusesWorkOverItsByteLimitBeforeAllocating) {
  const ss::Task task = tt::testing::dense_task(512);  // 4 * (512 + 512*512 + 512 + 512) bytes
  const ss::ConfigSpace space = *ss::make_config_space(task);
  tt::device_server::WorkerOptions options;
  options.device_key = "x86";
  options.max_work_bytes = 1 << 20;
  tt::device_server::WorkerProcess worker(TENSORTUNE_BINARY, options);
  ASSERT_TRUE(worker.start());
  const auto c = tt::testing::valid_configs(space, 1).front();
  const auto refused = worker.measure(item_of(task, space, c), 60);
  EXPECT_EQ(refused.error_no(), tt::v1::INSTANTIATION_ERROR);
  EXPECT_NE(refused.error_msg().find("need 1054720 bytes, over this device's --max-work-bytes "
                                     "1048576"),
            std::string::npos)
      << refused.error_msg();
  // Within the limit, the same worker measures.
  const ss::Task small = tt::testing::dense_task(64);
  const ss::ConfigSpace small_space = *ss::make_config_space(small);
  const auto ok = worker.measure(
      item_of(small, small_space, tt::testing::valid_configs(small_space, 1).front()), 60);
  EXPECT_EQ(ok.error_no(), tt::v1::NO_ERROR) << ok.error_msg();
  EXPECT_EQ(worker.restarts(), 0);
}

// cuda-fault and cuda-hang are real faults on a GPU worker's GPU (run by scripts/gpu-check.sh);
// a CPU worker answers that it has none and lives on.
TEST(WorkerProcess, RealGpuFaultsNeedAGpuWorker) {
  const ss::Task task = tt::testing::dense_task(64);
  const ss::ConfigSpace space = *ss::make_config_space(task);
  const auto configs = tt::testing::valid_configs(space, 2);
  tt::device_server::WorkerOptions options;
  options.device_key = "x86";
  options.fault_inject = "cuda-fault@" + std::to_string(configs[0].index);
  tt::device_server::WorkerProcess worker(TENSORTUNE_BINARY, options);
  ASSERT_TRUE(worker.start());
  const auto refused = worker.measure(item_of(task, space, configs[0]), 60);
  EXPECT_EQ(refused.error_no(), tt::v1::RUNTIME_DEVICE);
  EXPECT_NE(refused.error_msg().find("cuda-fault needs a GPU worker"), std::string::npos)
      << refused.error_msg();
  const auto next = worker.measure(item_of(task, space, configs[1]), 60);
  EXPECT_EQ(next.error_no(), tt::v1::NO_ERROR) << next.error_msg();
  EXPECT_EQ(worker.restarts(), 0);
  EXPECT_FALSE(tt::device_server::parse_fault_injection("cuda-oops@1"));
  EXPECT_TRUE(tt::device_server::parse_fault_injection("cuda-fault@1,cuda-hang@2"));
}

#ifdef TT_WITH_CUDA
// The kernels the GPU check launches to fault on purpose compile for the GPUs we support.
TEST(GpuFaults, TheFaultKernelsCompileThroughNvrtc) {
  namespace cuda = tt::codegen::cuda;
  if (auto s = cuda::nvrtc_available(); !s) GTEST_SKIP() << s.error().message;
  for (bool hang : {false, true}) {
    cuda::CudaKernelSource k;
    k.entry = "tt_fault";
    k.source = tt::device_server::fault_kernel_source(hang);
    for (int cc : {80, 90}) {
      auto out = cuda::nvrtc_compile(k, cc, /*cubin=*/true);
      ASSERT_TRUE(out) << out.error().message;
      EXPECT_FALSE(out->cubin.empty());
    }
  }
}
#endif
