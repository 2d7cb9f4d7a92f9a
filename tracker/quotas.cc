#include "tracker/quotas.h"

#include <charconv>

namespace tensortune::tracker {

namespace {

struct Field {
  const char* name;
  int64_t Quota::*member;
  const char* what;  ///< for messages: "running jobs"
};
constexpr Field kFields[] = {
    {"queued", &Quota::queued_items, "queued items"},
    {"jobs", &Quota::running_jobs, "running jobs"},
    {"batch", &Quota::batch_items, "configs per job"},
    {"per_minute", &Quota::submits_per_minute, "jobs per minute"},
};

}  // namespace

Quota Quota::with(const Quota& overrides) const {
  Quota q = *this;
  for (const Field& f : kFields)
    if (overrides.*f.member >= 0) q.*f.member = overrides.*f.member;
  return q;
}

std::string Quota::describe() const {
  std::string out;
  for (const Field& f : kFields)
    out += (out.empty() ? "" : " ") + std::string(f.name) + "=" +
           (this->*f.member > 0 ? std::to_string(this->*f.member) : std::string("none"));
  return out;
}

Status parse_quota_field(const std::string& text, Quota* quota) {
  const size_t eq = text.find('=');
  const std::string key = text.substr(0, eq);
  for (const Field& f : kFields) {
    if (key != f.name) continue;
    const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
    int64_t v = -1;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < 0)
      return invalid_argument("quota '" + text + "': " + key +
                              " takes a whole number >= 0 (0: no limit)");
    quota->*f.member = v;
    return ok_status();
  }
  return invalid_argument("quota '" + text +
                          "': not one of queued=N, jobs=N, batch=N, per_minute=N");
}

void QuotaBook::set_overrides(std::map<std::string, Quota> overrides) {
  std::lock_guard<std::mutex> lock(mu_);
  overrides_ = std::move(overrides);
}

Quota QuotaBook::quota_locked(const std::string& client) const {
  auto it = overrides_.find(client);
  return it == overrides_.end() ? defaults_ : defaults_.with(it->second);
}

std::optional<QuotaBook::Refusal> QuotaBook::admit(const std::string& client, int64_t items,
                                                   int64_t to_measure, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  const Quota q = quota_locked(client);
  Held& h = held_[client];
  while (!h.submits.empty() && now - h.submits.front() >= std::chrono::minutes(1))
    h.submits.pop_front();
  const std::string who = "client '" + client + "'";
  if (q.batch_items > 0 && items > q.batch_items)
    return Refusal{who + " is over its quota batch=" + std::to_string(q.batch_items) +
                       " (configs per job): this job has " + std::to_string(items) +
                       "; submit smaller batches",
                   false};
  if (q.running_jobs > 0 && h.jobs + 1 > q.running_jobs)
    return Refusal{who + " is at its quota jobs=" + std::to_string(q.running_jobs) +
                       " (running jobs): it has " + std::to_string(h.jobs) +
                       "; wait for one to finish",
                   true};
  if (q.queued_items > 0 && h.items + to_measure > q.queued_items)
    return Refusal{who + " would be over its quota queued=" + std::to_string(q.queued_items) +
                       " (items not done): it has " + std::to_string(h.items) + " and asks for " +
                       std::to_string(to_measure) + " more",
                   true};
  if (q.submits_per_minute > 0 && static_cast<int64_t>(h.submits.size()) >= q.submits_per_minute)
    return Refusal{who + " is at its quota per_minute=" + std::to_string(q.submits_per_minute) +
                       " (jobs submitted in the last 60 s)",
                   true};
  h.items += to_measure;
  h.jobs += 1;
  h.submits.push_back(now);
  return std::nullopt;
}

void QuotaBook::item_done(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(client);
  if (it != held_.end() && it->second.items > 0) --it->second.items;
}

void QuotaBook::job_done(const std::string& client, int64_t items_left) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(client);
  if (it == held_.end()) return;
  it->second.items = std::max<int64_t>(0, it->second.items - items_left);
  it->second.jobs = std::max<int64_t>(0, it->second.jobs - 1);
}

QuotaBook::Usage QuotaBook::usage(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(client);
  if (it == held_.end()) return {};
  return {it->second.items, it->second.jobs};
}

}  // namespace tensortune::tracker
