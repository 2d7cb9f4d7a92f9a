// The farm's own overhead on loopback: a real tracker process and device servers in
// simulation mode (each item "takes" a fixed time, nothing is built), so that dispatch is
// what is measured.
//   1. throughput with 1, 2, 4, 8 device servers and the scaling efficiency against 1;
//   2. the tracker's added latency per item (one device, back-to-back items);
//   3. a swarm (10,000 by default) of simulated devices on as many streams from two processes,
//      heartbeating every 2 s: how long they take to register, the tracker's CPU use idle and
//      under a job of one item per device, the job's submission-to-result latency, and the
//      tracker's memory per device;
//   4. a tracker killed mid-job and restarted on its port: how soon a device registers again and
//      a `tune-op` client resumes its job;
//   5. real kernels, not simulated: one CPU device times `tune-op` through the farm with the
//      kernels built by the device itself (as before builders), on the client's cores, and on
//      a builder server: seconds per trial and the share of the device's time spent timing.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
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

// A space with more valid configs than the swarm has devices (conv2d_nchw.cuda's is huge); the
// simulated devices do not care what they "measure".
ss::Task swarm_task() {
  return *ss::make_task("conv2d_nchw.cuda", ss::square_conv2d(64, 56, 64, 3, 1),
                        ss::Target{"cuda -keys=cuda,gpu -arch=sm_80", 16});
}

// Resident memory of a process, in bytes.
double rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  return 0;
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

// `count` simulated devices (ids from `first`) on streams to the tracker at `port`, spread
// over 8 connections, heartbeating every 2 s until the process is killed: half of the swarm,
// run by a second copy of this program (`--swarm-child`).
[[noreturn]] void run_swarm_half(int port, int count, int first) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<tt::v1::DeviceLink::Stub>> stubs;
  for (int c = 0; c < 8; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("tt.channel", first + c);  // distinct args: distinct connections
    channels.push_back(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                 grpc::InsecureChannelCredentials(), args));
    stubs.push_back(tt::v1::DeviceLink::NewStub(channels.back()));
  }
  std::vector<std::unique_ptr<FakeDevice>> fakes;
  for (int i = 0; i < count; ++i)
    fakes.push_back(std::make_unique<FakeDevice>(*stubs[i % stubs.size()], first + i, 5.0));
  for (;;) {
    for (auto& f : fakes) f->heartbeat();
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

// The number right after `label` in `text`, or -1.
double number_after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + label.size());
}

// The number right before `label` in `text` ("0.123 s per trial" -> 0.123), or -1.
double number_before(const std::string& text, const std::string& label) {
  size_t at = text.find(label);
  if (at == std::string::npos) return -1;
  while (at > 0 && (std::isdigit(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '.'))
    --at;
  return std::atof(text.c_str() + at);
}

// Part 5: who builds the kernels a CPU device times (real ones: a ResNet-18 3x3 layer, the
// same random configs each way), through `tune-op --tracker` as a user runs it.
void run_builds(const std::string& binary, int trials) {
  std::printf("== 5. real kernels through the farm, %d configs of a 3x3 conv, one CPU device ==\n",
              trials);
  std::printf("%-34s %10s %14s %16s %14s\n", "built by", "wall s", "s per trial", "timing share",
              "device share");
  struct Way {
    const char* name;
    std::vector<std::string> client_flags;
    bool builder;
  };
  for (const Way& way : {Way{"the device (before builders)", {"--build-workers", "0"}, false},
                         Way{"the client, 2 threads", {"--build-workers", "2"}, false},
                         Way{"a builder server, 2 workers", {"--remote-build"}, true}}) {
    Farm farm(binary, "builds");
    farm.devices.push_back(std::make_unique<Process>(
        binary,
        std::vector<std::string>{"--log-level", "warn", "device", "--tracker",
                                 "127.0.0.1:" + std::to_string(farm.port), "--key", "cpu",
                                 "--accept-built-code"},
        (farm.dir / "device.log").string()));
    if (way.builder)
      farm.devices.push_back(std::make_unique<Process>(
          binary,
          std::vector<std::string>{"--log-level", "warn", "builder", "--tracker",
                                   "127.0.0.1:" + std::to_string(farm.port), "--workers", "2"},
          (farm.dir / "builder.log").string()));
    if (!tt::testing::wait_for_devices(*farm.client, static_cast<int>(farm.devices.size()))) {
      std::printf("%-34s the devices did not register\n", way.name);
      continue;
    }
    std::vector<std::string> args = {"tune-op",
                                     "--op",
                                     "conv2d",
                                     "--data",
                                     "1x64x56x56",
                                     "--kernel",
                                     "64x64x3x3",
                                     "--pads",
                                     "1",
                                     "--tuner",
                                     "random",
                                     "--seed",
                                     "7",
                                     "--trials",
                                     std::to_string(trials),
                                     "--number",
                                     "1",
                                     "--repeat",
                                     "3",
                                     "--min-repeat-ms",
                                     "0",
                                     "--tracker",
                                     "127.0.0.1:" + std::to_string(farm.port),
                                     "--key",
                                     "cpu",
                                     "--db",
                                     (farm.dir / "client.db").string()};
    args.insert(args.end(), way.client_flags.begin(), way.client_flags.end());
    const auto t0 = Clock::now();
    Process client(binary, args, (farm.dir / "client.log").string());
    const auto code = client.wait_exit(1800);
    const double wall = since(t0);
    std::ifstream in(farm.dir / "client.log");
    const std::string out((std::istreambuf_iterator<char>(in)), {});
    // The device's own figure arrives with its next heartbeat.
    double device_share = -1;
    for (int i = 0; i < 50 && device_share <= 0; ++i) {
      auto st = farm.client->status();
      if (st)
        for (const auto& d : st->devices())
          if (d.device_key() == "cpu") device_share = d.timing_fraction();
      if (device_share <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!code || *code != 0) {
      std::printf("%-34s failed: %s\n", way.name,
                  out.substr(out.size() > 300 ? out.size() - 300 : 0).c_str());
      continue;
    }
    std::printf("%-34s %10.1f %14.3f %15.0f%% %13.0f%%\n", way.name, wall,
                number_before(out, " s per trial"), number_after(out, "while timed, "),
                100 * device_share);
  }
  std::printf(
      "(timing share: kernel run time over the client's measuring time, from its \"timing:\" "
      "line; device share: the device's own figure over its last minute)\n\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Farm benchmark: dispatch throughput, scaling, added latency, a swarm of 10,000 devices"};
  std::string binary = TENSORTUNE_BINARY;
  double simulate_ms = 20;
  int items_per_device = 60;
  int swarm = 10000;
  app.add_option("--binary", binary, "the tensortune binary")->capture_default_str();
  app.add_option("--simulate-ms", simulate_ms, "simulated measurement time per item")
      ->capture_default_str();
  app.add_option("--items-per-device", items_per_device, "items per device in the scaling runs")
      ->capture_default_str();
  app.add_option("--swarm", swarm, "simulated devices in part 3, from two processes (0 skips it)")
      ->capture_default_str();
  std::vector<int> swarm_child;
  app.add_option("--swarm-child", swarm_child, "PORT COUNT FIRST: run half a swarm (internal)")
      ->expected(3)
      ->group("");
  bool only_swarm = false;
  app.add_flag("--only-swarm", only_swarm, "run part 3 only");
  bool only_restart = false;
  app.add_flag("--only-restart", only_restart, "run part 4 only (a tracker restart mid-job)");
  bool only_builds = false;
  app.add_flag("--only-builds", only_builds, "run part 5 only (real kernels: who builds them)");
  int build_trials = 48;
  app.add_option("--build-trials", build_trials, "configs tuned per way of building in part 5")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (only_builds) {
    run_builds(binary, build_trials);
    return 0;
  }
  if (swarm_child.size() == 3) run_swarm_half(swarm_child[0], swarm_child[1], swarm_child[2]);
  signal(SIGPIPE, SIG_IGN);
  const ss::Task task = bench_task();
  const ss::ConfigSpace space = *ss::make_config_space(task);

  if (!only_swarm && !only_restart) {
    run_builds(binary, build_trials);
    std::printf("== 1. throughput, %.0f ms simulated per item, %d items per device ==\n",
                simulate_ms, items_per_device);
    std::printf("%8s %7s %9s %12s %10s %11s\n", "devices", "items", "wall s", "results/s",
                "ideal/s", "efficiency");
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

    std::printf(
        "\n== 2. added latency per item (1 device, back-to-back items, 1 ms simulated) ==\n");
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

  }  // !only_swarm

  if (!only_swarm || only_restart) {
    std::printf(
        "\n== 4. the tracker killed mid-job and restarted 3 s later on its port and archive: "
        "a device and a `tune-op` client (1 device, 20 ms simulated per item) ==\n");
    Farm farm(binary, "restart");
    farm.add_devices(1, 20);
    tt::testing::wait_for_devices(*farm.client, 1);
    Process tune(binary,
                 {"--log-level", "warn", "tune-op", "--op", "dense", "--data", "1x256", "--weight",
                  "256x256", "--tuner", "random", "--trials", "400", "--tracker",
                  "127.0.0.1:" + std::to_string(farm.port), "--key", "sim", "--db",
                  (farm.dir / "client.db").string()},
                 (farm.dir / "client.log").string());
    auto done_items = [&](tt::tracker::TrackerClient& c) {
      auto st = c.status();
      int done = 0;
      if (st)
        for (const auto& j : st->jobs()) done += j.done();
      return st ? done : -1;
    };
    tt::testing::wait_until([&] { return done_items(*farm.client) >= 50; }, 60);
    farm.tracker->kill9();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    fs::remove(farm.dir / "port");
    const auto restarted = Clock::now();
    farm.tracker = std::make_unique<Process>(
        binary,
        std::vector<std::string>{"--log-level", "warn", "tracker", "--host", "127.0.0.1", "--port",
                                 std::to_string(farm.port), "--db", (farm.dir / "t.db").string(),
                                 "--port-file", (farm.dir / "port").string()},
        (farm.dir / "tracker2.log").string());
    tt::testing::wait_for_port((farm.dir / "port").string());
    const double listening_s = since(restarted);
    tt::wire::TrackerEndpoint e;
    e.address = "127.0.0.1:" + std::to_string(farm.port);
    auto again = std::move(tt::tracker::TrackerClient::connect(e)).value();
    double device_s = -1, client_s = -1;
    tt::testing::wait_until(
        [&] {
          auto st = again->status();
          if (st && device_s < 0 && st->devices_size() == 1) device_s = since(restarted);
          if (st && client_s < 0 && st->jobs_size() > 0) client_s = since(restarted);
          return device_s >= 0 && client_s >= 0;
        },
        60);
    std::printf(
        "after the restarted tracker listened (%.2f s after its start): the device registered "
        "again in %.2f s, the client resubmitted its job in %.2f s\n",
        listening_s, device_s - listening_s, client_s - listening_s);
  }

  if (swarm > 0 && !only_restart) {
    std::printf(
        "\n== 3. %d simulated devices on %d streams from two processes, heartbeats every 2 s ==\n",
        swarm, swarm);
    Farm farm(binary, "swarm");
    const pid_t tracker_pid = farm.tracker->pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const double rss_before = rss_bytes(tracker_pid);
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const auto t_reg = Clock::now();
    std::vector<std::unique_ptr<Process>> halves;
    const int half = swarm / 2;
    for (int h = 0; h < 2; ++h)
      halves.push_back(std::make_unique<Process>(
          self,
          std::vector<std::string>{"--swarm-child", std::to_string(farm.port),
                                   std::to_string(h == 0 ? half : swarm - half),
                                   std::to_string(h * half)},
          (farm.dir / ("swarm" + std::to_string(h) + ".log")).string()));
    if (!tt::testing::wait_for_devices(*farm.client, swarm, 120)) {
      std::fprintf(stderr, "the swarm did not register\n");
      return 1;
    }
    const double registered_s = since(t_reg);
    std::printf("registered %d devices in %.2f s\n", swarm, registered_s);
    std::this_thread::sleep_for(std::chrono::seconds(5));  // heartbeats settle
    // Four windows of 5 s (2.5 heartbeat rounds each): the median, and the spread, since this
    // machine's neighbours move a single window by a point or two.
    std::vector<double> windows;
    for (int w = 0; w < 4; ++w) {
      const double c0 = cpu_seconds(tracker_pid);
      const auto t0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::seconds(5));
      windows.push_back(100 * (cpu_seconds(tracker_pid) - c0) / since(t0));
    }
    std::sort(windows.begin(), windows.end());
    const double idle_cpu = 0.5 * (windows[1] + windows[2]);
    std::printf(
        "tracker CPU while idle with %d heartbeating devices: %.2f%% of one core (median of 4 "
        "windows of 5 s; %.2f-%.2f)\n",
        swarm, idle_cpu, windows.front(), windows.back());
    std::printf("tracker memory: %.1f MiB more with the devices, %.1f KiB per device\n",
                (rss_bytes(tracker_pid) - rss_before) / (1 << 20),
                (rss_bytes(tracker_pid) - rss_before) / 1024 / swarm);
    const ss::Task task3 = swarm_task();
    const ss::ConfigSpace space3 = *ss::make_config_space(task3);
    const auto configs = configs_of(space3, static_cast<size_t>(swarm));
    std::vector<double> latency;
    const double c0 = cpu_seconds(tracker_pid);
    const auto t0 = Clock::now();
    auto r = farm.client->measure(
        task3, space3, configs, timing(), "swarm", "swarm-job", 0,
        [&](int, const ss::MeasureResult&, bool) { latency.push_back(since(t0) * 1e3); });
    const double wall = since(t0);
    std::printf(
        "job of %zu items over %d devices (5 ms each): %s in %.3f s; submission to result: median "
        "%.1f ms, p99 %.1f ms, max %.1f ms; tracker CPU %.1f%% of one core\n",
        configs.size(), swarm, r ? "done" : r.error().message.c_str(), wall,
        percentile(latency, 0.5), percentile(latency, 0.99), percentile(latency, 1.0),
        100 * (cpu_seconds(tracker_pid) - c0) / wall);
    std::printf(
        "goals: register < 5 s: %s; idle CPU < 10%%: %s; 10,000-item job < 3 s: %s; "
        "p99 < 1.5 s: %s\n",
        registered_s < 5 ? "met" : "NOT met", idle_cpu < 10 ? "met" : "NOT met",
        wall < 3 ? "met" : "NOT met", percentile(latency, 0.99) < 1500 ? "met" : "NOT met");
    halves.clear();
  }
  return 0;
}
