#include "support/memory_bandwidth.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "support/stopwatch.h"
#include "support/thread_pool.h"

namespace tensortune {
namespace {

void triad_range(float* a, const float* b, const float* c, float s, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace

TriadBandwidth measure_triad_bandwidth(int threads, int64_t bytes_per_array, int passes) {
  threads = std::max(threads, 1);
  passes = std::max(passes, 1);
  const size_t elements = static_cast<size_t>(std::max<int64_t>(bytes_per_array, 4096)) / 4;
  std::unique_ptr<float[]> a(new float[elements]), b(new float[elements]), c(new float[elements]);
  ThreadPool pool(threads);
  auto for_share = [&](int t, auto&& fn) {
    fn(elements * static_cast<size_t>(t) / static_cast<size_t>(threads),
       elements * static_cast<size_t>(t + 1) / static_cast<size_t>(threads));
  };
  pool.run_on_all([&](int t) {
    for_share(t, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) a[i] = 0, b[i] = 1, c[i] = 2;
    });
  });
  std::vector<double> gbs;
  for (int p = 0; p <= passes; ++p) {
    const Stopwatch watch;
    pool.run_on_all([&](int t) {
      for_share(t, [&](size_t begin, size_t end) {
        triad_range(a.get(), b.get(), c.get(), 3.0f, begin, end);
      });
    });
    const double s = watch.seconds();
    if (p > 0) gbs.push_back(3.0 * sizeof(float) * static_cast<double>(elements) / s / 1e9);
  }
  // Read back, so that the stores stay observable to the optimiser.
  volatile float keep = a[elements / 2];
  (void)keep;
  std::sort(gbs.begin(), gbs.end());
  const size_t n = gbs.size();
  return {gbs.back(), n % 2 ? gbs[n / 2] : 0.5 * (gbs[n / 2 - 1] + gbs[n / 2])};
}

}  // namespace tensortune
