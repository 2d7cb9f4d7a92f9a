// Implements transform_timing.h.
#include "compiler/runtime/transform_timing.h"

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/time_evaluator.h"
#include "compiler/runtime/native_kernels.h"
#include "support/aligned_buffer.h"
#include "support/thread_pool.h"

namespace tensortune::runtime {

namespace ss = schedule_space;

ss::MeasureResult time_layout_transform(const ss::LayoutTransformWorkload& w,
                                        const measure::MeasureOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ss::MeasureResult r;
  r.config_index = 0;
  r.threads = options.threads;
  r.device_key = options.device_key.empty() ? codegen::host_device_key() : options.device_key;
  auto finish = [&](ss::MeasureErrorNo error, std::string message) {
    return measure::finish_result(std::move(r), error, std::move(message), start);
  };
  if (Status s = ss::validate(w); !s)
    return finish(ss::MeasureErrorNo::kInstantiationError, s.error().message);
  if (options.threads < 1 || options.threads > 1024)
    return finish(ss::MeasureErrorNo::kInstantiationError,
                  "threads = " + std::to_string(options.threads) + ", must be in [1, 1024]");
  const int64_t n = w.elements();
  AlignedBuffer in(n), out(n);
  // Element (b, c, h, w) of the source layout holds its plain NCHW index, so the check below
  // reads in every output position which element landed there.
  const int64_t hw = w.height * w.width;
  for (int64_t b = 0; b < w.batch; ++b)
    for (int64_t c = 0; c < w.channels; ++c)
      for (int64_t s = 0; s < hw; ++s) {
        const int64_t plain = (b * w.channels + c) * hw + s;
        const int64_t at =
            ((b * (w.channels / w.from_block) + c / w.from_block) * hw + s) * w.from_block +
            c % w.from_block;
        in.data()[at] = static_cast<float>(plain);
      }
  const graph::Shape source = {w.batch, w.channels / w.from_block, w.height, w.width, w.from_block};
  const NativeKernel k =
      layout_transform_kernel(source, w.from_block, w.to_block, in.data(), out.data());
  ThreadPool pool(options.threads);
  auto run = [&] { pool.parallel_for(k.extent, k.run); };
  try {
    run();
    // Exact below 2^24 elements (floats hold those integers); larger tensors check a prefix.
    const int64_t checked = std::min<int64_t>(n, int64_t{1} << 24);
    for (int64_t i = 0; i < checked; ++i) {
      const int64_t inner = i % w.to_block, rest = i / w.to_block;
      const int64_t s = rest % hw, cb = (rest / hw) % (w.channels / w.to_block);
      const int64_t b = rest / hw / (w.channels / w.to_block);
      const int64_t plain = (b * w.channels + cb * w.to_block + inner) * hw + s;
      if (out.data()[i] != static_cast<float>(plain))
        return finish(ss::MeasureErrorNo::kWrongAnswer,
                      "element " + std::to_string(i) + " holds " + std::to_string(out.data()[i]) +
                          ", the layout puts " + std::to_string(plain) + " there");
    }
    std::function<void()> flush;
    if (options.flush_cache)
      flush = [&] { measure::flush_cache(out.data(), static_cast<size_t>(n) * sizeof(float)); };
    const measure::TimingResult t = measure::time_evaluator(run, flush, options.timing);
    if (t.timed_out)
      return finish(ss::MeasureErrorNo::kRunTimeout,
                    "one run took " + std::to_string(t.warmup_seconds) + " s; over the " +
                        std::to_string(options.timing.timeout_s) + " s limit");
    r.number = t.number;
    r.costs = measure::drop_extremes(t.round_seconds);
    return finish(ss::MeasureErrorNo::kNoError, "");
  } catch (const std::exception& e) {
    return finish(ss::MeasureErrorNo::kUnknownError, std::string("exception: ") + e.what());
  }
}

}  // namespace tensortune::runtime
