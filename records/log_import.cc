// `records import`: AutoTVM logs into the record store, as a two-stage pipeline. One thread
// reads, scans and checks the lines and encodes each record (its config's index and entity
// JSON); the calling thread, which owns the store's connection, writes them. On a log of many
// tasks the two stages cost about the same, so the import runs nearly twice as fast as one
// thread doing both, and SQLite still sees a single writer.
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>

#include "records/autotvm_log.h"
#include "records/detail/log_line_scanner.h"
#include "schedule_space/template.h"

namespace tensortune::records {

namespace ss = schedule_space;

namespace {

// What the reading stage hands the writing stage, in log order. Tasks are numbered by the
// reader (`local`); the writer maps them to DB ids as NewTask events arrive.
struct NewTask {
  size_t local = 0;
  TaskInfo info;
};
struct EncodedRow {
  size_t local = 0;
  int64_t config_index = 0;
  std::string entity_json;
  ss::MeasureResult result;
};
using Event = std::variant<NewTask, EncodedRow>;
using Batch = std::vector<Event>;

// A bounded hand-over of batches between the two stages. The reader ends it with its final
// status; the writer abandons it when it fails, which makes the reader stop.
class BatchQueue {
 public:
  static constexpr size_t kMaxBatches = 32;  // covers a flush of staged rows

  // false: the writer has given up; stop reading.
  bool push(Batch batch) {
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return abandoned_ || batches_.size() < kMaxBatches; });
    if (abandoned_) return false;
    batches_.push_back(std::move(batch));
    ready_.notify_one();
    return true;
  }
  void finish(Status end) {
    std::lock_guard lock(mu_);
    end_ = std::move(end);
    finished_ = true;
    ready_.notify_one();
  }
  // nullopt once the reader finished and every batch was taken.
  std::optional<Batch> pop() {
    std::unique_lock lock(mu_);
    ready_.wait(lock, [&] { return finished_ || !batches_.empty(); });
    if (batches_.empty()) return std::nullopt;
    Batch b = std::move(batches_.front());
    batches_.pop_front();
    room_.notify_one();
    return b;
  }
  void abandon() {
    std::lock_guard lock(mu_);
    abandoned_ = true;
    room_.notify_one();
  }
  // The reader's final status; valid after pop() returned nullopt.
  Status end() {
    std::lock_guard lock(mu_);
    return end_;
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<Batch> batches_;
  bool finished_ = false, abandoned_ = false;
  Status end_ = ok_status();
};

// input[1] of a line that failed to parse, for grouping skipped records; "?" when absent.
std::string task_name_of(const std::string& line) {
  try {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("input") && j["input"].is_array() && j["input"].size() > 1 &&
        j["input"][1].is_string())
      return j["input"][1].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  return "?";
}

// The reading stage. A log holds thousands of lines per task: its space and device key are
// made once, from the first line the validating parser reads. The lines after it are scanned
// (their config and result only) and find it by their `input` text.
class LogReader {
 public:
  LogReader(const std::string& source, const ImportOptions& options, ImportStats& stats)
      : source_(source), options_(options), stats_(stats) {}

  Status read(std::istream& in, BatchQueue& out) {
    static constexpr size_t kBatchEvents = 1024;
    Batch batch;
    std::string line;
    while (std::getline(in, line)) {
      ++stats_.lines;
      const size_t first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      TT_RETURN_IF_ERROR(encode(line, batch));
      if (batch.size() >= kBatchEvents) {
        if (!out.push(std::move(batch))) return ok_status();
        batch.clear();
      }
    }
    if (!batch.empty()) out.push(std::move(batch));
    return ok_status();
  }

 private:
  struct KnownTask {
    ss::ConfigSpace space;
    size_t local = 0;
    std::string device_key;
    const ss::Template* tmpl = nullptr;  ///< reads the log's entities (entity_from_autotvm)
  };
  struct Unsupported {
    std::string task_name, reason;
  };

  std::string where() const { return source_ + ":" + std::to_string(stats_.lines); }

  Status encode(const std::string& line, Batch& batch) {
    std::optional<detail::ScannedLine> scanned = scanner_.scan(line);
    const KnownTask* task = nullptr;
    if (scanned) {
      if (auto u = unsupported_by_input_.find(scanned->input_key);
          u != unsupported_by_input_.end()) {
        ++stats_.skipped[u->second.task_name].count;
        return ok_status();
      }
      if (auto t = by_input_.find(scanned->input_key); t != by_input_.end()) task = t->second;
    }
    if (!task) {
      TT_ASSIGN_OR_RETURN(task, learn(line, scanned, batch));
      if (!task) return ok_status();  // skipped as unsupported
    }
    auto config =
        task->space.config_from_entity(task->tmpl->entity_from_autotvm(std::move(scanned->entity)));
    if (!config && options_.skip_unsupported) {
      // A record of a supported task whose config our space does not hold (a split AutoTVM's
      // version of the template made differently): counted, the import goes on.
      const std::string name = task->space.template_name() + " (config)";
      ImportStats::Skipped& skipped = stats_.skipped[name];
      if (skipped.count++ == 0) skipped.reason = where() + ": " + config.error().message;
      return ok_status();
    }
    if (!config) return config.error().with_context(where() + ": config.entity");
    EncodedRow row{task->local, config->index, entity_to_json(task->space.entity_of(*config)),
                   std::move(scanned->result)};
    row.result.config_index = config->index;
    row.result.device_key = task->device_key;
    batch.emplace_back(std::move(row));
    return ok_status();
  }

  // The task of a line the scanner could not place: parsed and checked in full. A task not
  // seen before goes to the writer as a NewTask event ahead of its first row.
  Expected<const KnownTask*> learn(const std::string& line,
                                   std::optional<detail::ScannedLine>& scanned, Batch& batch) {
    auto parsed = parse_autotvm_line(line, options_.vector_lanes);
    if (!parsed && options_.skip_unsupported && parsed.error().code == ErrorCode::kUnimplemented) {
      Unsupported u{task_name_of(line), parsed.error().message};
      if (scanned) unsupported_by_input_[scanned->input_key] = u;
      ImportStats::Skipped& skipped = stats_.skipped[u.task_name];
      if (skipped.count++ == 0) skipped.reason = u.reason;
      return nullptr;
    }
    if (!parsed) return parsed.error().with_context(where());
    const auto key = std::make_pair(ss::workload_key(parsed->task), parsed->task.target.spec);
    auto it = known_.find(key);
    if (it == known_.end()) {
      auto space = ss::make_config_space(parsed->task);
      if (!space) return space.error().with_context(where());
      std::string device_key = options_.device_key;
      if (device_key.empty()) {
        auto target = parse_target_string(parsed->task.target.spec);
        if (!target) return target.error().with_context(where() + ": input[0]");
        device_key = device_key_from_target(*target);
      }
      stats_.device_keys.insert(device_key);
      const size_t local = known_.size();
      batch.emplace_back(NewTask{local, task_info(parsed->task, *space)});
      it = known_
               .emplace(key, KnownTask{std::move(space).value(), local, std::move(device_key),
                                       &ss::template_of(parsed->task)})
               .first;
    }
    if (scanned) {
      by_input_.emplace(scanned->input_key, &it->second);
    } else {  // the validating parser's fields stand in for the scanner's
      scanned = detail::ScannedLine{"", std::move(parsed->entity), parsed->logged_index,
                                    std::move(parsed->result)};
    }
    return &it->second;
  }

  const std::string& source_;
  const ImportOptions& options_;
  ImportStats& stats_;  // lines, skipped and device keys; the writer counts `imported`
  detail::LogLineScanner scanner_;
  std::map<std::pair<std::string, std::string>, KnownTask> known_;
  std::unordered_map<std::string, const KnownTask*> by_input_;
  std::unordered_map<std::string, Unsupported> unsupported_by_input_;
};

}  // namespace

Expected<ImportStats> import_autotvm_log(RecordStore& store, std::istream& in,
                                         const std::string& source, const ImportOptions& options) {
  ImportStats stats;
  int64_t imported = 0;
  TT_RETURN_IF_ERROR(store.bulk_insert([&]() -> Status {
    BatchQueue queue;
    LogReader reader(source, options, stats);
    std::thread reading([&] { queue.finish(reader.read(in, queue)); });
    const RunInfo run{"import", source, {}, {}};
    std::vector<int64_t> task_ids;  // by the reader's task number
    Status written = ok_status();
    while (written.has_value()) {
      std::optional<Batch> batch = queue.pop();
      if (!batch) break;
      for (Event& event : *batch) {
        if (auto* t = std::get_if<NewTask>(&event)) {
          auto id = store.ensure_task(t->info);
          if (!id) {
            written = id.error();
            break;
          }
          task_ids.resize(std::max(task_ids.size(), t->local + 1));
          task_ids[t->local] = *id;
          continue;
        }
        const auto& row = std::get<EncodedRow>(event);
        written = store.add_encoded_result(task_ids[row.local], row.config_index, row.entity_json,
                                           row.result, run, -1);
        if (!written.has_value()) break;
        ++imported;
      }
    }
    queue.abandon();  // a reader still running stops at its next batch
    reading.join();
    TT_RETURN_IF_ERROR(written);
    return queue.end();
  }));
  stats.imported = imported;
  return stats;
}

}  // namespace tensortune::records
