#include "device_server/device_metrics.h"

#include <httplib.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <thread>

#include "device_server/timing_share.h"
#include "support/connection_front.h"
#include "support/log.h"

namespace tensortune::device_server {

struct DeviceMetrics::Impl {
  explicit Impl(int slots) : share(slots, 60, TimingShare::Clock::now()) {}
  std::function<int()> restarts;
  TimingShare share;
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& results =
      prometheus::BuildCounter()
          .Name("tensortune_device_measurements_total")
          .Help("Items measured by this device server, by AutoTVM error code")
          .Register(registry);
  prometheus::Histogram& seconds =
      prometheus::BuildHistogram()
          .Name("tensortune_device_measurement_seconds")
          .Help("Wall time of one item: build, check and timing")
          .Register(registry)
          .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
                                                           60, 120});
  prometheus::Gauge& busy = prometheus::BuildGauge()
                                .Name("tensortune_device_busy_slots")
                                .Help("Slots measuring now")
                                .Register(registry)
                                .Add({});
  prometheus::Counter& timed = prometheus::BuildCounter()
                                   .Name("tensortune_device_timing_seconds_total")
                                   .Help("Seconds the slots' kernels ran while being timed")
                                   .Register(registry)
                                   .Add({});
  prometheus::Gauge& connected = prometheus::BuildGauge()
                                     .Name("tensortune_device_registered")
                                     .Help("1 while registered with the tracker")
                                     .Register(registry)
                                     .Add({});
  httplib::Server http;
  std::thread thread;
  std::unique_ptr<ConnectionFront> front;  ///< the public port (slow clients wait there)

  std::string scrape() {
    std::vector<prometheus::MetricFamily> families = registry.Collect();
    prometheus::MetricFamily r;
    r.name = "tensortune_device_worker_restarts_total";
    r.help = "Worker processes started again after a crash, a hang or a GPU fault";
    r.type = prometheus::MetricType::Counter;
    prometheus::ClientMetric m;
    m.counter.value = restarts ? restarts() : 0;
    r.metric.push_back(m);
    families.push_back(std::move(r));
    prometheus::MetricFamily f;
    f.name = "tensortune_device_timing_fraction";
    f.help = "Share of the slots' wall time spent timing kernels over the last minute (0-1)";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric g;
    g.gauge.value = share.fraction(TimingShare::Clock::now());
    f.metric.push_back(g);
    families.push_back(std::move(f));
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families);
    return out.str();
  }
};

DeviceMetrics::DeviceMetrics(std::function<int()> restarts, int slots)
    : impl_(std::make_unique<Impl>(slots)) {
  impl_->restarts = std::move(restarts);
}

DeviceMetrics::~DeviceMetrics() {
  impl_->front.reset();
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void DeviceMetrics::slot_taken() { impl_->busy.Increment(); }

void DeviceMetrics::measured(const v1::MeasureResult& result, double seconds, double timed_s) {
  impl_->busy.Decrement();
  impl_->timed.Increment(timed_s);
  impl_->share.add(timed_s, TimingShare::Clock::now());
  impl_->seconds.Observe(seconds);
  impl_->results.Add({{"error", v1::MeasureErrorNo_Name(result.error_no())}}).Increment();
}

double DeviceMetrics::timing_fraction() const {
  return impl_->share.fraction(TimingShare::Clock::now());
}

void DeviceMetrics::registered(bool connected) { impl_->connected.Set(connected ? 1 : 0); }

Expected<int> DeviceMetrics::serve(const std::string& host, int port) {
  Impl* raw = impl_.get();
  raw->http.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(raw->scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
  raw->http.set_payload_max_length(4096);
  const int backend = raw->http.bind_to_any_port("127.0.0.1");
  if (backend <= 0) return unavailable("--metrics-port: cannot listen on a loopback port");
  auto front = ConnectionFront::start(host, port, backend, /*plaintext=*/true);
  if (!front)
    return unavailable("--metrics-port: cannot listen on " + host + ":" + std::to_string(port) +
                       ": " + front.error().message);
  raw->front = std::move(*front);
  const int bound = raw->front->port();
  raw->thread = std::thread([raw] { raw->http.listen_after_bind(); });
  logger("device")->info("metrics on http://{}:{}/metrics", host, bound);
  return bound;
}

}  // namespace tensortune::device_server
