#include "compiler/measure/gpu_measurer.h"

#include <atomic>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>

#include "compiler/measure/reference_ops.h"
#include "support/log.h"
#include "support/sha256.h"
#include "support/stopwatch.h"
#include "support/work_queue.h"

namespace tensortune::measure {

namespace ss = schedule_space;
namespace cuda = codegen::cuda;
using ss::MeasureErrorNo;
using ss::MeasureResult;

GpuMeasurer::GpuMeasurer(ss::Task task, MeasureOptions options, cuda::GpuDevice gpu)
    : task_(std::move(task)), options_(std::move(options)), device_(std::move(gpu)) {}

Expected<std::unique_ptr<GpuMeasurer>> GpuMeasurer::create(ss::Task task, MeasureOptions options) {
  TT_RETURN_IF_ERROR(ss::validate(task.workload));
  TT_ASSIGN_OR_RETURN(int cc, ss::cuda_compute_capability(task.target.spec));
  TT_ASSIGN_OR_RETURN(std::vector<cuda::GpuDevice> gpus, cuda::list_gpus());
  if (options.gpu < 0 || options.gpu >= static_cast<int>(gpus.size()))
    return invalid_argument("GPU " + std::to_string(options.gpu) + " does not exist: this " +
                            "machine has " + std::to_string(gpus.size()) + " (0.." +
                            std::to_string(gpus.size() - 1) + ")");
  const cuda::GpuDevice& gpu = gpus[static_cast<size_t>(options.gpu)];
  if (gpu.compute_capability != cc)
    return invalid_argument("task target '" + task.target.spec + "' is for sm_" +
                            std::to_string(cc) + " but GPU " + std::to_string(gpu.ordinal) + " (" +
                            gpu.name + ") is sm_" + std::to_string(gpu.compute_capability));
  if (options.timing.repeat < 1 || options.timing.number < 1)
    return invalid_argument("measure options repeat and number must be >= 1");
  if (options.device_key.empty()) options.device_key = "cuda-sm" + std::to_string(cc);
  std::unique_ptr<GpuMeasurer> m(new GpuMeasurer(std::move(task), std::move(options), gpu));
  const ss::OperandShapes shapes = ss::operand_shapes(m->task_.workload);
  m->data_ = Tensor::zeros(shapes.data);
  m->weight_ = Tensor::zeros(shapes.weight);
  fill_uniform(m->data_, 1);
  fill_uniform(m->weight_, 2);
  m->reduction_length_ = ss::reduction_length(m->task_.workload);
  if (m->options_.check_correctness)
    m->reference_ = reference_output(m->task_.workload, m->data_, m->weight_, nullptr);
  return m;
}

namespace {

/// A cubin built elsewhere, checked against this GPU and the source this build makes of the
/// config. The driver's own check (and JIT log) comes when it is loaded.
Expected<cuda::CompiledKernel> take_built(const cuda::GpuDevice& device,
                                          const cuda::CudaKernelSource& source,
                                          const KernelBinary& binary) {
  TT_RETURN_IF_ERROR(ss::check_gpu_limits(source.usage(), device.limits));
  TT_RETURN_IF_ERROR(check_kernel_binary(binary, KernelFormat::kCubin,
                                         "sm_" + std::to_string(device.compute_capability), {},
                                         sha256_hex(source.source)));
  return cuda::CompiledKernel{binary.code, binary.build_s};
}

}  // namespace

std::vector<MeasureResult> GpuMeasurer::measure_built(
    const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
    const std::vector<const KernelBinary*>& built) {
  // Kernels are generated in turn (milliseconds), then those not built elsewhere are compiled
  // on every core at once (NVRTC needs no GPU and takes most of a config's time: 0.4 s
  // typically, over 10 s for a fully unrolled one), then run and timed one at a time, alone on
  // the GPU.
  const Stopwatch batch;
  std::vector<Expected<cuda::CudaKernelSource>> sources;
  sources.reserve(configs.size());
  for (const ss::Config& c : configs) sources.push_back(cuda::emit_cuda_kernel(task_, space, c));
  std::vector<std::optional<Expected<cuda::CompiledKernel>>> compiled(configs.size());
  std::vector<bool> prebuilt(configs.size(), false);
  for (size_t i = 0; i < configs.size() && i < built.size(); ++i)
    if (built[i] && sources[i]) {
      compiled[i] = take_built(device_, *sources[i], *built[i]);
      prebuilt[i] = true;
    }
  for_each_item(configs.size(), static_cast<int>(std::thread::hardware_concurrency()),
                [&](size_t i) {
                  if (sources[i] && !prebuilt[i])
                    compiled[i] = cuda::compile_for_gpu(device_, *sources[i]);
                });
  const double batch_compile_s = batch.seconds();

  std::vector<MeasureResult> results;
  results.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    results.push_back(measure_one(configs[i], sources[i], compiled[i], prebuilt[i]));
    // A fault that lost the context would fail every later config of this process (a device
    // server replaces its worker instead; `tune-op --gpu` has no other process): a fresh
    // context for the next one.
    if (ss::gpu_context_lost(results.back().error_msg))
      if (auto reset = cuda::reset_gpu_context(device_); !reset)
        logger("measure")->warn("GPU {}: {}", device_.ordinal, reset.error().message);
    // The batch's compilation ran for all of its configs at once: each carries its share.
    results.back().all_cost_s += batch_compile_s / static_cast<double>(configs.size());
  }
  return results;
}

MeasureResult GpuMeasurer::measure_one(const ss::Config& config,
                                       const Expected<cuda::CudaKernelSource>& source,
                                       const std::optional<Expected<cuda::CompiledKernel>>& cubin,
                                       bool prebuilt) {
  const auto start = std::chrono::steady_clock::now();
  MeasureResult r;
  r.config_index = config.index;
  r.device_key = options_.device_key;
  auto finish = [&](MeasureErrorNo e, std::string msg) {
    return finish_result(r, e, std::move(msg), start);
  };
  if (!source)
    return finish(source.error().code == ErrorCode::kFailedPrecondition
                      ? MeasureErrorNo::kInstantiationError
                      : MeasureErrorNo::kCompileHost,
                  source.error().message);
  // A config the device cannot launch is the config's fault; NVRTC missing or refusing the
  // source is a compile error (the worker stays); anything else came from the driver.
  // A binary sent from elsewhere that fails its checks, or that the driver refuses to load,
  // is that config's compile error.
  auto classify = [&](const Error& e) {
    if (e.code == ErrorCode::kFailedPrecondition)
      return finish(MeasureErrorNo::kInstantiationError, e.message);
    if (e.message.starts_with("NVRTC") || e.code == ErrorCode::kInvalidArgument ||
        (prebuilt && e.message.starts_with(cuda::kLoadingCubin)))
      return finish(MeasureErrorNo::kCompileDevice, e.message);
    return finish(MeasureErrorNo::kRuntimeDevice, e.message);
  };
  if (!cubin.has_value()) return finish(MeasureErrorNo::kCompileDevice, "not compiled");
  if (!*cubin) return classify(cubin->error());
  r.compile_s = (*cubin)->compile_seconds;
  const ss::Template& tmpl = ss::template_of(task_);
  const ss::KernelSignature& sig = source->signature;
  const ss::PackedOperands packed = tmpl.pack_operands(sig, data_, weight_);
  auto runner = cuda::GpuKernelRunner::create(device_, *source, **cubin, packed.data.f32,
                                              packed.weight.f32, {}, num_elements(sig.out_shape));
  if (!runner) return classify(runner.error());
  cuda::GpuKernelRunner& k = **runner;
  r.compile_s = k.compile_seconds();
  if (auto s = k.launch(); !s) return finish(MeasureErrorNo::kRuntimeDevice, s.error().message);
  auto out = k.output();
  if (!out) return finish(MeasureErrorNo::kRuntimeDevice, out.error().message);
  if (options_.check_correctness) {
    std::string mismatch;
    if (!outputs_match(*out, tmpl.output_from_plain(sig, reference_).f32, reduction_length_,
                       &mismatch))
      return finish(MeasureErrorNo::kWrongAnswer, mismatch);
  }
  // The protocol's clock is the GPU's: reading it waits for the queued launches, so a round
  // of `number` launches is timed from the first to the last on the device.
  std::string failure;
  auto run = [&] {
    if (auto s = k.launch(); !s && failure.empty()) failure = s.error().message;
  };
  TimeEvaluatorOptions timing = options_.timing;
  timing.clock = [&]() -> double {
    auto t = k.clock();
    if (!t) {
      if (failure.empty()) failure = t.error().message;
      return std::numeric_limits<double>::infinity();
    }
    return *t;
  };
  if (options_.slow_cutoff > 0 && best_cost_s_ > 0)
    timing.cutoff_s = options_.slow_cutoff * best_cost_s_;
  std::function<void()> flush;
  if (options_.flush_cache) {
    flush = [&] {
      if (auto s = k.flush_l2(); !s && failure.empty()) failure = s.error().message;
    };
  }
  const TimingResult t = time_evaluator(run, flush, timing);
  if (!failure.empty()) return finish(MeasureErrorNo::kRuntimeDevice, failure);
  if (t.timed_out)
    return finish(MeasureErrorNo::kRunTimeout, "one run took " + std::to_string(t.warmup_seconds) +
                                                   " s; the protocol's runs "
                                                   "would pass the " +
                                                   std::to_string(options_.timing.timeout_s) +
                                                   " s limit");
  r.number = t.number;
  r.costs = drop_extremes(t.round_seconds);
  if (best_cost_s_ == 0 || r.mean_cost() < best_cost_s_) best_cost_s_ = r.mean_cost();
  return finish(MeasureErrorNo::kNoError, "");
}

}  // namespace tensortune::measure
