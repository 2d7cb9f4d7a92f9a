// `tensortune tune --model M`: every task of a network, locally one after the other (AutoTVM's
// tune_tasks), on a farm several at once, with a total ETA and a summary table at the end.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "proto/rpc_channel.h"
#include "records/record_store.h"
#include "support/stopwatch.h"
#include "tracker/tracker_client.h"
#include "tuner/task_extraction.h"
#include "workflow/graph_tune.h"
#include "workflow/imposed_blocks.h"
#include "workflow/model_source.h"
#include "workflow/model_tasks.h"
#include "workflow/op_task.h"
#include "workflow/tuning_session.h"

namespace tensortune::cli {
namespace {

namespace ss = schedule_space;

struct TuneModelFlags {
  workflow::ModelOptions model;
  std::string db = "tensortune.db";
  std::vector<int> only;  // 1-based task numbers
  std::string target = "llvm";
  workflow::TuningOptions tuning;
  bool graph_tune = false;
  bool no_transfer = false;
  int64_t imposed_trials = 16;  ///< 0: no measuring of imposed blocks
  int parallel_tasks = 0;       ///< 0: the farm key's slot count (with --tracker), else 1
  std::string threads = "1";    ///< thread counts: N, N,M,... or all
};

// How many tasks run at once: measured here, one (they would time each other); on a farm,
// --parallel-tasks or, by default, as many as the key has slots, so that no slot idles while a
// task's tuner plans its next batch.
Expected<int> tasks_at_once(const TuneModelFlags& f, const ss::Task& first, int selected) {
  if (f.tuning.tracker.empty()) {
    if (f.parallel_tasks > 1)
      return invalid_argument("--parallel-tasks " + std::to_string(f.parallel_tasks) +
                              ": tasks measured on this machine run one at a time (they would "
                              "disturb each other's timings); use it with --tracker");
    return 1;
  }
  if (f.parallel_tasks > 0) return std::min(f.parallel_tasks, selected);
  const std::string key = workflow::farm_device_key(first, f.tuning);
  TT_ASSIGN_OR_RETURN(auto e,
                      wire::tracker_endpoint(f.tuning.tracker, f.tuning.token_file, f.tuning.tls_ca,
                                             f.tuning.tls_cert, f.tuning.tls_key));
  TT_ASSIGN_OR_RETURN(auto client, tracker::TrackerClient::connect(e));
  auto status = client->status();
  if (!status) return 1;  // the measurers retry and report an unreachable tracker themselves
  int slots = 0;
  for (const auto& q : status->queues())
    if (q.device_key() == key) slots += q.slots();
  return std::clamp(slots, 1, selected);
}

// The whole run's progress over every task, for the total line and its ETA.
class TotalProgress {
 public:
  TotalProgress(int tasks, int64_t trials_each) : tasks_(tasks), trials_each_(trials_each) {}

  /// `may_print`: false where a task's progress line rewrites itself on a terminal.
  void on_batch(int task, const tuner::TuneProgress& p, int batch_size, bool may_print) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& t = tasks_state_[task];
    // The first report of a task includes what earlier runs measured; count one batch of it.
    measured_ += t.done < 0 ? std::min<int64_t>(p.done, batch_size) : p.done - t.done;
    t.done = p.done;
    t.total = p.total;
    if (may_print && seconds() - last_print_ > 15) print_locked();
  }
  void on_task_done(int task, const tuner::TuneProgress& p) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_state_[task] = {p.done, p.total};
    ++finished_;
    print_locked();
  }

 private:
  struct TaskState {
    int64_t done = -1, total = 0;
  };
  double seconds() const { return start_.seconds(); }
  void print_locked() {
    last_print_ = seconds();
    int64_t done = 0, total = 0;
    int running = 0;
    for (const auto& [task, t] : tasks_state_) {
      done += std::max<int64_t>(t.done, 0);
      total += t.total;
    }
    running = static_cast<int>(tasks_state_.size()) - finished_;
    total += trials_each_ * (tasks_ - static_cast<int64_t>(tasks_state_.size()));
    std::string eta = "-";
    if (measured_ > 0) {
      const double s = last_print_ * double(total - done) / double(measured_);
      eta = s < 120 ? std::to_string(int(s)) + " s" : std::to_string(int(s / 60)) + " min";
    }
    std::printf("[Total] tasks %d/%d done, %d running | trials %lld/%lld | %.0f s | ETA %s\n",
                finished_, tasks_, running, static_cast<long long>(done),
                static_cast<long long>(total), last_print_, eta.c_str());
    std::fflush(stdout);
  }

  const int tasks_;
  const int64_t trials_each_;
  const Stopwatch start_;
  std::mutex mu_;
  std::map<int, TaskState> tasks_state_;
  int finished_ = 0;
  int64_t measured_ = 0;
  double last_print_ = 0;
};

// "1 thread", "2 threads".
std::string threads_text(int threads) {
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

struct Row {
  int number;
  int threads;
  std::string op, workload;
  double best;
  int64_t trials;
  double seconds;
};

Status run_tune_model(const TuneModelFlags& f) {
  TT_ASSIGN_OR_RETURN(ss::Target target, workflow::op_target(f.target));
  TT_ASSIGN_OR_RETURN(auto range, workflow::sequence_range(f.model));
  TT_ASSIGN_OR_RETURN(auto extraction, workflow::extract_model_tasks(f.model, target));
  const std::set<int> only(f.only.begin(), f.only.end());
  const int count = static_cast<int>(extraction.tasks.size());
  for (int n : only)
    if (n < 1 || n > count)
      return invalid_argument("--only " + std::to_string(n) + ": the model has tasks 1.." +
                              std::to_string(count));
  std::vector<int> selected;  // 0-based, in task order
  for (int i = 0; i < count; ++i)
    if (only.empty() || only.count(i + 1)) selected.push_back(i);
  TT_ASSIGN_OR_RETURN(const std::vector<int> thread_counts,
                      workflow::parse_thread_counts(
                          f.threads, static_cast<int>(std::thread::hardware_concurrency())));
  const size_t per_task = thread_counts.size();
  // Created (or checked) once here, before any worker opens its own connection.
  TT_RETURN_IF_ERROR(records::RecordStore::open(f.db));
  int parallel = 1;
  if (!selected.empty()) {
    TT_ASSIGN_OR_RETURN(parallel, tasks_at_once(f, extraction.tasks[selected[0]].task,
                                                static_cast<int>(selected.size())));
  }
  std::string counts_text;
  for (int t : thread_counts) counts_text += (counts_text.empty() ? "" : ",") + std::to_string(t);
  std::printf("tuning %s: %d tasks%s, %s tuner, %lld trials each%s, records in %s%s\n",
              f.model.model.c_str(), count, only.empty() ? "" : " (a subset)",
              f.tuning.tuner.c_str(), static_cast<long long>(f.tuning.trials),
              per_task > 1 ? (" on each of " + counts_text + " threads").c_str() : "", f.db.c_str(),
              parallel > 1 ? (", " + std::to_string(parallel) + " tasks at once").c_str() : "");
  for (const auto& u : extraction.untunable) std::printf("not tunable: %s\n", u.c_str());
  if (!ss::target_kind_of(target).runs_on_gpu())
    std::printf("CPU model %s\n", ss::describe_cpu_model(ss::cpu_model_of(target)).c_str());

  workflow::TuningOptions tuning = f.tuning;
  // A model's tasks share templates: xgb pre-trains on what the DB already holds of the others.
  tuning.transfer_if_available = !f.no_transfer;
  // A task is tuned for its thread counts one after the other, so that xgb pre-trains each
  // count's model on the task's records at the counts before it (transfer).
  TotalProgress total(static_cast<int>(selected.size() * per_task), f.tuning.trials);
  std::vector<std::optional<Row>> rows(count * per_task);
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  std::optional<Error> first_error;
  // One worker per task at once; each has its own DB connection (RecordStore is per thread).
  auto fail = [&](Error e) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (!first_error) first_error = std::move(e);
  };
  auto failed = [&] {
    std::lock_guard<std::mutex> lock(error_mu);
    return first_error.has_value();
  };
  auto worker = [&] {
    auto store = records::RecordStore::open(f.db);
    if (!store) return fail(store.error());
    for (size_t k = next++; k < selected.size() && !failed(); k = next++) {
      const int i = selected[k];
      for (size_t c = 0; c < per_task && !failed(); ++c) {
        const int job = static_cast<int>(i * per_task + c);
        workflow::TuningOptions at_count = tuning;
        at_count.threads = thread_counts[c];
        workflow::TaskReporting reporting;
        reporting.line_per_batch = parallel > 1;
        reporting.on_progress = [&, job](const tuner::TuneProgress& p) {
          total.on_batch(job, p, tuning.batch_size, parallel > 1);
        };
        auto summary = workflow::tune_one_task(extraction.tasks[i].task, at_count, store->get(),
                                               i + 1, count, reporting);
        if (!summary)
          return fail(summary.error().with_context("task " + std::to_string(i + 1) + " on " +
                                                   threads_text(at_count.threads)));
        const auto& p = summary->result.progress;
        rows[job] = Row{i + 1,
                        at_count.threads,
                        std::string(ss::template_of(extraction.tasks[i].task).op_name()),
                        ss::describe_workload(extraction.tasks[i].task.workload),
                        p.best_gflops,
                        p.done,
                        p.elapsed_s};
        if (selected.size() * per_task > 1) total.on_task_done(job, p);
      }
    }
  };
  const Stopwatch started;
  std::vector<std::thread> workers;
  for (int w = 0; w < parallel; ++w) workers.emplace_back(worker);
  for (auto& w : workers) w.join();
  if (first_error) return *first_error;
  const double wall = started.seconds();

  // Columns as wide as their longest entry.
  int name_width = 8, workload_width = 8;
  for (const auto& r : rows)
    if (r) {
      name_width = std::max(name_width, static_cast<int>(r->op.size()));
      workload_width = std::max(workload_width, static_cast<int>(r->workload.size()));
    }
  std::printf("\n%3s  %-*s  %-*s %7s %12s %7s %9s\n", "#", name_width, "template", workload_width,
              "workload", "threads", "best GFLOPS", "trials", "seconds");
  for (const auto& r : rows)
    if (r)
      std::printf("%3d  %-*s  %-*s %7d %12.2f %7lld %9.1f\n", r->number, name_width, r->op.c_str(),
                  workload_width, r->workload.c_str(), r->threads, r->best,
                  static_cast<long long>(r->trials), r->seconds);
  std::printf("tuned %zu task%s%s in %.1f s of wall-clock%s\n", selected.size(),
              selected.size() == 1 ? "" : "s",
              per_task > 1 ? (" on " + counts_text + " threads").c_str() : "", wall,
              parallel > 1 ? (" (" + std::to_string(parallel) + " at once)").c_str() : "");
  // The blocks the network imposes on layers (NCHW[x]c on the CPU): their configs measured, so
  // that compile and the graph tuner choose among good ones. Not for a subset of the tasks.
  const bool gpu = ss::target_kind_of(target).runs_on_gpu();
  if (range && (f.imposed_trials > 0 || f.graph_tune))
    std::printf(
        "\na range of sequence lengths: the imposed-blocks and graph-tuning steps are for "
        "convolution layouts, not run\n");
  if (f.imposed_trials > 0 && only.empty() && !gpu && !range) {
    std::printf("\n");
    workflow::ModelOptions model = f.model;
    model.records = f.db;
    model.device_key = f.tuning.device_key.empty() ? f.tuning.farm_key : f.tuning.device_key;
    for (int threads : thread_counts) {
      workflow::TuningOptions t = f.tuning;
      t.trials = f.imposed_trials;
      t.threads = threads;
      TT_ASSIGN_OR_RETURN(int64_t measured, workflow::tune_imposed_blocks(model, t));
      if (measured > 0)
        std::printf("measured %lld configs at imposed blocks on %s\n",
                    static_cast<long long>(measured), threads_text(threads).c_str());
    }
  }
  if (f.graph_tune && !range) {
    if (gpu) {
      std::printf("\n--graph-tune: not run; graph tuning of GPU layouts is not built yet\n");
    } else {
      for (int threads : thread_counts) {
        std::printf("\ngraph tuning %s on %s:\n", f.model.model.c_str(),
                    threads_text(threads).c_str());
        workflow::GraphTuneOptions g;
        g.model = f.model;
        g.db = f.db;
        g.device_key = f.tuning.device_key.empty() ? f.tuning.farm_key : f.tuning.device_key;
        g.tracker = f.tuning.tracker;
        g.token_file = f.tuning.token_file;
        g.tls_ca = f.tuning.tls_ca;
        g.tls_cert = f.tuning.tls_cert;
        g.tls_key = f.tuning.tls_key;
        g.threads = threads;
        TT_RETURN_IF_ERROR(workflow::graph_tune(g));
      }
      return ok_status();
    }
  }
  if (range) {
    std::string shapes;
    for (const auto& s : f.model.input_shapes) shapes += " --input-shape " + s;
    std::printf(
        "\nCompile every bucket with these records: `tensortune compile --model %s%s "
        "--records %s -o net.tt`\n",
        f.model.model.c_str(), shapes.c_str(), f.db.c_str());
    return ok_status();
  }
  std::printf(
      "\nCompile-time use: `tensortune inspect --model %s --records %s` shows the tuned block "
      "sizes; `tensortune graph-tune --model %s --db %s` chooses them for the whole network.\n",
      f.model.model.c_str(), f.db.c_str(), f.model.model.c_str(), f.db.c_str());
  return ok_status();
}

}  // namespace

void add_tune_model_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<TuneModelFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Tune every task of a model (locally or on a farm with --tracker)");
  add_model_flags(cmd, flags->model, false);
  cmd->add_option("--db", flags->db, "SQLite record DB (created if missing)")
      ->capture_default_str();
  cmd->add_option("--target", flags->target,
                  "llvm (this CPU), or cuda / cuda-smXY: the CUDA templates, measured on --gpu "
                  "here or with --tracker on GPU servers (key cuda-smXY by default)")
      ->capture_default_str();
  add_precision_flag(cmd, flags->model.precision,
                     "their tasks, as `compile --precision` runs them");
  cmd->add_option("--only", flags->only,
                  "tune only these task numbers (as `tensortune tasks` lists them)");
  add_tuning_flags(*cmd, flags->tuning, /*threads_flag=*/false);
  cmd->add_option("--threads", flags->threads,
                  "thread counts each task is tuned for, one after the other: N, a list (1,2) or "
                  "all (1, the powers of two below this machine's cores, and its core count). "
                  "Records are kept per count and compile --threads T takes T's; xgb pre-trains "
                  "each count's cost model on the task's records at the counts before it")
      ->type_name("N|N,M|all")
      ->capture_default_str();
  add_algorithm_flags(cmd, flags->model.excluded_algorithms,
                      "tune no tasks of its templates (by default a 3x3 stride-1 conv has a "
                      "Winograd task beside its direct one, and compile takes the faster; task "
                      "numbers follow `tensortune tasks` with the same flags)");
  cmd->add_flag("--no-int8", flags->model.no_int8,
                "tune a quantized (QDQ) model's convolutions as float tasks, for `compile "
                "--no-int8` (by default they are conv2d_NCHWc_int8 tasks)");
  cmd->add_flag("--no-transfer", flags->no_transfer,
                "xgb: do not pre-train each task's cost model on the DB's records of the model's "
                "other workloads (done by default where there are some)");
  cmd->add_option("--parallel-tasks", flags->parallel_tasks,
                  "with --tracker: tasks tuned at once, each with its own tuner, their batches "
                  "sharing the farm's slots (default 0: as many as the key has slots)")
      ->check(tensortune::cli::at_least(0, 1024))
      ->group("Farm");
  cmd->add_option("--imposed-trials", flags->imposed_trials,
                  "after the tasks, compile the model with the records and measure up to this "
                  "many configs of each layer that runs at blocks its neighbours impose (a "
                  "depthwise conv between int8 convolutions, say), not at its fastest record's "
                  "(0: skip; not with --only)")
      ->capture_default_str()
      ->check(tensortune::cli::at_least(0, 100000));
  cmd->add_flag("--graph-tune", flags->graph_tune,
                "then run the graph tuner on the records (tensortune graph-tune): graph-best "
                "records that compile --records uses first");
  cmd->footer(
      "\nExamples:\n  tensortune tune --model resnet-18 --tuner xgb --trials 200 --db resnet18.db\n"
      "  tensortune tune --model model.onnx --input-shape input=1x3x224x224 --only 2 5 \\\n"
      "      --tracker farm:9190 --key x86-avx512\n"
      "  tensortune tune --model resnet-18 --target cuda-sm90 --tracker farm:9190 --tuner xgb\n"
      "  tensortune tune --model resnet-50 --tuner xgb --threads 1,2 --db r50.db\n"
      "Rerunning the same command resumes every task where it stopped.");
  cmd->callback([flags, &exit_code] {
    Status st = run_tune_model(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
