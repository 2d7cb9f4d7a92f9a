// RecordStore::quick_check: SQLite's own fast consistency check, turned into an error that
// names the file and the way out; and the verdict kept beside the file, so that reading an
// unchanged DB does not pay an O(size) check on every open.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records {

using detail::Statement;

namespace {

// What the filesystem says of a file: a write through it moves the modification and change
// times (the change time cannot be set back by a user), a replacement changes the inode.
struct FileStamp {
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<int64_t>(st.st_size),
                   int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                   int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec};
}

constexpr const char* kVerdictHeader = "tensortune quick_check ok v1";

std::optional<FileStamp> read_verdict(const std::string& verdict_path) {
  std::ifstream in(verdict_path);
  std::string header;
  if (!std::getline(in, header) || header != kVerdictHeader) return std::nullopt;
  FileStamp s;
  if (!(in >> s.device >> s.inode >> s.size >> s.mtime_ns >> s.ctime_ns)) return std::nullopt;
  return s;
}

// Best effort: a directory we cannot write to only means the next open checks again.
void write_verdict(const std::string& verdict_path, const FileStamp& s) {
  const std::string tmp = verdict_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kVerdictHeader << "\n"
        << s.device << " " << s.inode << " " << s.size << " " << s.mtime_ns << " " << s.ctime_ns
        << "\n";
    if (!out) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, verdict_path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

std::string RecordStore::verdict_path(const std::string& db_path) { return db_path + "-checked"; }

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

Status RecordStore::check_on_open(Check check) {
  if (check == Check::kNone) return ok_status();
  const std::string verdict = verdict_path(path_);
  const auto before = stamp_of(path_);
  if (check == Check::kUnlessVerified && before && read_verdict(verdict) == before)
    return ok_status();
  TT_RETURN_IF_ERROR(quick_check());
  // Kept only when nobody wrote the file while it was checked: the verdict is of these bytes.
  if (before && stamp_of(path_) == before) write_verdict(verdict, *before);
  return ok_status();
}

}  // namespace tensortune::records
