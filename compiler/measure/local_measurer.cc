#include "compiler/measure/local_measurer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "support/aligned_buffer.h"
#include "support/log.h"
#include "support/sha256.h"
#include "support/work_queue.h"

namespace tensortune::measure {
using codegen::compile_kernel;
using codegen::CompiledKernel;
using codegen::host_device_key;
using schedule_space::KernelSignature;

namespace ss = schedule_space;
using ss::MeasureErrorNo;
using ss::MeasureResult;

struct LocalMeasurer::Packed {
  AlignedBuffer data, weight;
  Tensor reference;  // the reference output in the kernel's output layout
};

namespace {

// Fixed-seed operands: uniform in [-1, 1) for float32, the whole range of an integer dtype.
// Integers span their dtype, or `range` where the workload's precision narrows it.
Tensor random_operand(DType dtype, const Shape& shape, uint64_t seed,
                      std::optional<ss::IntRange> range = std::nullopt) {
  Tensor t = Tensor::zeros(dtype, shape);
  if (is_float(dtype)) {
    fill_uniform(t, seed);
    return t;
  }
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t& v : t.i64) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto bits = static_cast<int64_t>(state >> 40);
    v = range ? range->lo + bits % (range->hi - range->lo + 1) : wrap_integer(dtype, bits);
  }
  return t;
}

// Integer outputs are exact: equal, element for element.
bool integers_match(const Tensor& got, const Tensor& want, std::string* first_mismatch) {
  for (size_t i = 0; i < want.i64.size(); ++i)
    if (got.i64[i] != want.i64[i]) {
      *first_mismatch = "element " + std::to_string(i) + " is " + std::to_string(got.i64[i]) +
                        ", reference " + std::to_string(want.i64[i]);
      return false;
    }
  return true;
}

}  // namespace

bool outputs_match(const std::vector<float>& got, const std::vector<float>& want,
                   int64_t reduction_length, std::string* first_mismatch) {
  if (got.size() != want.size()) {
    if (first_mismatch)
      *first_mismatch = "output has " + std::to_string(got.size()) + " elements, expected " +
                        std::to_string(want.size());
    return false;
  }
  const double atol = 1e-4 * std::sqrt(static_cast<double>(std::max<int64_t>(1, reduction_length)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(diff <= atol + 1e-4 * std::fabs(want[i]))) {  // also catches NaN
      if (first_mismatch)
        *first_mismatch = "element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                          ", reference " + std::to_string(want[i]);
      return false;
    }
  }
  return true;
}

MeasureResult finish_result(MeasureResult r, MeasureErrorNo error, std::string message,
                            std::chrono::steady_clock::time_point start) {
  r.error_no = error;
  r.error_msg = std::move(message);
  if (error != MeasureErrorNo::kNoError) r.costs = {ss::kErrorCost};
  r.all_cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.timestamp =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  logger("measure")->debug("config {}: {} {}", r.config_index, ss::measure_error_name(error),
                           r.error_msg);
  return r;
}

LocalMeasurer::LocalMeasurer(ss::Task task, MeasureOptions options)
    : task_(std::move(task)), options_(std::move(options)) {}
LocalMeasurer::~LocalMeasurer() = default;

Expected<std::unique_ptr<LocalMeasurer>> LocalMeasurer::create(ss::Task task,
                                                               MeasureOptions options) {
  TT_RETURN_IF_ERROR(ss::validate(task.workload));
  if (options.threads < 1 || options.threads > 1024)
    return invalid_argument("measure option threads = " + std::to_string(options.threads) +
                            ", must be in [1, 1024]");
  if (options.timing.repeat < 1)
    return invalid_argument("measure option repeat = " + std::to_string(options.timing.repeat) +
                            ", must be >= 1");
  if (options.timing.number < 1)
    return invalid_argument("measure option number = " + std::to_string(options.timing.number) +
                            ", must be >= 1");
  if (options.device_key.empty()) options.device_key = host_device_key();
  std::unique_ptr<LocalMeasurer> m(new LocalMeasurer(std::move(task), std::move(options)));
  const ss::Task& t = m->task_;
  const ss::OperandShapes shapes = ss::operand_shapes(t.workload);
  const ss::OperandDTypes dtypes = ss::operand_dtypes(t.workload);
  m->data_ = random_operand(dtypes.data, shapes.data, 1);
  const ss::Precision precision = ss::precision_of(t.workload);
  m->weight_ = random_operand(dtypes.weight, shapes.weight, 2,
                              ss::is_quantized(precision)
                                  ? std::optional<ss::IntRange>(ss::weight_range(precision))
                                  : std::nullopt);
  m->reduction_length_ = ss::reduction_length(t.workload);
  if (m->options_.check_correctness)
    m->reference_ = reference_output(t.workload, m->data_, m->weight_, nullptr);
  m->pool_ = std::make_unique<ThreadPool>(m->options_.threads);
  return m;
}

const LocalMeasurer::Packed& LocalMeasurer::packed_for(const KernelSignature& sig) {
  // Operands depend on the layouts only, not on the loop structure: configs that share the
  // blocks share them.
  KernelSignature key = sig;
  key.parallel_extent = 0;
  for (const auto& [layouts, packed] : packed_)
    if (layouts == key) return *packed;
  const ss::Template& tmpl = ss::template_of(task_);
  auto p = std::make_unique<Packed>();
  PackedOperands ops = tmpl.pack_operands(sig, data_, weight_);
  p->data = AlignedBuffer::of(ops.data);
  p->weight = AlignedBuffer::of(ops.weight);
  if (options_.check_correctness) p->reference = tmpl.output_from_plain(sig, reference_);
  packed_.emplace_back(std::move(key), std::move(p));
  return *packed_.back().second;
}

struct LocalMeasurer::Built {
  std::optional<Expected<CompiledKernel>> kernel;
  std::string exception;
  double wall_s = 0;
  double build_s = -1;  ///< >= 0: built elsewhere in this many seconds (compile_s reports it)
};

namespace {

/// A kernel built elsewhere, checked against the source this build makes of the config and
/// against this CPU, then linked in.
Expected<CompiledKernel> load_built(const ss::Task& task, const ss::ConfigSpace& space,
                                    const ss::Config& config, const KernelBinary& binary) {
  TT_ASSIGN_OR_RETURN(KernelSignature sig, codegen::kernel_signature(task, space, config));
  TT_ASSIGN_OR_RETURN(std::string ir, codegen::kernel_ir(task, space, config, {}, false));
  static const codegen::CpuDescription host = codegen::host_cpu();
  TT_RETURN_IF_ERROR(check_kernel_binary(binary, KernelFormat::kCpuObject, host.cpu, host.features,
                                         sha256_hex(ir)));
  TT_ASSIGN_OR_RETURN(CompiledKernel k, codegen::load_kernel_object(binary.code, sig));
  return k;
}

}  // namespace

std::vector<MeasureResult> LocalMeasurer::measure_built(
    const ss::ConfigSpace& space, const std::vector<ss::Config>& configs,
    const std::vector<const KernelBinary*>& binaries) {
  // Build every kernel of the batch first, in parallel (or load what was built elsewhere),
  // then time them one at a time on a quiet machine.
  std::vector<Built> built(configs.size());
  const int threads = options_.compile_threads > 0
                          ? options_.compile_threads
                          : static_cast<int>(std::thread::hardware_concurrency());
  for_each_item(configs.size(), threads, [&](size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const KernelBinary* binary = i < binaries.size() ? binaries[i] : nullptr;
      if (binary) {
        built[i].kernel.emplace(load_built(task_, space, configs[i], *binary));
        built[i].build_s = binary->build_s;
      } else {
        built[i].kernel.emplace(compile_kernel(task_, space, configs[i]));
      }
    } catch (const std::exception& e) {
      built[i].exception = e.what();
    }
    built[i].wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });

  std::vector<MeasureResult> results;
  results.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i)
    results.push_back(measure_one(space, configs[i], built[i]));
  return results;
}

MeasureResult LocalMeasurer::measure_one(const ss::ConfigSpace& space, const ss::Config& config,
                                         Built& built) {
  const auto start = std::chrono::steady_clock::now() -
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(built.wall_s));
  MeasureResult r;
  r.config_index = config.index;
  r.threads = options_.threads;
  r.device_key = options_.device_key;
  auto finish = [&](MeasureErrorNo e, std::string msg) {
    return finish_result(r, e, std::move(msg), start);
  };
  try {
    if (!built.exception.empty())
      return finish(MeasureErrorNo::kCompileHost, "exception: " + built.exception);
    Expected<CompiledKernel>& kernel = *built.kernel;
    if (!kernel) {
      const bool invalid = kernel.error().code == ErrorCode::kFailedPrecondition;
      return finish(invalid ? MeasureErrorNo::kInstantiationError : MeasureErrorNo::kCompileHost,
                    kernel.error().message);
    }
    r.compile_s = built.build_s >= 0 ? built.build_s : kernel->compile_seconds();
    const KernelSignature& sig = kernel->signature();
    const Packed& p = packed_for(sig);
    AlignedBuffer out(num_elements(sig.out_shape));
    if (options_.check_correctness) {
      std::fill(out.data(), out.data() + out.size(), std::numeric_limits<float>::quiet_NaN());
      kernel->run(p.data.data(), p.weight.data(), nullptr, out.data(), *pool_);
      std::string mismatch;
      const bool match =
          is_float(p.reference.dtype)
              ? outputs_match(out.to_vector(), p.reference.f32, reduction_length_, &mismatch)
              : integers_match(out.read(p.reference.dtype, p.reference.shape), p.reference,
                               &mismatch);
      if (!match) return finish(MeasureErrorNo::kWrongAnswer, mismatch);
    }
    auto run = [&] { kernel->run(p.data.data(), p.weight.data(), nullptr, out.data(), *pool_); };
    std::function<void()> flush;
    if (options_.flush_cache) {
      flush = [&] {
        evict_caches();
        flush_cache(p.weight.data(), p.weight.size() * sizeof(float));
        flush_cache(out.data(), out.size() * sizeof(float));
      };
    }
    TimeEvaluatorOptions timing = options_.timing;
    if (options_.slow_cutoff > 0 && best_cost_s_ > 0)
      timing.cutoff_s = options_.slow_cutoff * best_cost_s_;
    TimingResult t = time_evaluator(run, flush, timing);
    if (t.timed_out)
      return finish(MeasureErrorNo::kRunTimeout,
                    "one run took " + std::to_string(t.warmup_seconds) + " s; " +
                        std::to_string(options_.timing.number * options_.timing.repeat) +
                        " runs would pass the " + std::to_string(options_.timing.timeout_s) +
                        " s limit");
    r.number = t.number;
    r.costs = drop_extremes(t.round_seconds);
    if (best_cost_s_ == 0 || r.mean_cost() < best_cost_s_) best_cost_s_ = r.mean_cost();
    return finish(MeasureErrorNo::kNoError, "");
  } catch (const std::exception& e) {
    return finish(MeasureErrorNo::kUnknownError, std::string("exception: ") + e.what());
  }
}

}  // namespace tensortune::measure
