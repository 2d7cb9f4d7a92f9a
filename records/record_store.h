#pragma once
/// \file
/// The SQLite record store: every measurement of every task, errors included.
///
/// Schema (see schema.cc): tasks (one per workload key and target), configs (one per task and
/// config index, with the entity as JSON), results (one per measurement, all MeasureResult
/// fields plus the tuner and the trial number). WAL mode; every write is one transaction, so a
/// kill at any moment leaves a consistent DB. "Best" = the lowest mean cost among error-free
/// results for (workload key, target, device key).
///
/// One RecordStore = one connection; use one per thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedule_space/config_space.h"
#include "schedule_space/kernel_binary.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/error.h"

struct sqlite3;

namespace tensortune::records::detail {
class Statement;
}

namespace tensortune::records {

struct TaskInfo {
  std::string workload_key;
  std::string template_name;
  std::string target;
  double flop = 0;
  int64_t space_size = 0;
};

TaskInfo task_info(const schedule_space::Task& task, const schedule_space::ConfigSpace& space);

/// Who produced a batch of results.
struct RunInfo {
  std::string tuner;   ///< "grid", "random", "import", ...
  std::string run_id;  ///< groups the results of one tuning run (for plots)
  /// The farm's attribution (the tracker's archive): the credential whose job it was and the
  /// device that measured it. Empty elsewhere (and in bulk imports).
  std::string client, device;
};

/// One stored measurement, as read back.
struct StoredRecord {
  TaskInfo task;
  int64_t config_index = 0;
  std::string entity_json;  ///< AutoTVM entity: [["tile_ic", "sp", [-1, 16]], ...]
  schedule_space::MeasureResult result;
  std::string tuner;
  std::string run_id;
  int64_t trial = -1;
  std::string client, device;  ///< see RunInfo
};

/// The best record of one (workload, target, device key).
struct BestRecord {
  StoredRecord record;
  double gflops = 0;
  int64_t measured = 0;  ///< results stored for this group, errors included
};

/// Entity <-> AutoTVM's JSON entity list.
std::string entity_to_json(const schedule_space::Entity& entity);
Expected<schedule_space::Entity> entity_from_json(const std::string& json);

/// Caps the memory SQLite allocates in this process, all DBs together (its page caches give
/// pages back to stay under it; sqlite3_soft_heap_limit64). 0: no cap, the default, where each
/// DB connection's page cache may grow to 64 MiB. For long-running servers with a memory budget.
void limit_sqlite_heap(int64_t bytes);

class RecordStore {
 public:
  /// How open() checks the file for damage before reading or writing it.
  enum class Check {
    /// SQLite's quick_check, unless the file is unchanged (device, inode, size, modification
    /// and change times) since a check of it passed: the verdict is kept beside the DB
    /// (verdict_path). The default: reading an unchanged archive costs no O(size) pass.
    kUnlessVerified,
    /// quick_check whatever the verdict says: a tracker's archive when the tracker starts.
    kAlways,
    /// None: a second connection to a file this process's first open has just checked.
    kNone,
  };
  /// Opens or creates the DB at `path`. Fails, without touching the file, when it exists but
  /// is not a SQLite database, is damaged (quick_check, as `check` says) or has a schema from
  /// a newer tensortune.
  static Expected<std::unique_ptr<RecordStore>> open(const std::string& path,
                                                     Check check = Check::kUnlessVerified);
  /// Where open() keeps the verdict of its last passing check of `db_path` ("DB-checked").
  static std::string verdict_path(const std::string& db_path);
  ~RecordStore();
  RecordStore(const RecordStore&) = delete;
  RecordStore& operator=(const RecordStore&) = delete;

  const std::string& path() const { return path_; }

  /// Finds or inserts the task; returns its id.
  Expected<int64_t> ensure_task(const TaskInfo& task);

  /// Writes a batch of results of one task in one transaction. `trials[i]` is the trial number
  /// of results[i] in its run (or -1).
  Status add_results(int64_t task_id, const schedule_space::ConfigSpace& space,
                     const std::vector<schedule_space::Config>& configs,
                     const std::vector<schedule_space::MeasureResult>& results, const RunInfo& run,
                     const std::vector<int64_t>& trials);

  /// One result whose config is given as its index and entity JSON (entity_to_json's form):
  /// the import path, which encodes rows on a thread of its own. Inside bulk_insert it is
  /// staged like add_results' rows; outside, written at once.
  Status add_encoded_result(int64_t task_id, int64_t config_index, const std::string& entity_json,
                            const schedule_space::MeasureResult& result, const RunInfo& run,
                            int64_t trial);

  /// Config indices of the task already measured on the device key (errors included), so
  /// that a resumed run skips them. `threads` > 0: only results measured on that many threads
  /// (a config timed on one thread is not measured for two); 0: any.
  Expected<std::set<int64_t>> measured_indices(int64_t task_id, const std::string& device_key,
                                               int threads = 0);

  /// Every result of the task on the device key, oldest first (to replay into a resumed tuner);
  /// `threads` as in measured_indices.
  Expected<std::vector<StoredRecord>> task_records(int64_t task_id, const std::string& device_key,
                                                   int threads = 0);

  /// The best error-free record for the workload on the device key (any target when `target`
  /// is empty; any thread count when `threads` is 0). nullopt when there is none.
  Expected<std::optional<BestRecord>> best(const std::string& workload_key,
                                           const std::string& target, const std::string& device_key,
                                           int threads = 0);
  /// The best record of every (workload, target, device key) group.
  Expected<std::vector<BestRecord>> best_all();

  /// Filters of best-record queries; empty fields match everything.
  struct BestQuery {
    std::string template_name;  ///< a template name, or an op name (without the suffix)
    std::string shape;          ///< a tensor shape of the workload ("1x64x56x56", "64x64x3x3")
    std::vector<std::string> workload_keys;  ///< exactly these (a model's tasks)
    std::string device_key;
    int threads = 0;              ///< 0: any
    double since = 0, until = 0;  ///< result timestamps, unix seconds; 0: open
    int top_k = 1;                ///< per (workload, target, device key), 1..1000
    /// Results measured by these farm devices (results.device) do not count, for a device
    /// found lying after the fact. Reads the results, not the best-record tables.
    std::vector<std::string> exclude_devices;
  };
  /// The fastest error-free records per (workload, target, device key) group that match, the
  /// best first within a group, groups in task order; `measured` counts the group's results
  /// (errors included) under the same filters. Without a time range it reads the best-record
  /// tables (top_k <= kTopResults); with one, or a larger top_k, it scans the matching tasks'
  /// results. A malformed filter is kInvalidArgument naming it.
  Expected<std::vector<BestRecord>> query_best(const BestQuery& query);
  /// The same, handing each record to `each` as the query yields it (for answers too large to
  /// hold: `records best --jsonl` writes them while the query runs).
  Status query_best(const BestQuery& query, const std::function<void(BestRecord&&)>& each);
  /// Every stored record, oldest first (for export).
  Expected<std::vector<StoredRecord>> all_records();
  /// The configs and costs of the kTopResults fastest error-free results of every group of one
  /// template on the device key (any key when empty), without the rest of the record: what the
  /// compiler's candidates per workload draw from (AutoTVM's graph tuner keeps as many).
  struct TopEntity {
    std::string workload_key, entity_json;
    double mean_cost = 0;
    int threads = 1;  ///< the thread count it was measured on (groups are per thread count)
  };
  Expected<std::vector<TopEntity>> top_entities(const std::string& template_name,
                                                const std::string& device_key);
  Expected<int64_t> result_count();

  /// A (task, device key) group's tuning curve, as a dashboard draws it.
  struct TaskProgress {
    std::string workload_key, template_name, device_key;
    int64_t results = 0;  ///< errors included
    /// (results so far, best GFLOPS so far) at every improvement, and at the last result.
    std::vector<std::pair<int64_t, double>> best;
  };
  /// The `groups` groups with the most recent results, newest first (reads the latest 20,000
  /// results to find them, then each group's results in the order they were stored).
  Expected<std::vector<TaskProgress>> recent_progress(int groups);

  /// What the DB holds, for `records stats`.
  struct Stats {
    int64_t results = 0, failed = 0;  ///< failed: results with an error
    int64_t tasks = 0, configs = 0;
    std::vector<std::pair<std::string, int64_t>> device_keys;  ///< results per key, by key
    std::vector<std::pair<std::string, int64_t>> templates;    ///< tasks per template
    double oldest = 0, newest = 0;  ///< result timestamps (unix seconds); 0 when none
    int64_t transforms = 0, graph_best_models = 0;
    int64_t bytes = 0;  ///< page_count * page_size (the main file, without the WAL)
  };
  Expected<Stats> stats();

  /// best_groups and top_results against a full scan of the results (`records check`).
  struct BestCheck {
    int64_t results = 0, groups = 0;
    int64_t mismatches = 0;
    std::vector<std::string> examples;  ///< the first few, described
  };
  Expected<BestCheck> check_best_tables();
  /// SQLite's quick_check (pages, records, their order; not the index contents): kDataLoss
  /// naming the file, the first findings and the repair command on a damaged DB. open() runs
  /// it before anything else; `records check` is the full check.
  Status quick_check();
  /// Rebuilds them from a full scan (one transaction).
  Status rebuild_best_tables();

  /// `records compact`: keeps the `keep_top` fastest error-free results of every (task, device
  /// key) group and every result measured at or after `keep_since` (unix seconds; 0: none
  /// kept for being new), deletes the rest and the configs left without results, rebuilds the
  /// best-record tables (one transaction), then VACUUMs.
  struct CompactStats {
    int64_t before = 0, deleted = 0;
    int64_t bytes_before = 0, bytes_after = 0;
  };
  Expected<CompactStats> compact(int keep_top, double keep_since);

  // The graph tuner's tables (graph_tables.cc).
  /// A layout transform's stored time on the device key, if any.
  struct TransformCost {
    double seconds = 0;
    bool measured = true;  ///< false: an estimate
  };
  Expected<std::optional<TransformCost>> transform_cost(const std::string& device_key,
                                                        const std::string& shape,
                                                        int64_t from_block, int64_t to_block);
  Status put_transform_cost(const std::string& device_key, const std::string& shape,
                            int64_t from_block, int64_t to_block, TransformCost cost);
  /// How the stored transform times were taken (meta key layout_transforms_format; a DB
  /// without one has format 1). Times of another format are not comparable with new ones.
  Expected<int> transform_format();
  /// Deletes every stored transform time and records `format` (one transaction).
  Status reset_transforms(int format);
  /// One conv node's chosen record for a model.
  struct GraphBestEntry {
    std::string node, workload_key, entity_json;
  };
  /// Replaces the model's entries for the device key (one transaction).
  Status put_graph_best(const std::string& model, const std::string& device_key,
                        const std::vector<GraphBestEntry>& entries);
  /// The model's entries for the device key, by node name; empty when it was never graph-tuned.
  Expected<std::vector<GraphBestEntry>> graph_best(const std::string& model,
                                                   const std::string& device_key);

  // Built kernels by content (kernel_cache.cc): a table made on first use, so older
  // tensortune versions open the DB as before.
  /// The stored binary built from the same source for the same architecture, features, format
  /// and compiler as `key` (its code and build time are not read), if any.
  Expected<std::optional<schedule_space::KernelBinary>> cached_kernel(
      const schedule_space::KernelBinary& key);
  /// Stores a built kernel, then drops the oldest while the cache holds over `max_bytes` of
  /// code.
  Status cache_kernel(const schedule_space::KernelBinary& built, int64_t max_bytes);
  /// Kernels in the cache and their bytes of code.
  struct KernelCacheSize {
    int64_t kernels = 0, bytes = 0;
  };
  Expected<KernelCacheSize> kernel_cache_size();

  /// Runs `fn` inside one transaction: commit when it succeeds, roll back when it fails.
  Status transaction(const std::function<Status()>& fn);
  /// Runs `fn` inside one transaction in which the results it adds are staged in memory and
  /// written set-wise when it returns (configs, then results in the order added), skipping the
  /// best-record trigger; the groups they touched are merged into the best-record tables once,
  /// before the commit. For large batches (`records import`): several times fewer statements
  /// per result. Queries inside `fn` do not see its staged results. Other connections see the
  /// commit or nothing.
  Status bulk_insert(const std::function<Status()>& fn);

 private:
  /// Closes the connection however the store goes away.
  struct CloseDb {
    void operator()(sqlite3* db) const;
  };
  using DbHandle = std::unique_ptr<sqlite3, CloseDb>;

  RecordStore(DbHandle db, std::string path);
  /// open()'s check: quick_check as `check` says, the verdict kept when it passes.
  Status check_on_open(Check check);
  Status exec(const std::string& sql);
  Status insert_result(int64_t task_id, int64_t config_index, const std::string& entity_json,
                       const schedule_space::MeasureResult& r, const RunInfo& run, int64_t trial);
  /// Prepares `sql` into `cached` the first time; resets it for new bindings every time.
  Status prepare_cached(std::unique_ptr<detail::Statement>& cached, const char* sql);
  /// bulk_insert's work, foreign-key checks aside.
  Status bulk_insert_in_transaction(const std::function<Status()>& fn);
  /// Inside bulk_insert: the row goes to the temp table bulk_rows, written set-wise at its end.
  Status stage_result(int64_t task_id, int64_t config_index, const std::string& entity_json,
                      const schedule_space::MeasureResult& r, const RunInfo& run, int64_t trial);

  DbHandle db_;
  std::string path_;
  int transaction_depth_ = 0;
  /// Inside bulk_insert: writes the staged rows to configs and results and merges them into the
  /// best-record tables.
  Status flush_staged_rows();
  static constexpr int64_t kStagedRowsPerFlush = 8192;
  bool in_bulk_insert_ = false;
  int64_t staged_rows_ = 0;
  /// Prepared once per connection (after db_, so finalized before it closes): the insert path
  /// runs them for every result.
  std::unique_ptr<detail::Statement> insert_config_, insert_result_, stage_result_;
};

}  // namespace tensortune::records
