#pragma once
/// \file
/// The gtest fixture of the farm tests (farm_test.cc, farm_security_test.cc): a temporary
/// folder, a tracker and device servers started from the tensortune binary, clients, and the
/// archive read back.
#include <gtest/gtest.h>

#include <algorithm>

#include "proto/convert.h"
#include "records/record_store.h"
#include "tests/farm/farm_fixture.h"

namespace tensortune::testing {

namespace fs = std::filesystem;
namespace ss = schedule_space;

inline const std::string kBinary = TENSORTUNE_BINARY;

inline ss::Task dense_task(int64_t n) {
  return *ss::make_task(ss::kDensePack, ss::DenseWorkload{1, n, n},
                        ss::Target{"llvm -keys=cpu", 16});
}

inline std::vector<ss::Config> valid_configs(const ss::ConfigSpace& space, size_t count) {
  std::vector<ss::Config> out;
  for (int64_t i = 0; i < space.size() && out.size() < count; ++i)
    if (space.is_valid_index(i)) out.push_back(*space.config_at(i));
  return out;
}

// A raw Measure request (what TrackerClient sends), for tests that talk to the service directly.
inline v1::MeasureJobRequest raw_request(const ss::Task& task, const ss::ConfigSpace& space,
                                         const std::vector<ss::Config>& configs,
                                         const std::string& key) {
  v1::MeasureJobRequest req;
  auto* m = req.mutable_request();
  wire::task_to_proto(task, m->mutable_workload(), m->mutable_target());
  for (const auto& config : configs) wire::config_to_proto(space, config, m->add_configs());
  m->mutable_timing()->set_number(1);
  m->mutable_timing()->set_repeat(1);
  m->mutable_timing()->set_threads(1);
  m->set_device_key(key);
  return req;
}

inline tracker::FarmTiming quick_timing() {
  tracker::FarmTiming t;
  t.number = 1;
  t.repeat = 1;
  t.min_repeat_ms = 0;
  t.timeout_s = 5;
  return t;
}

class Farm : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("tt_farm_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    devices_.clear();
    tracker_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A token file as an operator writes one: readable by its owner only.
  void write_secret(const std::string& file, const std::string& text) const {
    std::ofstream(file) << text;
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace);
  }

  // Starts the tracker (on `port`, or any free one) and returns its port.
  int start_tracker(int port = 0, std::vector<std::string> extra = {}) {
    fs::remove(path("port"));
    std::vector<std::string> args = {
        "tracker", "--host",           "127.0.0.1",   "--port",    std::to_string(port),
        "--db",    path("tracker.db"), "--port-file", path("port")};
    // A short heartbeat timeout unless the test sets its own.
    if (std::find(extra.begin(), extra.end(), "--heartbeat-timeout") == extra.end())
      args.insert(args.end(), {"--heartbeat-timeout", "3"});
    args.insert(args.end(), extra.begin(), extra.end());
    tracker_ = std::make_unique<Process>(kBinary, args, path("tracker.log"));
    port_ = wait_for_port(path("port"));
    return port_;
  }
  Process& start_device(const std::string& key, std::vector<std::string> extra = {},
                        std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {
        "device", "--tracker", "127.0.0.1:" + std::to_string(port_),   "--key",
        key,      "--name",    "dev" + std::to_string(devices_.size())};
    args.insert(args.end(), extra.begin(), extra.end());
    devices_.push_back(std::make_unique<Process>(
        kBinary, args, path("device" + std::to_string(devices_.size()) + ".log"), env));
    return *devices_.back();
  }
  // A command that must refuse to start: runs tensortune with `args` until it exits (30 s at
  // most). Its exit code (nullopt: it is still running, i.e. it started) and its log.
  struct Exited {
    std::optional<int> code;
    std::string log;
  };
  Exited run_to_exit(const std::vector<std::string>& args, const std::string& log_name) {
    Process p(kBinary, args, path(log_name));
    Exited e;
    e.code = p.wait_exit(30);
    e.log = read_text(path(log_name));
    return e;
  }
  std::unique_ptr<tracker::TrackerClient> client(const std::string& token = "") {
    wire::TrackerEndpoint e;
    e.address = "127.0.0.1:" + std::to_string(port_);
    e.token = token;
    return std::move(tracker::TrackerClient::connect(e)).value();
  }
  // Results stored per (workload key, config index) in the tracker's archive.
  std::map<std::pair<std::string, int64_t>, int> archive_counts() {
    std::map<std::pair<std::string, int64_t>, int> counts;
    auto store = records::RecordStore::open(path("tracker.db"));
    EXPECT_TRUE(store);
    if (!store) return counts;
    auto rows = (*store)->all_records();
    EXPECT_TRUE(rows);
    if (!rows) return counts;
    const std::vector<records::StoredRecord>& all = *rows;
    for (const auto& r : all) ++counts[{r.task.workload_key, r.config_index}];
    return counts;
  }

  fs::path dir_;
  std::unique_ptr<Process> tracker_;
  std::vector<std::unique_ptr<Process>> devices_;
  int port_ = 0;
};

}  // namespace tensortune::testing
