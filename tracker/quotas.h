#pragma once
/// \file
/// Per-client quotas: how much of a shared farm one client may hold, so that a
/// flooding client meets RESOURCE_EXHAUSTED naming the quota while the others' jobs go on.
/// The dispatcher's fair share (its round robin across clients) decides who runs; quotas bound
/// what waits in the queue and how fast it may arrive.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "support/error.h"

namespace tensortune::tracker {

/// Limits for one client; 0 means no limit, -1 (in a credential's overrides only) means "the
/// tracker's default".
struct Quota {
  int64_t queued_items = 0;        ///< items of its jobs not done yet (queued or measuring)
  int64_t running_jobs = 0;        ///< its jobs not finished yet
  int64_t batch_items = 0;         ///< configs in one job
  int64_t submits_per_minute = 0;  ///< jobs submitted in any 60 s

  static Quota unset() { return {-1, -1, -1, -1}; }
  /// `overrides` where set (>= 0), else these.
  Quota with(const Quota& overrides) const;
  /// "queued=10000 jobs=8 batch=1000 per_minute=600", limits of 0 shown as "none".
  std::string describe() const;
};

/// Sets one field from "queued=N", "jobs=N", "batch=N" or "per_minute=N"; an error names the
/// field and the value.
Status parse_quota_field(const std::string& text, Quota* quota);

/// What each client holds, checked against its quota. Thread-safe.
class QuotaBook {
 public:
  using Clock = std::chrono::steady_clock;

  explicit QuotaBook(Quota defaults) : defaults_(defaults) {}

  /// Per-client overrides of the defaults (from the tokens file; replaced on reload).
  void set_overrides(std::map<std::string, Quota> overrides);

  struct Refusal {
    std::string message;  ///< names the client, the quota and the numbers
    bool transient;       ///< false when waiting cannot help (a batch over batch_items)
  };
  /// Admits a job of `items` configs, `to_measure` of them for the devices (the rest come from
  /// the archive), and counts it; or says which quota it would exceed and counts nothing.
  std::optional<Refusal> admit(const std::string& client, int64_t items, int64_t to_measure,
                               Clock::time_point now);
  /// One of the client's admitted items is done.
  void item_done(const std::string& client);
  /// One of the client's jobs ended with `items_left` of its items not done.
  void job_done(const std::string& client, int64_t items_left);

  /// What a client holds now (for tests and status).
  struct Usage {
    int64_t queued_items = 0;
    int64_t running_jobs = 0;
  };
  Usage usage(const std::string& client) const;

 private:
  struct Held {
    int64_t items = 0, jobs = 0;
    std::deque<Clock::time_point> submits;  ///< within the last minute
  };
  Quota quota_locked(const std::string& client) const;

  const Quota defaults_;
  mutable std::mutex mu_;
  std::map<std::string, Quota> overrides_;
  std::map<std::string, Held> held_;
};

}  // namespace tensortune::tracker
