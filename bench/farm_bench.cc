// The farm's own overhead on loopback: a real tracker process and device servers in
// simulation mode (each item "takes" a fixed time, nothing is built), so that dispatch is
// what is measured.
//   1. throughput with 1, 2, 4, 8 device servers and the scaling efficiency against 1;
//   2. the tracker's added latency per item (one device, back-to-back items);
//   3. 1,000 simulated devices on 1,000 streams from this process, heartbeating every 2 s:
//      the tracker's CPU use idle and under a job, and the job's dispatch latency.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <numeric>

#include "proto/farm.grpc.pb.h"
#include "tests/farm/farm_fixture.h"

namespace tt = tensortune;
namespace ss = tt::schedule_space;
namespace fs = std::filesystem;
using tt::testing::Process;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// utime + stime of a process, in seconds.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const size_t close = text.rfind(')');
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

struct Farm {
  fs::path dir;
  std::string binary;
  std::unique_ptr<Process> tracker;
  std::vector<std::unique_ptr<Process>> devices;
  int port = 0;
  std::unique_ptr<tt::tracker::TrackerClient> client;

  Farm(const std::string& bin, const std::string& name) : binary(bin) {
    dir = fs::temp_directory_path() / ("tt_farm_bench_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    tracker = std::make_unique<Process>(
        binary,
        std::vector<std::string>{"--log-level", "warn", "tracker", "--host", "127.0.0.1", "--port",
                                 "0", "--db", (dir / "t.db").string(), "--port-file",
                                 (dir / "port").string()},
        (dir / "tracker.log").string());
    port = tt::testing::wait_for_port((dir / "port").string());
    tt::wire::TrackerEndpoint e;
    e.address = "127.0.0.1:" + std::to_string(port);
    client = std::move(tt::tracker::TrackerClient::connect(e)).value();
  }
  ~Farm() {
    devices.clear();
    tracker.reset();
    fs::remove_all(dir);
  }
  void add_devices(int n, double simulate_ms) {
    for (int i = 0; i < n; ++i)
      devices.push_back(std::make_unique<Process>(
          binary,
          std::vector<std::string>{"--log-level", "warn", "device", "--tracker",
                                   "127.0.0.1:" + std::to_string(port), "--key", "sim",
                                   "--simulate-ms", std::to_string(simulate_ms)},
          (dir / ("device" + std::to_string(devices.size()) + ".log")).string()));
  }
};

ss::Task bench_task() {  // a space with thousands of valid configs
  return *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(64, 56, 64, 3, 1),
                        ss::Target{"llvm -keys=cpu", 16});
}

std::vector<ss::Config> configs_of(const ss::ConfigSpace& space, size_t n) {
  std::vector<ss::Config> out;
  for (int64_t i = 0; i < space.size() && out.size() < n; ++i)
    if (space.is_valid_index(i)) out.push_back(*space.config_at(i));
  return out;
}

tt::tracker::FarmTiming timing() {
  tt::tracker::FarmTiming t;
  t.number = 1;
  t.repeat = 1;
  t.min_repeat_ms = 0;
  return t;
}

// One simulated device on its own stream: answers each item after `ms`.
class FakeDevice {
 public:
  FakeDevice(tt::v1::DeviceLink::Stub& stub, int id, double ms) : ms_(ms) {
    stream_ = stub.Connect(&ctx_);
    tt::v1::DeviceMessage reg;
    reg.mutable_register_()->set_device_key("swarm");
    reg.mutable_register_()->set_slots(1);
    reg.mutable_register_()->set_name("fake" + std::to_string(id));
    stream_->Write(reg);
    reader_ = std::thread([this] { loop(); });
  }
  void heartbeat() {
    tt::v1::DeviceMessage m;
    m.mutable_heartbeat();
    std::lock_guard<std::mutex> lock(mu_);
    stream_->Write(m);
  }
  void stop() {
    ctx_.TryCancel();
    reader_.join();
  }

 private:
  void loop() {
    tt::v1::TrackerMessage msg;
    while (stream_->Read(&msg)) {
      if (!msg.has_work()) continue;
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms_));
      tt::v1::DeviceMessage m;
      m.mutable_result()->set_item_id(msg.work().item_id());
      m.mutable_result()->set_lease_id(msg.work().lease_id());
      auto* r = m.mutable_result()->mutable_result();
      r->set_config_index(msg.work().config().index());
      r->add_costs_s(ms_ / 1e3);
      std::lock_guard<std::mutex> lock(mu_);
      stream_->Write(m);
    }
  }
  double ms_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<tt::v1::DeviceMessage, tt::v1::TrackerMessage>> stream_;
  std::mutex mu_;
  std::thread reader_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Farm benchmark: dispatch throughput, scaling, added latency, 1,000 devices"};
  std::string binary = TENSORTUNE_BINARY;
  double simulate_ms = 20;
  int items_per_device = 60;
  int swarm = 1000;
  app.add_option("--binary", binary, "the tensortune binary")->capture_default_str();
  app.add_option("--simulate-ms", simulate_ms, "simulated measurement time per item")
      ->capture_default_str();
  app.add_option("--items-per-device", items_per_device, "items per device in the scaling runs")
      ->capture_default_str();
  app.add_option("--swarm", swarm, "simulated devices in part 3 (0 skips it)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const ss::Task task = bench_task();
  const ss::ConfigSpace space = *ss::make_config_space(task);

  std::printf("== 1. throughput, %.0f ms simulated per item, %d items per device ==\n", simulate_ms,
              items_per_device);
  std::printf("%8s %7s %9s %12s %10s %11s\n", "devices", "items", "wall s", "results/s", "ideal/s",
              "efficiency");
  double per_device_1 = 0;
  for (int n : {1, 2, 4, 8}) {
    Farm farm(binary, "scale" + std::to_string(n));
    farm.add_devices(n, simulate_ms);
    if (!tt::testing::wait_for_devices(*farm.client, n)) {
      std::fprintf(stderr, "devices did not register (port %d); tracker log:\n%s\n", farm.port,
                   tt::testing::read_text((farm.dir / "tracker.log").string()).c_str());
      return 1;
    }
    const auto configs = configs_of(space, static_cast<size_t>(n * items_per_device));
    if (configs.size() < static_cast<size_t>(n * items_per_device))
      std::fprintf(stderr, "note: the space has only %zu valid configs\n", configs.size());
    const auto t0 = Clock::now();
    auto r = farm.client->measure(task, space, configs, timing(), "sim", "scale");
    const double wall = since(t0);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return 1;
    }
    const double rate = configs.size() / wall;
    if (n == 1) per_device_1 = rate;
    std::printf("%8d %7zu %9.3f %12.1f %10.1f %11.3f\n", n, configs.size(), wall, rate,
                n * 1000.0 / simulate_ms, rate / (n * per_device_1));
  }

  std::printf("\n== 2. added latency per item (1 device, back-to-back items, 1 ms simulated) ==\n");
  {
    Farm farm(binary, "latency");
    farm.add_devices(1, 1.0);
    tt::testing::wait_for_devices(*farm.client, 1);
    const auto configs = configs_of(space, 400);
    std::vector<double> arrivals;
    (void)farm.client->measure(
        task, space, configs, timing(), "sim", "latency", 0,
        [&](int, const ss::MeasureResult&, bool) {
          arrivals.push_back(
              std::chrono::duration<double>(Clock::now().time_since_epoch()).count());
        });
    std::vector<double> gaps;
    for (size_t i = 50; i < arrivals.size(); ++i)
      gaps.push_back((arrivals[i] - arrivals[i - 1]) * 1e3 - 1.0);
    std::printf(
        "per item beyond the 1 ms measurement (result -> tracker -> next dispatch -> device): "
        "median %.3f ms, "
        "p99 %.3f ms over %zu items\n",
        percentile(gaps, 0.5), percentile(gaps, 0.99), gaps.size());
  }

  if (swarm > 0) {
    std::printf(
        "\n== 3. %d simulated devices on %d streams from one process, heartbeats every 2 s ==\n",
        swarm, swarm);
    Farm farm(binary, "swarm");
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    std::vector<std::unique_ptr<tt::v1::DeviceLink::Stub>> stubs;
    for (int c = 0; c < 8; ++c) {
      grpc::ChannelArguments args;
      args.SetInt("tt.channel", c);  // distinct args: distinct connections
      channels.push_back(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(farm.port),
                                                   grpc::InsecureChannelCredentials(), args));
      stubs.push_back(tt::v1::DeviceLink::NewStub(channels.back()));
    }
    const auto t_reg = Clock::now();
    std::vector<std::unique_ptr<FakeDevice>> fakes;
    for (int i = 0; i < swarm; ++i)
      fakes.push_back(std::make_unique<FakeDevice>(*stubs[i % stubs.size()], i, 5.0));
    if (!tt::testing::wait_for_devices(*farm.client, swarm, 60)) {
      std::fprintf(stderr, "the swarm did not register\n");
      return 1;
    }
    std::printf("registered %d devices in %.2f s\n", swarm, since(t_reg));
    std::atomic<bool> stop{false};
    std::thread beats([&] {
      while (!stop) {
        for (auto& f : fakes) f->heartbeat();
        for (int i = 0; i < 20 && !stop; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    const pid_t tracker_pid = farm.tracker->pid();
    double c0 = cpu_seconds(tracker_pid);
    auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::printf("tracker CPU while idle with %d heartbeating devices: %.2f%% of one core\n", swarm,
                100 * (cpu_seconds(tracker_pid) - c0) / since(t0));
    const auto configs = configs_of(space, static_cast<size_t>(swarm));
    std::vector<double> latency;
    c0 = cpu_seconds(tracker_pid);
    t0 = Clock::now();
    auto r = farm.client->measure(
        task, space, configs, timing(), "swarm", "swarm-job", 0,
        [&](int, const ss::MeasureResult&, bool) { latency.push_back(since(t0) * 1e3 - 5.0); });
    const double wall = since(t0);
    std::printf(
        "job of %zu items over %d devices (5 ms each): %s in %.3f s; completion minus 5 ms: median "
        "%.1f ms, "
        "p99 %.1f ms, max %.1f ms; tracker CPU %.1f%% of one core\n",
        configs.size(), swarm, r ? "done" : r.error().message.c_str(), wall,
        percentile(latency, 0.5), percentile(latency, 0.99), percentile(latency, 1.0),
        100 * (cpu_seconds(tracker_pid) - c0) / wall);
    stop = true;
    beats.join();
    for (auto& f : fakes) f->stop();
  }
  return 0;
}
