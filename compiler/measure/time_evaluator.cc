#include "compiler/measure/time_evaluator.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tensortune::measure {

namespace {
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

TimingResult time_evaluator(const std::function<void()>& fn,
                            const std::function<void()>& before_round,
                            const TimeEvaluatorOptions& o) {
  const std::function<double()> clock = o.clock ? o.clock : std::function<double()>(steady_seconds);
  auto seconds_since = [&clock](double t) { return clock() - t; };
  TimingResult r;
  double t0 = clock();
  fn();
  r.warmup_seconds = seconds_since(t0);
  int64_t number = std::max<int64_t>(1, o.number);
  if (r.warmup_seconds * static_cast<double>(number) * o.repeat > o.timeout_s) {
    r.timed_out = true;
    return r;
  }
  const double min_s = o.min_repeat_ms / 1000.0;
  if (o.cutoff_s > 0 && r.warmup_seconds > o.cutoff_s) {
    if (before_round) before_round();
    t0 = clock();
    fn();
    r.round_seconds.push_back(seconds_since(t0));
    r.number = 1;
    r.cut_short = true;
    return r;
  }
  if (r.warmup_seconds > 0 && min_s > 0)
    number = std::max<int64_t>(number, static_cast<int64_t>(min_s / r.warmup_seconds) + 1);
  for (int round = 0; round < o.repeat; ++round) {
    if (before_round) before_round();
    double duration = 0;
    int zero_readings = 0;
    while (true) {
      t0 = clock();
      for (int64_t i = 0; i < number; ++i) fn();
      duration = seconds_since(t0);
      if (duration >= min_s) break;
      if (duration <= 0 && ++zero_readings >= 100) break;
      const double per_call = duration / static_cast<double>(number);
      const double grown = per_call > 0 ? min_s / per_call + 1 : 1.618 * number;
      number = std::max<int64_t>(static_cast<int64_t>(grown), static_cast<int64_t>(1.618 * number));
    }
    r.round_seconds.push_back(duration / static_cast<double>(number));
  }
  r.number = number;
  return r;
}

void flush_cache(const void* p, size_t bytes) {
#if defined(__x86_64__)
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
  _mm_mfence();
#else
  (void)p;
  (void)bytes;
#endif
}

void evict_caches() {
  // Read, not written: device servers measure on several threads at once, and reads of a
  // shared buffer do not race. 4 KiB pages (a std::vector, not an AlignedBuffer) so that the
  // pass also evicts the TLB's entries.
  static const std::vector<float> buffer = [] {
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const size_t bytes = llc > 0 ? std::clamp<size_t>(2 * static_cast<size_t>(llc),
                                                      size_t{32} << 20, size_t{512} << 20)
                                 : size_t{64} << 20;
    return std::vector<float>(bytes / sizeof(float), 1.0f);
  }();
  float sum = 0;
  for (size_t i = 0; i < buffer.size(); i += 16) sum += buffer[i];
  volatile float sink = sum;  // keeps the reads
  (void)sink;
}

std::vector<double> drop_extremes(std::vector<double> rounds) {
  if (rounds.size() <= 2) return rounds;
  std::sort(rounds.begin(), rounds.end());
  return std::vector<double>(rounds.begin() + 1, rounds.end() - 1);
}

}  // namespace tensortune::measure
