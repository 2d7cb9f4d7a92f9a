#pragma once
/// \file
/// Private to records/: a prepared SQLite statement that finalizes itself.

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "support/error.h"

namespace tensortune::records::detail {

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Status prepared() const {
    if (rc_ != SQLITE_OK) return error("preparing statement");
    return ok_status();
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_blob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  /// Returns true while a row is available; an error ends the iteration with `status()` set.
  bool step() {
    rc_ = sqlite3_step(stmt_);
    return rc_ == SQLITE_ROW;
  }
  Status status() const {
    if (rc_ != SQLITE_DONE && rc_ != SQLITE_ROW && rc_ != SQLITE_OK)
      return error("executing statement");
    return ok_status();
  }
  Status run() {
    step();
    return status();
  }
  /// Ready to run again with new bindings.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  std::string blob(int col) const {
    const void* b = sqlite3_column_blob(stmt_, col);
    return b ? std::string(static_cast<const char*>(b),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  Error error(const char* what) const {
    return Error{rc_ == SQLITE_NOTADB || rc_ == SQLITE_CORRUPT ? ErrorCode::kDataLoss
                                                               : ErrorCode::kUnavailable,
                 std::string("sqlite: ") + what + ": " + sqlite3_errmsg(db_)};
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

}  // namespace tensortune::records::detail
