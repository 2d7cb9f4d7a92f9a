// Implements transform_costs.h.
#include "tuner/graph_tuner/transform_costs.h"

#include <algorithm>

#include "compiler/driver/block_selection.h"
#include "compiler/measure/time_evaluator.h"
#include "compiler/runtime/native_kernels.h"
#include "support/aligned_buffer.h"
#include "support/thread_pool.h"

namespace tensortune::tuner::graph_tuner {

std::string shape_key(const graph::Shape& shape) {
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

double estimate_transform(const Transform& t) {
  return 4.0 * double(graph::num_elements(t.shape)) / driver::kTransformBytesPerSecond;
}

double measure_transform(const Transform& t, int threads) {
  const int64_t n = graph::num_elements(t.shape);
  AlignedBuffer in(n), out(n);
  std::fill(in.data(), in.data() + n, 1.0f);
  // The source layout as the executor holds it: (N, C/from, H, W, from).
  const graph::Shape blocked = {t.shape[0], t.shape[1] / t.from, t.shape[2], t.shape[3], t.from};
  const runtime::NativeKernel k =
      runtime::layout_transform_kernel(blocked, t.from, t.to, in.data(), out.data());
  ThreadPool pool(threads);
  measure::TimeEvaluatorOptions options;
  options.number = 1;
  options.repeat = 5;
  options.min_repeat_ms = 10;
  const measure::TimingResult r =
      measure::time_evaluator([&] { pool.parallel_for(k.extent, k.run); }, {}, options);
  std::vector<double> rounds = r.round_seconds;
  std::sort(rounds.begin(), rounds.end());
  return rounds.empty() ? estimate_transform(t) : rounds[rounds.size() / 2];
}

Expected<TransformCosts> transform_costs(records::RecordStore& store, const std::string& device_key,
                                         const std::vector<Transform>& needed, bool measure_here,
                                         int threads,
                                         const std::function<void(int, int)>& progress) {
  TransformCosts out;
  std::vector<Transform> missing;
  for (const Transform& t : needed) {
    TT_ASSIGN_OR_RETURN(auto stored,
                        store.transform_cost(device_key, shape_key(t.shape), t.from, t.to));
    if (stored && (stored->measured || !measure_here)) {
      out.seconds[t] = stored->seconds;
      ++(stored->measured ? out.reused : out.estimated);
    } else {
      missing.push_back(t);
    }
  }
  int done = 0;
  for (const Transform& t : missing) {
    records::RecordStore::TransformCost c;
    c.measured = measure_here;
    c.seconds = measure_here ? measure_transform(t, threads) : estimate_transform(t);
    TT_RETURN_IF_ERROR(store.put_transform_cost(device_key, shape_key(t.shape), t.from, t.to, c));
    out.seconds[t] = c.seconds;
    ++(measure_here ? out.measured : out.estimated);
    if (progress) progress(++done, static_cast<int>(missing.size()));
  }
  return out;
}

}  // namespace tensortune::tuner::graph_tuner
