// The graph tuner's tables of the record store (record_store.h): layout-transform times and
// graph-best records.
#include <sqlite3.h>

#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records {
using detail::Statement;

Expected<std::optional<RecordStore::TransformCost>> RecordStore::transform_cost(
    const std::string& device_key, const std::string& shape, int64_t from_block, int64_t to_block) {
  Statement q(db_.get(),
              "SELECT seconds, measured FROM layout_transforms WHERE device_key = ? AND shape = ? "
              "AND from_block = ? AND to_block = ?");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, device_key);
  q.bind(2, shape);
  q.bind(3, from_block);
  q.bind(4, to_block);
  std::optional<TransformCost> out;
  if (q.step()) out = TransformCost{q.real(0), q.int64(1) != 0};
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

Status RecordStore::put_transform_cost(const std::string& device_key, const std::string& shape,
                                       int64_t from_block, int64_t to_block, TransformCost cost) {
  Statement q(db_.get(),
              "INSERT OR REPLACE INTO layout_transforms(device_key, shape, from_block, to_block, "
              "seconds, measured) VALUES (?, ?, ?, ?, ?, ?)");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, device_key);
  q.bind(2, shape);
  q.bind(3, from_block);
  q.bind(4, to_block);
  q.bind(5, cost.seconds);
  q.bind(6, static_cast<int64_t>(cost.measured));
  return q.run();
}

Expected<int> RecordStore::transform_format() {
  Statement q(db_.get(), "SELECT value FROM meta WHERE key = 'layout_transforms_format'");
  TT_RETURN_IF_ERROR(q.prepared());
  int format = 1;
  if (q.step()) {
    try {
      format = std::stoi(q.text(0));
    } catch (const std::exception&) {
      return Error{ErrorCode::kDataLoss, "record DB " + path_ +
                                             ": meta layout_transforms_format = '" + q.text(0) +
                                             "' is not a number"};
    }
  }
  TT_RETURN_IF_ERROR(q.status());
  return format;
}

Status RecordStore::reset_transforms(int format) {
  return transaction([&]() -> Status {
    TT_RETURN_IF_ERROR(exec("DELETE FROM layout_transforms"));
    Statement put(db_.get(),
                  "INSERT OR REPLACE INTO meta(key, value) VALUES ('layout_transforms_format', ?)");
    TT_RETURN_IF_ERROR(put.prepared());
    put.bind(1, std::to_string(format));
    return put.run();
  });
}

Status RecordStore::put_graph_best(const std::string& model, const std::string& device_key,
                                   const std::vector<GraphBestEntry>& entries) {
  return transaction([&]() -> Status {
    Statement clear(db_.get(), "DELETE FROM graph_best WHERE model = ? AND device_key = ?");
    TT_RETURN_IF_ERROR(clear.prepared());
    clear.bind(1, model);
    clear.bind(2, device_key);
    TT_RETURN_IF_ERROR(clear.run());
    for (const GraphBestEntry& e : entries) {
      Statement put(db_.get(),
                    "INSERT INTO graph_best(model, device_key, node, workload_key, entity) "
                    "VALUES (?, ?, ?, ?, ?)");
      TT_RETURN_IF_ERROR(put.prepared());
      put.bind(1, model);
      put.bind(2, device_key);
      put.bind(3, e.node);
      put.bind(4, e.workload_key);
      put.bind(5, e.entity_json);
      TT_RETURN_IF_ERROR(put.run());
    }
    return ok_status();
  });
}

Expected<std::vector<RecordStore::GraphBestEntry>> RecordStore::graph_best(
    const std::string& model, const std::string& device_key) {
  Statement q(db_.get(),
              "SELECT node, workload_key, entity FROM graph_best WHERE model = ? AND "
              "device_key = ? ORDER BY node");
  TT_RETURN_IF_ERROR(q.prepared());
  q.bind(1, model);
  q.bind(2, device_key);
  std::vector<GraphBestEntry> out;
  while (q.step()) out.push_back({q.text(0), q.text(1), q.text(2)});
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

}  // namespace tensortune::records
