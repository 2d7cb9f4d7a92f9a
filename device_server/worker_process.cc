#include "device_server/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "compiler/measure/kernel_build.h"
#include "compiler/measure/measurer.h"
#include "compiler/runtime/transform_timing.h"
#include "device_server/gpu_faults.h"
#include "device_server/worker_protocol.h"
#include "proto/convert.h"
#include "support/log.h"

extern char** environ;

namespace tensortune::device_server {

namespace ss = schedule_space;

namespace {

v1::MeasureResult failure(const v1::WorkItem& item, ss::MeasureErrorNo code, std::string message) {
  v1::MeasureResult r;
  r.set_config_index(item.config().index());
  r.add_costs_s(ss::kErrorCost);
  r.set_error_no(static_cast<v1::MeasureErrorNo>(code));
  r.set_error_msg(std::move(message));
  r.set_timestamp(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  r.set_threads(item.timing().threads());
  return r;
}

measure::MeasureOptions measure_options_of(const v1::TimingOptions& t, const WorkerOptions& o) {
  measure::MeasureOptions m;
  m.timing.number = t.number();
  m.timing.repeat = t.repeat();
  m.timing.min_repeat_ms = t.min_repeat_ms();
  if (t.timeout_s() > 0) m.timing.timeout_s = t.timeout_s();
  m.threads = std::max(1, t.threads());
  m.flush_cache = t.flush_cache();
  m.compile_threads = 1;
  m.device_key = o.device_key;
  m.gpu = o.gpu;
  return m;
}

/// A layout transform for the graph tuner, timed as compiled networks run it on this CPU.
v1::MeasureResult time_transform(const v1::WorkItem& item, const WorkerOptions& options) {
  if (options.gpu >= 0)
    return failure(item, ss::MeasureErrorNo::kInstantiationError,
                   "a GPU server does not time layout transforms (they are CPU graph tuning)");
  auto transform = wire::layout_transform_from_proto(item.workload());
  if (!transform)
    return failure(item, ss::MeasureErrorNo::kInstantiationError, transform.error().message);
  v1::MeasureResult answer;
  wire::result_to_proto(
      runtime::time_layout_transform(*transform, measure_options_of(item.timing(), options)),
      &answer);
  return answer;
}

}  // namespace

WorkerProcess::WorkerProcess(std::string executable, WorkerOptions options)
    : executable_(std::move(executable)), options_(std::move(options)) {}

WorkerProcess::~WorkerProcess() { stop(); }

Status WorkerProcess::start() {
  int down[2], up[2];
  if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
    return internal_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, down[0], 0);
  posix_spawn_file_actions_adddup2(&actions, up[1], 1);
  std::vector<std::string> args = {executable_, "device-worker", "--device-key",
                                   options_.device_key};
  if (!options_.fault_inject.empty()) {
    args.push_back("--fault-inject");
    args.push_back(options_.fault_inject);
  }
  if (options_.max_work_bytes > 0) {
    args.push_back("--max-work-bytes");
    args.push_back(std::to_string(static_cast<int64_t>(options_.max_work_bytes)));
  }
  if (options_.memory_limit_bytes > 0) {
    args.push_back("--memory-limit-bytes");
    args.push_back(std::to_string(static_cast<int64_t>(options_.memory_limit_bytes)));
  }
  if (options_.gpu >= 0) {
    args.push_back("--gpu");
    args.push_back(std::to_string(options_.gpu));
  }
  if (options_.build_on_device) args.push_back("--build-on-device");
  if (options_.accept_built_code) args.push_back("--accept-built-code");
  if (options_.builder) args.push_back("--builder");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, executable_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(down[0]);
  ::close(up[1]);
  if (rc != 0) {
    ::close(down[1]);
    ::close(up[0]);
    pid_ = -1;
    return internal_error("cannot start worker " + executable_ + ": " + std::strerror(rc));
  }
  to_worker_ = down[1];
  from_worker_ = up[0];
  ++starts_;
  return ok_status();
}

void WorkerProcess::stop() {
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

v1::MeasureResult WorkerProcess::measure(const v1::WorkItem& item, double deadline_s) {
  // A worker that died while idle (killed from outside: the OOM killer, an operator) is
  // replaced before the item is handed over: no config is blamed for it.
  if (int status = 0; pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
    logger("device")->warn("the idle worker {} died ({}); starting a new one before config {}",
                           pid_,
                           WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                               : "exit " + std::to_string(WEXITSTATUS(status)),
                           item.config().index());
    pid_ = -1;
    stop();
  }
  if (pid_ <= 0) {
    if (Status s = start(); !s)
      return failure(item, ss::MeasureErrorNo::kRuntimeDevice, s.error().message);
  }
  v1::MeasureResult result;
  ReadOutcome outcome = ReadOutcome::kClosed;
  if (write_frame(to_worker_, item)) outcome = read_frame(from_worker_, &result, deadline_s);
  if (outcome == ReadOutcome::kOk) {
    // A kernel fault on a GPU (an illegal address) leaves the worker's CUDA context unusable:
    // the result stands, and the next item gets a fresh worker and context. Other device
    // errors (a launch the driver refused) leave it working: the worker stays.
    if (options_.gpu >= 0 && result.error_no() == v1::RUNTIME_DEVICE &&
        ss::gpu_context_lost(result.error_msg())) {
      logger("device")->warn("config {}: GPU {} fault ({}); starting a new worker",
                             item.config().index(), options_.gpu, result.error_msg());
      stop();
    }
    return result;
  }

  // The worker is gone or stuck: find out which, then replace it.
  std::string what;
  ss::MeasureErrorNo code = ss::MeasureErrorNo::kRuntimeDevice;
  if (outcome == ReadOutcome::kTimedOut) {
    ::kill(pid_, SIGKILL);
    code = ss::MeasureErrorNo::kRunTimeout;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "no answer from the worker within %.1f s (build + check + timing); killed it",
                  deadline_s);
    what = buf;
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  if (outcome != ReadOutcome::kTimedOut) {
    if (WIFSIGNALED(status)) {
      what = "worker process died with signal " + std::to_string(WTERMSIG(status)) + " (" +
             strsignal(WTERMSIG(status)) + ")";
    } else if (WIFEXITED(status)) {
      what = "worker process exited with code " + std::to_string(WEXITSTATUS(status));
    } else {
      what = "worker process answered garbage";
    }
  }
  pid_ = -1;
  stop();
  logger("device")->warn("config {}: {}; starting a new worker", item.config().index(), what);
  return failure(item, code,
                 what + " while measuring config " + std::to_string(item.config().index()));
}

// ---------------------------------------------------------------------------------------
// The worker side.

namespace {}  // namespace

Expected<std::map<int64_t, std::string>> parse_fault_injection(const std::string& spec) {
  std::map<int64_t, std::string> faults;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    const size_t at = item.find('@');
    const std::string kind = item.substr(0, at);
    if (at == std::string::npos || (kind != "crash" && kind != "hang" && kind != "garbage" &&
                                    kind != "fast" && kind != "gpu-fault" && kind != "gpu-error" &&
                                    kind != "hog" && kind != "cuda-fault" && kind != "cuda-hang"))
      return invalid_argument("--fault-inject item '" + item +
                              "' is not crash@INDEX, hang@INDEX, garbage@INDEX, fast@INDEX, "
                              "gpu-fault@INDEX, gpu-error@INDEX, cuda-fault@INDEX, "
                              "cuda-hang@INDEX or hog@INDEX");
    const std::string index = item.substr(at + 1);
    char* rest = nullptr;
    errno = 0;
    const long long value = std::strtoll(index.c_str(), &rest, 10);
    if (index.empty() || *rest != '\0' || errno != 0 || value < 0)
      return invalid_argument("--fault-inject item '" + item + "': '" + index +
                              "' is not a config index");
    faults[value] = kind;
    start = end + 1;
  }
  return faults;
}

bool worker_memory_limit_supported() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;
#else
  return true;
#endif
}

namespace {

// hog@N: a measurement that allocates without end. Takes memory 64 MiB at a time (touched, so
// it is real) until an allocation fails (rethrown, as a real one would be) or 8 GiB are held.
void hog_memory() {
  std::vector<std::unique_ptr<char[]>> held;
  constexpr size_t kChunk = size_t{64} << 20;
  try {
    while (held.size() * kChunk < (size_t{8} << 30)) {
      held.emplace_back(new char[kChunk]);
      std::memset(held.back().get(), 1, kChunk);
    }
  } catch (const std::bad_alloc&) {
    logger("worker")->info("hog: allocation failed after {} MiB", held.size() * 64);
    throw;
  }
  logger("worker")->warn("hog: took 8 GiB without an allocation failing");
}

std::string memory_error(const WorkerOptions& options) {
  return "out of memory in the worker (its address space is bounded to " +
         std::to_string(static_cast<int64_t>(options.memory_limit_bytes) >> 20) +
         " MiB, --worker-memory)";
}

}  // namespace

namespace {

/// A builder's answer: the item's kernel built here, in a result whose cost is the build's
/// seconds (the client reads the kernel, not the cost).
v1::MeasureResult build(const v1::WorkItem& item, const ss::Task& task) {
  auto space = ss::make_config_space(task);
  if (!space) return failure(item, ss::MeasureErrorNo::kInstantiationError, space.error().message);
  auto config = wire::config_from_proto(*space, item.config());
  if (!config)
    return failure(item, ss::MeasureErrorNo::kInstantiationError, config.error().message);
  const auto start = std::chrono::steady_clock::now();
  auto kernel = measure::build_kernel(task, *space, *config);
  ss::MeasureResult r;
  r.config_index = config->index;
  if (!kernel) {
    r = measure::finish_result(std::move(r), measure::build_error_no(task, kernel.error()),
                               kernel.error().message, start);
  } else {
    r.compile_s = kernel->build_s;
    r.kernel = std::make_shared<const ss::KernelBinary>(std::move(kernel).value());
    r = measure::finish_result(std::move(r), ss::MeasureErrorNo::kNoError, "", start);
    r.costs = {r.compile_s};
  }
  v1::MeasureResult answer;
  wire::result_to_proto(r, &answer);
  return answer;
}

}  // namespace

int run_device_worker(const WorkerOptions& options) {
  // Die with the device server, even while stuck in a kernel. Not PR_SET_PDEATHSIG: it fires
  // when the *thread* that spawned the worker ends, and a replacement worker is spawned by the
  // slot thread that saw its predecessor crash, which ends with the tracker connection.
  const pid_t server = ::getppid();
  if (server == 1) return 0;
  std::thread([server] {
    while (::getppid() == server) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(0);
  }).detach();
  // The protocol owns stdout: anything printed goes to stderr instead.
  const int out = ::dup(1);
  ::dup2(2, 1);
  const auto parsed = parse_fault_injection(options.fault_inject);
  if (!parsed) {
    logger("worker")->error("{}", parsed.error().message);
    return 2;
  }
  const std::map<int64_t, std::string>& faults = *parsed;
  if (options.memory_limit_bytes > 0 && options.gpu < 0 && worker_memory_limit_supported()) {
    const rlim_t limit = static_cast<rlim_t>(options.memory_limit_bytes);
    const rlimit bound{limit, limit};
    if (::setrlimit(RLIMIT_AS, &bound) != 0)
      logger("worker")->warn("cannot bound the address space to {} bytes: {}", limit,
                             std::strerror(errno));
  }
  std::string cached_key;
  std::unique_ptr<measure::Measurer> measurer;
  std::unique_ptr<ss::ConfigSpace> space;
  std::string prepare_error;
  for (;;) {
    v1::WorkItem item;
    const ReadOutcome o = read_frame(0, &item, -1);
    if (o == ReadOutcome::kClosed) return 0;
    if (o != ReadOutcome::kOk) return 3;
    const int64_t index = item.config().index();
    if (auto f = faults.find(index); f != faults.end()) {
      if (f->second == "crash") ::raise(SIGSEGV);
      if (f->second == "hang")
        for (;;) ::pause();
    }
    v1::MeasureResult answer;
    if (auto f = faults.find(index);
        f != faults.end() && (f->second == "cuda-fault" || f->second == "cuda-hang")) {
      // A real fault on the real GPU: the driver's own error, or no answer at all.
      const Status s = options.gpu < 0 ? unavailable(f->second + " needs a GPU worker")
                                       : launch_fault_kernel(options.gpu, f->second == "cuda-hang");
      answer =
          failure(item, ss::MeasureErrorNo::kRuntimeDevice,
                  f->second + " injected: " + (s ? std::string("no error") : s.error().message));
      if (!write_frame(out, answer)) return 0;
      continue;
    }
    // An allocation that fails anywhere in the measurement is this item's error: the worker
    // (and its memory) stay usable.
    try {
      if (auto f = faults.find(index); f != faults.end() && f->second == "hog") hog_memory();
      auto task = wire::task_from_proto(item.workload(), item.target());
      if (options.builder) {
        answer = task
                     ? build(item, *task)
                     : failure(item, ss::MeasureErrorNo::kInstantiationError, task.error().message);
      } else if (item.workload().has_layout_transform()) {
        answer = time_transform(item, options);
      } else if (!task) {
        answer = failure(item, ss::MeasureErrorNo::kInstantiationError, task.error().message);
      } else if (const double bytes = ss::workload_bytes(task->workload);
                 options.max_work_bytes > 0 && bytes > options.max_work_bytes) {
        answer = failure(item, ss::MeasureErrorNo::kInstantiationError,
                         "the workload's operands and output need " +
                             std::to_string(static_cast<int64_t>(bytes)) +
                             " bytes, over this device's --max-work-bytes " +
                             std::to_string(static_cast<int64_t>(options.max_work_bytes)));
      } else {
        const auto& t = item.timing();
        const std::string key = item.workload().SerializeAsString() + t.SerializeAsString();
        if (key != cached_key || !measurer) {
          const measure::MeasureOptions measure_options = measure_options_of(t, options);
          auto m = options.gpu < 0 && ss::template_of(*task).target_kind().runs_on_gpu()
                       ? Expected<std::unique_ptr<measure::Measurer>>(
                             unavailable("this worker has no GPU"))
                       : measure::make_measurer(*task, measure_options);
          auto sp = ss::make_config_space(*task);
          measurer.reset();
          cached_key.clear();
          if (!m) {
            prepare_error = m.error().message;
          } else if (!sp) {
            prepare_error = sp.error().message;
          } else {
            measurer = std::move(m).value();
            space = std::make_unique<ss::ConfigSpace>(std::move(sp).value());
            cached_key = key;
          }
        }
        if (!measurer) {
          answer = failure(item, ss::MeasureErrorNo::kInstantiationError,
                           "cannot prepare the task on this device: " + prepare_error);
        } else {
          auto config = wire::config_from_proto(*space, item.config());
          const bool gpu_task = ss::template_of(*task).target_kind().runs_on_gpu();
          const auto compile_error =
              gpu_task ? ss::MeasureErrorNo::kCompileDevice : ss::MeasureErrorNo::kCompileHost;
          std::optional<ss::KernelBinary> kernel;
          std::string kernel_error;
          if (item.has_kernel() && (gpu_task || options.accept_built_code)) {
            auto k = wire::kernel_binary_from_proto(item.kernel());
            if (k)
              kernel = std::move(k).value();
            else
              kernel_error = k.error().message;
          }
          if (!config) {
            answer = failure(item, ss::MeasureErrorNo::kInstantiationError, config.error().message);
          } else if (!kernel_error.empty()) {
            answer = failure(item, compile_error, kernel_error);
          } else if (gpu_task && !kernel && !options.build_on_device) {
            answer = failure(item, compile_error,
                             "this GPU server times kernels built elsewhere and was sent none: "
                             "tune with --build-workers N (the default builds on the client's "
                             "cores) or start the server with --build-on-device");
          } else {
            const auto results =
                measurer->measure_built(*space, {*config}, {kernel ? &*kernel : nullptr});
            wire::result_to_proto(results.front(), &answer);
          }
        }
      }
    } catch (const std::bad_alloc&) {
      measurer.reset();
      cached_key.clear();
      answer = failure(item, ss::MeasureErrorNo::kRuntimeDevice, memory_error(options));
    }
    if (auto f = faults.find(index); f != faults.end() && f->second == "garbage") {
      answer.clear_costs_s();
      answer.add_costs_s(std::nan(""));
      answer.set_error_no(v1::NO_ERROR);
    }
    if (auto f = faults.find(index); f != faults.end() && f->second == "fast") {
      // A lie that parses: a well-formed, error-free result no hardware could measure.
      answer.clear_costs_s();
      answer.add_costs_s(1e-9);
      answer.set_error_no(v1::NO_ERROR);
    }
    if (auto f = faults.find(index); f != faults.end() && f->second.starts_with("gpu-")) {
      // What the GPU measurer reports for a kernel that faulted (sticky) or a launch the
      // driver refused (not sticky), without a GPU.
      answer.clear_costs_s();
      answer.add_costs_s(ss::kErrorCost);
      answer.set_error_no(v1::RUNTIME_DEVICE);
      answer.set_error_msg(f->second == "gpu-fault"
                               ? "running k: an illegal memory access was encountered (CUDA "
                                 "error 700); " +
                                     std::string(ss::kGpuContextLost)
                               : "launching k: too many resources requested for launch (CUDA "
                                 "error 701)");
    }
    if (!write_frame(out, answer)) return 0;
  }
}

}  // namespace tensortune::device_server
