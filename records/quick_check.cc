// RecordStore::quick_check: SQLite's own fast consistency check, turned into an error that
// names the file and the way out.
#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records {

using detail::Statement;

Status RecordStore::quick_check() {
  // quick_check(N): pages, cell order, free lists and record formats, without the O(N log N)
  // index cross-check of integrity_check: seconds on a gigabyte archive.
  Statement q(db_.get(), "PRAGMA quick_check(5)");
  TT_RETURN_IF_ERROR(q.prepared());
  std::string findings;
  while (q.step()) findings += (findings.empty() ? "" : "; ") + q.text(0);
  if (!q.status().has_value() || findings != "ok") {
    if (findings.empty()) findings = sqlite3_errmsg(db_.get());
    return Error{ErrorCode::kDataLoss,
                 "record DB " + path_ + " is damaged (SQLite quick_check: " + findings +
                     "): nothing was read from or written to it. Keep a copy, then rebuild what "
                     "can be read: sqlite3 " +
                     path_ + " .recover | sqlite3 recovered.db"};
  }
  return ok_status();
}

}  // namespace tensortune::records
