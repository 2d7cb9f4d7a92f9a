// The record store's cache of built kernels (record_store.h): binaries by the content that
// determines them, so that a config built once for a device kind is never built again, by any
// run of this client.
#include <sqlite3.h>

#include <chrono>

#include "records/detail/statement.h"
#include "records/record_store.h"

namespace tensortune::records {
using detail::Statement;
namespace ss = schedule_space;

namespace {

constexpr char kCreateKernelCache[] = R"sql(
CREATE TABLE IF NOT EXISTS kernel_cache (
  source_sha256 TEXT NOT NULL,  -- of the source text it was compiled from
  format        TEXT NOT NULL,  -- "cubin", "cpu-object"
  arch          TEXT NOT NULL,  -- "sm_90"; a CPU's LLVM name
  features      TEXT NOT NULL,  -- a CPU object's features, comma-separated
  compiler      TEXT NOT NULL,  -- "NVRTC 13.0", "LLVM 14.0.6"
  code          BLOB NOT NULL,
  build_s       REAL NOT NULL,  -- what the build took
  created       REAL NOT NULL,  -- unix seconds
  PRIMARY KEY (source_sha256, format, arch, features, compiler)
);
)sql";

std::string joined(const std::vector<std::string>& features) {
  std::string out;
  for (const std::string& f : features) out += (out.empty() ? "" : ",") + f;
  return out;
}

/// Whether the cache's table exists (it is made by the first kernel stored).
Expected<bool> has_kernel_cache(sqlite3* db) {
  Statement q(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kernel_cache'");
  TT_RETURN_IF_ERROR(q.prepared());
  const bool found = q.step();
  TT_RETURN_IF_ERROR(q.status());
  return found;
}

/// Binds the build's key (everything but its code) to parameters 1-5 of `q`.
void bind_key(Statement& q, const ss::KernelBinary& key) {
  q.bind(1, key.source_sha256);
  q.bind(2, std::string(ss::kernel_format_name(key.format)));
  q.bind(3, key.arch);
  q.bind(4, joined(key.features));
  q.bind(5, key.compiler);
}

}  // namespace

Expected<std::optional<ss::KernelBinary>> RecordStore::cached_kernel(const ss::KernelBinary& key) {
  TT_ASSIGN_OR_RETURN(const bool exists, has_kernel_cache(db_.get()));
  if (!exists) return std::optional<ss::KernelBinary>();
  Statement q(db_.get(),
              "SELECT code, build_s FROM kernel_cache WHERE source_sha256 = ? AND format = ? AND "
              "arch = ? AND features = ? AND compiler = ?");
  TT_RETURN_IF_ERROR(q.prepared());
  bind_key(q, key);
  std::optional<ss::KernelBinary> out;
  if (q.step()) {
    out = key;
    out->code = q.blob(0);
    out->build_s = q.real(1);
  }
  TT_RETURN_IF_ERROR(q.status());
  return out;
}

Status RecordStore::cache_kernel(const ss::KernelBinary& built, int64_t max_bytes) {
  return transaction([&]() -> Status {
    TT_RETURN_IF_ERROR(exec(kCreateKernelCache));
    Statement put(db_.get(),
                  "INSERT OR REPLACE INTO kernel_cache(source_sha256, format, arch, features, "
                  "compiler, code, build_s, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    TT_RETURN_IF_ERROR(put.prepared());
    bind_key(put, built);
    put.bind_blob(6, built.code);
    put.bind(7, built.build_s);
    put.bind(
        8,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    TT_RETURN_IF_ERROR(put.run());
    // Oldest first out: the newest kernels are those a resumed or repeated run asks for.
    Statement trim(db_.get(),
                   "DELETE FROM kernel_cache WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                   "sum(length(code)) OVER (ORDER BY created DESC, rowid DESC) AS kept FROM "
                   "kernel_cache) WHERE kept > ?)");
    TT_RETURN_IF_ERROR(trim.prepared());
    trim.bind(1, max_bytes);
    return trim.run();
  });
}

Expected<RecordStore::KernelCacheSize> RecordStore::kernel_cache_size() {
  KernelCacheSize size;
  TT_ASSIGN_OR_RETURN(const bool exists, has_kernel_cache(db_.get()));
  if (!exists) return size;
  Statement q(db_.get(), "SELECT count(*), coalesce(sum(length(code)), 0) FROM kernel_cache");
  TT_RETURN_IF_ERROR(q.prepared());
  if (q.step()) size = {q.int64(0), q.int64(1)};
  TT_RETURN_IF_ERROR(q.status());
  return size;
}

}  // namespace tensortune::records
