// The farm with real processes on loopback: a tracker, device servers with worker processes,
// and clients. No mocked gRPC.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <regex>
#include <set>

#include "device_server/worker_process.h"
#include "proto/convert.h"
#include "proto/farm.grpc.pb.h"
#include "records/record_store.h"
#include "tests/cli/run_binary.h"
#include "tests/farm/farm_test_fixture.h"

namespace tensortune::testing {
namespace {

TEST_F(Farm, TwoJobsOnThreeDevicesShareSlotsAndRecordEveryConfigOnce) {
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
  for (int i = 0; i < 3; ++i) start_device("x86");
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 3)) << read_text(path("tracker.log"));
  const ss::Task a = dense_task(128), b = dense_task(256);
  const auto space_a = *ss::make_config_space(a), space_b = *ss::make_config_space(b);
  const auto configs_a = valid_configs(space_a, 18), configs_b = valid_configs(space_b, 18);
  std::mutex mu;
  std::string arrivals;  // the job of each result, in order of arrival
  auto run = [&](const ss::Task& task, const ss::ConfigSpace& space,
                 const std::vector<ss::Config>& configs, char job) {
    auto cl = client();
    return cl->measure(task, space, configs, quick_timing(), "x86", std::string("job-") + job, 0,
                       [&](int, const ss::MeasureResult&, bool) {
                         std::lock_guard<std::mutex> lock(mu);
                         arrivals.push_back(job);
                       });
  };
  Expected<std::vector<ss::MeasureResult>> ra = Error{}, rb = Error{};
  std::thread ta([&] { ra = run(a, space_a, configs_a, 'A'); });
  std::thread tb([&] { rb = run(b, space_b, configs_b, 'B'); });
  ta.join();
  tb.join();
  ASSERT_TRUE(ra) << ra.error().message;
  ASSERT_TRUE(rb) << rb.error().message;
  for (size_t i = 0; i < configs_a.size(); ++i) {
    EXPECT_EQ((*ra)[i].config_index, configs_a[i].index);
    EXPECT_TRUE((*ra)[i].ok()) << (*ra)[i].error_msg;
  }
  for (const auto& r : *rb) EXPECT_TRUE(r.ok()) << r.error_msg;
  // Exactly once: one archived result per config of each job, nothing else.
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), configs_a.size() + configs_b.size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << key.first << " config " << key.second;
  // Shared: each job got results while the other still had work outstanding (an order of
  // arrival, not a timing).
  ASSERT_EQ(arrivals.size(), configs_a.size() + configs_b.size());
  EXPECT_LT(arrivals.find('A'), arrivals.rfind('B')) << arrivals;
  EXPECT_LT(arrivals.find('B'), arrivals.rfind('A')) << arrivals;
}

TEST_F(Farm, KilledDeviceLosesNothingAndDoublesNothing) {
  ASSERT_GT(start_tracker(), 0);
  for (int i = 0; i < 3; ++i) start_device("sim", {"--simulate-ms", "60"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 3));
  const ss::Task task = dense_task(256);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 30);
  std::atomic<int> seen{0};
  auto result = c->measure(task, space, configs, quick_timing(), "sim", "kill-test", 0,
                           [&](int, const ss::MeasureResult&, bool) {
                             if (++seen == 6) devices_[0]->kill9();
                           });
  ASSERT_TRUE(result) << result.error().message;
  for (const auto& r : *result) EXPECT_TRUE(r.ok()) << r.error_msg;
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), configs.size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << "config " << key.second;
  auto status = c->status();
  ASSERT_TRUE(status);
  EXPECT_EQ(status->devices_size(), 2);
}

TEST_F(Farm, CrashingHangingAndLyingKernelsCostOneResultEach) {
  ASSERT_GT(start_tracker(), 0);
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 6);
  const int64_t crash = configs[1].index, hang = configs[3].index, garbage = configs[4].index;
  start_device("x86", {"--worker-grace", "2", "--metrics-port", "0", "--fault-inject",
                       "crash@" + std::to_string(crash) + ",hang@" + std::to_string(hang) +
                           ",garbage@" + std::to_string(garbage)});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  tracker::FarmTiming timing = quick_timing();
  timing.timeout_s = 1;
  auto result = c->measure(task, space, configs, timing, "x86", "faults");
  ASSERT_TRUE(result) << result.error().message;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& r = (*result)[i];
    if (configs[i].index == crash) {
      EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kRuntimeDevice);
      EXPECT_NE(r.error_msg.find("signal 11"), std::string::npos) << r.error_msg;
    } else if (configs[i].index == hang) {
      EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kRunTimeout);
      EXPECT_NE(r.error_msg.find("3.0 s"), std::string::npos) << r.error_msg;
    } else if (configs[i].index == garbage) {
      EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kUnknownError);
      EXPECT_NE(r.error_msg.find("invalid result"), std::string::npos) << r.error_msg;
    } else {
      EXPECT_TRUE(r.ok()) << r.error_msg;
    }
  }
  // The server lives on: same process, still registered, and it measures the next job.
  EXPECT_TRUE(devices_[0]->alive());
  const auto more = valid_configs(space, 9);
  auto again = c->measure(task, space, {more[6], more[7], more[8]}, quick_timing(), "x86", "after");
  ASSERT_TRUE(again) << again.error().message;
  for (const auto& r : *again) EXPECT_TRUE(r.ok()) << r.error_msg;
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), 9u);
  // The device server's own metrics count what happened to it.
  std::smatch m;
  const std::string log = read_text(path("device0.log"));
  ASSERT_TRUE(std::regex_search(log, m, std::regex("metrics on http://127.0.0.1:([0-9]+)/metrics")))
      << log;
  httplib::Client http("127.0.0.1", std::stoi(m[1].str()));
  auto scraped = http.Get("/metrics");
  ASSERT_TRUE(scraped);
  const std::string text = scraped->body;
  EXPECT_NE(text.find("tensortune_device_worker_restarts_total 2"), std::string::npos)
      << "the crash and the hang each cost a worker: " << text;
  // (the garbage answer is NO_ERROR as far as the worker says; the tracker rejects it)
  EXPECT_NE(text.find("tensortune_device_measurements_total{error=\"NO_ERROR\"} 7"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tensortune_device_measurements_total{error=\"RUN_TIMEOUT\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tensortune_device_registered 1"), std::string::npos) << text;
}

// A measurement that allocates without end meets the worker's address-space bound: its
// config gets an error naming the bound, the worker goes on with the next config, and the
// machine's memory is never at stake (the hog stops at 8 GiB even if the bound failed).
TEST_F(Farm, AWorkerThatAllocatesWithoutEndMeetsItsMemoryBound) {
  if (!device_server::worker_memory_limit_supported())
    GTEST_SKIP() << "sanitizer build: a worker's address space cannot be bounded";
  ASSERT_GT(start_tracker(), 0);
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 4);
  const int64_t hog = configs[1].index;
  start_device("x86", {"--worker-memory", std::to_string(1536 << 20), "--fault-inject",
                       "hog@" + std::to_string(hog)});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  auto result = c->measure(task, space, configs, quick_timing(), "x86", "hog");
  ASSERT_TRUE(result) << result.error().message;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& r = (*result)[i];
    if (configs[i].index == hog) {
      EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kRuntimeDevice);
      EXPECT_NE(r.error_msg.find("bounded to 1536 MiB"), std::string::npos) << r.error_msg;
    } else {
      EXPECT_TRUE(r.ok()) << r.error_msg;
    }
  }
  const std::string log = read_text(path("device0.log"));
  EXPECT_NE(log.find("hog: allocation failed after"), std::string::npos) << log;
  EXPECT_TRUE(devices_[0]->alive());
}

TEST_F(Farm, TrackerKilledAndRestartedKeepsItsArchiveAndResubmissionSkipsIt) {
  const int port = start_tracker();
  ASSERT_GT(port, 0);
  start_device("sim", {"--simulate-ms", "40"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const ss::Task task = dense_task(256);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 20);
  std::atomic<int> seen{0};
  auto first = c->measure(task, space, configs, quick_timing(), "sim", "restart", 0,
                          [&](int, const ss::MeasureResult&, bool) {
                            if (++seen == 8) tracker_->kill9();
                          });
  EXPECT_FALSE(first);  // the tracker died under it
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path("tracker.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  const size_t recorded = archive_counts().size();
  EXPECT_GE(recorded, 8u);
  ASSERT_EQ(start_tracker(port), port) << read_text(path("tracker.log"));
  ASSERT_TRUE(wait_for_devices(*c, 1)) << "the device did not reconnect";
  int from_archive = 0;
  auto second =
      c->measure(task, space, configs, quick_timing(), "sim", "restart", 0,
                 [&](int, const ss::MeasureResult&, bool archived) { from_archive += archived; });
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(static_cast<size_t>(from_archive), recorded);
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), configs.size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << "config " << key.second;
}

TEST_F(Farm, BadTokensOversizedAndMalformedRequestsAreRefused) {
  write_secret(path("token"), "s3cret-token-of-twenty\n");
  ASSERT_GT(start_tracker(0, {"--token-file", path("token"), "--max-message-bytes", "65536"}), 0);
  start_device("sim", {"--simulate-ms", "5", "--token-file", path("token")});
  auto good = client("s3cret-token-of-twenty");
  ASSERT_TRUE(wait_for_devices(*good, 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 3);

  auto wrong = client("guess")->measure(task, space, configs, quick_timing(), "sim", "x");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("UNAUTHENTICATED: wrong token"), std::string::npos)
      << wrong.error().message;
  auto missing = client("")->status();
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("UNAUTHENTICATED: missing token"), std::string::npos);

  // Raw requests, as a careless or hostile client would send them.
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials());
  auto stub = v1::Tracker::NewStub(channel);
  auto call = [&](const v1::MeasureJobRequest& req) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret-token-of-twenty");
    auto reader = stub->Measure(&ctx, req);
    v1::MeasureJobUpdate u;
    while (reader->Read(&u)) {
    }
    return reader->Finish();
  };
  v1::MeasureJobRequest req = raw_request(dense_task(128), space, {configs[0]}, "sim");

  v1::MeasureJobRequest bad_stride = req;
  ss::Task conv =
      *ss::make_task(ss::kConv2dNCHWc, ss::square_conv2d(16, 8, 16, 3, 1), ss::Target{});
  wire::task_to_proto(conv, bad_stride.mutable_request()->mutable_workload(),
                      bad_stride.mutable_request()->mutable_target());
  bad_stride.mutable_request()->mutable_workload()->mutable_conv2d()->set_stride_h(0);
  grpc::Status s = call(bad_stride);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("workload.conv2d.stride_h = 0"), std::string::npos)
      << s.error_message();

  v1::MeasureJobRequest bad_knob = req;
  bad_knob.mutable_request()->mutable_configs(0)->mutable_entity(0)->mutable_split()->set_sizes(
      1, 7777);
  s = call(bad_knob);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("configs[0]"), std::string::npos) << s.error_message();

  for (const int64_t index : {int64_t{-5}, int64_t{1} << 62}) {
    v1::MeasureJobRequest bad_index = req;
    auto* c = bad_index.mutable_request()->mutable_configs(0);
    c->clear_entity();
    c->set_index(index);
    s = call(bad_index);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << index;
    EXPECT_NE(s.error_message().find("config.index = " + std::to_string(index) + " is outside"),
              std::string::npos)
        << s.error_message();
  }
  v1::MeasureJobRequest wrong_index = req;
  wrong_index.mutable_request()->mutable_configs(0)->set_index(configs[0].index + 1);
  s = call(wrong_index);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("does not match its entity"), std::string::npos)
      << s.error_message();

  v1::MeasureJobRequest bad_timing = req;
  bad_timing.mutable_request()->mutable_timing()->set_repeat(0);
  s = call(bad_timing);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("timing.repeat = 0"), std::string::npos) << s.error_message();

  v1::MeasureJobRequest transform = req;
  wire::layout_transform_to_proto({1, 64, 8, 8, 16, 48},
                                  transform.mutable_request()->mutable_workload());
  transform.mutable_request()->mutable_configs(0)->clear_entity();
  transform.mutable_request()->mutable_configs(0)->set_index(0);
  s = call(transform);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("to_block = 48 does not divide channels = 64"),
            std::string::npos)
      << s.error_message();
  transform.mutable_request()->mutable_workload()->mutable_layout_transform()->set_to_block(8);
  *transform.mutable_request()->add_configs() = transform.request().configs(0);
  s = call(transform);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("a layout transform has one config"), std::string::npos)
      << s.error_message();

  v1::MeasureJobRequest no_key = req;
  no_key.mutable_request()->set_device_key("");
  EXPECT_EQ(call(no_key).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::MeasureJobRequest huge = req;
  huge.set_job_name(std::string(200000, 'x'));
  EXPECT_EQ(call(huge).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // Everyone else is still served.
  auto ok = good->measure(task, space, configs, quick_timing(), "sim", "after-abuse");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size(), configs.size());
  EXPECT_NE(read_text(path("tracker.log")).find("UNAUTHENTICATED"), std::string::npos);
}

std::pair<int, std::string> run_cli(const std::string& args) {
  auto r = run_tensortune(args);
  return {r.exit_code, r.output};
}

TEST_F(Farm, TuneOpStatusAndRecordsBestThroughTheTracker) {
  ASSERT_GT(start_tracker(), 0);
  start_device("x86");
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  auto [code, out] =
      run_cli("tune-op --op dense --data 1x128 --weight 128x128 --trials 8 --tracker " + tracker +
              " --key x86 --db " + path("client.db") + " --number 1 --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Progress: (8/8)"), std::string::npos) << out;
  auto store = records::RecordStore::open(path("client.db"));
  ASSERT_TRUE(store);
  EXPECT_EQ(*(*store)->result_count(), 8);
  EXPECT_EQ(archive_counts().size(), 8u);
  auto [scode, status] = run_cli("status --tracker " + tracker);
  EXPECT_EQ(scode, 0) << status;
  EXPECT_NE(status.find("x86"), std::string::npos) << status;
  EXPECT_NE(status.find("tune-op random-seed0"), std::string::npos) << status;
  const size_t finished = status.find("Finished jobs");
  ASSERT_NE(finished, std::string::npos) << status;
  EXPECT_GT(status.find("tune-op random-seed0"), finished)
      << "the finished job is listed apart: " << status;
  auto [bcode, best] = run_cli("records best --tracker " + tracker);
  EXPECT_EQ(bcode, 0) << best;
  EXPECT_NE(best.find("dense_pack.x86"), std::string::npos) << best;
  // The archive answers filtered queries: the top 3 of the workload, one JSON object a line.
  auto [tcode, top] = run_cli("records best --tracker " + tracker +
                              " --template dense_pack --workload 1x128 --top-k 3 --jsonl");
  EXPECT_EQ(tcode, 0) << top;
  EXPECT_EQ(std::count(top.begin(), top.end(), '\n'), 3) << top;
  auto [mcode, miss] = run_cli("records best --tracker " + tracker + " --workload 1x999");
  EXPECT_EQ(mcode, 0) << miss;
  EXPECT_NE(miss.find("matches the filters"), std::string::npos) << miss;
  auto [ncode, none] = run_cli("status --tracker 127.0.0.1:1");
  EXPECT_EQ(ncode, 1);
  EXPECT_NE(none.find("UNAVAILABLE"), std::string::npos) << none;
  // A quantized task travels the wire and is measured (and checked exactly) on the device.
  auto [icode, iout] = run_cli(
      "tune-op --op conv2d_int8 --data 1x8x6x6 --kernel 16x8x3x3 --pads 1 --trials 4 "
      "--tracker " +
      tracker + " --key x86 --db " + path("client.db") +
      " --number 1 --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(icode, 0) << iout;
  EXPECT_NE(iout.find("Progress: (4/4)"), std::string::npos) << iout;
  EXPECT_NE(iout.find(", 0 errors"), std::string::npos) << iout;
  auto [qcode, qbest] =
      run_cli("records best --tracker " + tracker + " --template conv2d_NCHWc_int8");
  EXPECT_EQ(qcode, 0) << qbest;
  EXPECT_NE(qbest.find("u8i8"), std::string::npos) << qbest;
}

// tune --model on a farm of two one-slot devices tunes two tasks at once (as many as the key
// has slots): both tasks' jobs are open at the tracker together, and their measurements
// interleave instead of one task after the other. The devices are stopped until both jobs are
// there, so that a task finishing before the other starts (a loaded machine) cannot pass for
// the sequential behaviour, nor the sequential behaviour for concurrency.
TEST_F(Farm, ModelTuningRunsTasksConcurrentlyOnTheFarmsSlots) {
  ASSERT_GT(start_tracker(0, {"--heartbeat-timeout", "60"}), 0);
  start_device("x86");
  start_device("x86");
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 2));
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  for (auto& d : devices_) d->signal(SIGSTOP);
  auto tuning = std::async(std::launch::async, [&] {
    return run_cli(
        "tune --model mobilenet-v1 --input-shape data=1x3x32x32 --only 2 3 --trials 6 "
        "--batch-size 2 --tracker " +
        tracker + " --key x86 --db " + path("client.db") +
        " --number 1 --repeat 1 --min-repeat-ms 0");
  });
  const bool together = wait_until([&] {
    auto s = c->status();
    return s && std::count_if(s->jobs().begin(), s->jobs().end(),
                              [](const auto& j) { return !j.finished(); }) == 2;
  });
  for (auto& d : devices_) d->signal(SIGCONT);
  auto [code, out] = tuning.get();
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(together) << "the two tasks' jobs were never open at the tracker at once";
  EXPECT_NE(out.find("2 tasks at once"), std::string::npos) << out;
  EXPECT_NE(out.find("[Total] tasks 2/2 done"), std::string::npos) << out;
  auto store = records::RecordStore::open(path("client.db"));
  ASSERT_TRUE(store);
  auto rows = (*store)->all_records();
  ASSERT_TRUE(rows);
  std::map<std::string, std::pair<double, double>> span;  // first and last finish per task
  for (const auto& r : *rows) {
    auto [it, fresh] =
        span.try_emplace(r.task.workload_key, r.result.timestamp, r.result.timestamp);
    it->second.first = std::min(it->second.first, r.result.timestamp);
    it->second.second = std::max(it->second.second, r.result.timestamp);
  }
  ASSERT_EQ(span.size(), 2u);
  const auto a = span.begin()->second, b = std::next(span.begin())->second;
  EXPECT_LT(a.first, b.second) << "the tasks ran one after the other";
  EXPECT_LT(b.first, a.second) << "the tasks ran one after the other";
  // graph-tune times the layout transforms its candidates imply on the farm's devices of the
  // key (jobs the tracker does not archive), keeps them in the DB and reuses them.
  const size_t archived = archive_counts().size();
  const std::string graph_tune =
      "graph-tune --model mobilenet-v1 --input-shape data=1x3x32x32 "
      "--db " +
      path("client.db") + " --tracker " + tracker + " --key x86";
  auto [gcode, gout] = run_cli(graph_tune);
  ASSERT_EQ(gcode, 0) << gout;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      gout, m, std::regex(R"(layout transforms: (\d+) priced \((\d+) measured now on the farm)")))
      << gout;
  EXPECT_GT(std::stoi(m[1]), 0) << gout;
  EXPECT_EQ(m[1], m[2]) << gout;
  EXPECT_NE(gout.find("0 estimated"), std::string::npos) << gout;
  EXPECT_EQ(archive_counts().size(), archived) << "transforms are not archived as tasks";
  auto [again_code, again] = run_cli(graph_tune);
  ASSERT_EQ(again_code, 0) << again;
  EXPECT_NE(again.find("(0 measured now on the farm (key x86), " + std::string(m[1]) + " reused"),
            std::string::npos)
      << again;
  auto [nokey, nokey_out] = run_cli(
      "graph-tune --model mobilenet-v1 --input-shape "
      "data=1x3x32x32 --db " +
      path("client.db") + " --tracker " + tracker);
  EXPECT_EQ(nokey, 1);
  EXPECT_NE(nokey_out.find("--tracker needs --key"), std::string::npos) << nokey_out;

  // Measured on this machine, tasks stay one at a time.
  auto [lcode, local] = run_cli(
      "tune --model mobilenet-v1 --input-shape data=1x3x32x32 --only 2 "
      "--parallel-tasks 2 --db " +
      path("local.db"));
  EXPECT_EQ(lcode, 1);
  EXPECT_NE(local.find("--parallel-tasks 2"), std::string::npos) << local;
}

TEST_F(Farm, JobOnAKeyWithoutDevicesFailsInsteadOfWaitingForever) {
  ASSERT_GT(start_tracker(0, {"--no-device-timeout", "1"}), 0);
  start_device("sim", {"--simulate-ms", "5"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  // It returns (a hang would be ctest's timeout), with the tracker's verdict.
  auto r = c->measure(task, space, valid_configs(space, 2), quick_timing(), "simm", "typo");
  ASSERT_FALSE(r);
  // The tracker's verdict, not an unreachable tracker: a client must not retry it.
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("UNAVAILABLE: no device with key 'simm'"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(archive_counts().empty());
  // tune-op surfaces it at once instead of retrying for two minutes.
  auto [code, out] =
      run_cli("tune-op --op dense --data 1x64 --weight 64x64 --trials 2 --tracker 127.0.0.1:" +
              std::to_string(port_) + " --key simm --db " + path("client.db"));
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("no device with key 'simm'"), std::string::npos) << out;
  EXPECT_EQ(out.find("retrying"), std::string::npos) << out;
}

TEST_F(Farm, ClientThatGoesAwayHasItsQueuedItemsDroppedAtOnce) {
  ASSERT_GT(start_tracker(), 0);
  start_device("sim", {"--simulate-ms", "300"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 40);
  v1::MeasureJobRequest req = raw_request(task, space, configs, "sim");
  req.set_job_name("leaver");
  auto stub = v1::Tracker::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                                       grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    auto reader = stub->Measure(&ctx, req);
    v1::MeasureJobUpdate u;
    ASSERT_TRUE(reader->Read(&u));  // the job runs
    ctx.TryCancel();
    while (reader->Read(&u)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The tracker learns of it from gRPC, not from its next write: the job stops queueing work
  // with 40 configs of 300 ms still to go.
  const bool dropped = wait_until(
      [&] {
        auto s = c->status();
        if (!s) return false;
        for (const auto& j : s->jobs())
          if (j.name() == "leaver" && j.queued() == 0) return true;
        return false;
      },
      5);
  EXPECT_TRUE(dropped) << read_text(path("tracker.log"));
  // The log line may reach the file after the status shows the job emptied.
  EXPECT_TRUE(wait_until(
      [&] { return read_text(path("tracker.log")).find("client went away") != std::string::npos; },
      5))
      << read_text(path("tracker.log"));
  EXPECT_LT(archive_counts().size(), configs.size());
}

TEST_F(Farm, SecondTrackerOnTheSamePortRefusesToStart) {
  const int port = start_tracker();
  ASSERT_GT(port, 0);
  Process second(
      kBinary,
      {"tracker", "--host", "127.0.0.1", "--port", std::to_string(port), "--db", path("b.db")},
      path("second.log"));
  const auto code = second.wait_exit(20);
  ASSERT_TRUE(code.has_value()) << "the second tracker is still running: "
                                << read_text(path("second.log"));
  EXPECT_NE(*code, 0);
  EXPECT_NE(read_text(path("second.log")).find("port " + std::to_string(port) + " is in use"),
            std::string::npos)
      << read_text(path("second.log"));
  EXPECT_TRUE(tracker_->alive());
  EXPECT_TRUE(client()->status()) << "the first tracker still serves";
}

TEST_F(Farm, SlowDeviceDoesNotGetItsExpiredLeaseBack) {
  ASSERT_GT(start_tracker(0, {"--lease-margin", "0"}), 0);  // lease = 2 x the 1 s timeout
  start_device("sim", {"--simulate-ms", "8000"});           // dev0: slow, registered first
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  start_device("sim", {"--simulate-ms", "20"});  // dev1: fast
  ASSERT_TRUE(wait_for_devices(*c, 2));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  tracker::FarmTiming t = quick_timing();
  t.timeout_s = 1;
  auto r = c->measure(task, space, valid_configs(space, 1), t, "sim", "slow");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0].ok()) << (*r)[0].error_msg;
  EXPECT_DOUBLE_EQ((*r)[0].costs.at(0), 0.02) << "measured by the fast device";
  EXPECT_EQ((*r)[0].device_key, "sim");
  auto s = c->status();
  ASSERT_TRUE(s);
  for (const auto& d : s->devices())
    EXPECT_EQ(d.busy(), d.name() == "dev0" ? 1 : 0)
        << d.name() << ": the slow one is still measuring";
  const std::string log = read_text(path("tracker.log"));
  EXPECT_NE(log.find("re-queued: lease expired"), std::string::npos) << log;
  EXPECT_EQ(log.find("gave up"), std::string::npos) << log;
}

// How soon they come back is a speed, printed here (the goal is 1 s), not asserted.
TEST_F(Farm, DevicesRegisterAgainOnceTheTrackerListensAgain) {
  const int port = start_tracker();
  ASSERT_GT(port, 0);
  start_device("sim", {"--simulate-ms", "5"});
  start_device("sim", {"--simulate-ms", "5"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 2));
  auto attempts = [&](int device) {
    const std::string log = read_text(path("device" + std::to_string(device) + ".log"));
    int n = 0;
    for (size_t at = log.find("reconnecting to"); at != std::string::npos;
         at = log.find("reconnecting to", at + 1))
      ++n;
    return n;
  };
  const int before[] = {attempts(0), attempts(1)};
  tracker_->kill9();
  // Both devices find the tracker gone and start backing off before it returns.
  wait_until([&] { return attempts(0) > before[0] && attempts(1) > before[1]; });
  ASSERT_GT(attempts(0), before[0]) << read_text(path("device0.log"));
  ASSERT_GT(attempts(1), before[1]) << read_text(path("device1.log"));
  ASSERT_EQ(start_tracker(port), port) << read_text(path("tracker.log"));
  const auto listening = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for_devices(*c, 2, 20)) << "the devices did not come back";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - listening).count();
  RecordProperty("reregistration_s", std::to_string(seconds));
  std::printf("both devices registered again %.2f s after the tracker listened\n", seconds);
}

TEST_F(Farm, PausedTrackerKeepsItsDevicesAndTheirFinishedWork) {
  ASSERT_GT(start_tracker(), 0);  // heartbeat timeout 3 s
  start_device("sim", {"--simulate-ms", "1000"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const uint64_t id_before = c->status()->devices(0).device_id();
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 3);
  std::atomic<bool> paused{false};
  auto r = c->measure(task, space, configs, quick_timing(), "sim", "pause", 0,
                      [&](int, const ss::MeasureResult&, bool) {
                        if (paused.exchange(true)) return;
                        // Stopped for longer than the heartbeat timeout, while the device
                        // finishes its next item and keeps sending heartbeats.
                        tracker_->signal(SIGSTOP);
                        std::this_thread::sleep_for(std::chrono::seconds(6));
                        tracker_->signal(SIGCONT);
                      });
  ASSERT_TRUE(r) << r.error().message << read_text(path("tracker.log"));
  for (const auto& x : *r) EXPECT_TRUE(x.ok()) << x.error_msg;
  auto s = c->status();
  ASSERT_TRUE(s);
  ASSERT_EQ(s->devices_size(), 1);
  EXPECT_EQ(s->devices(0).device_id(), id_before) << "the same registration: never dropped";
  // The pause is noticed by the tracker's housekeeping thread, which may run after the results
  // that waited in the streams have reached us.
  wait_until(
      [&] { return read_text(path("tracker.log")).find("did not run for") != std::string::npos; });
  const std::string log = read_text(path("tracker.log"));
  EXPECT_EQ(log.find("silent"), std::string::npos) << log;
  EXPECT_EQ(log.find("re-queued"), std::string::npos) << log;
  EXPECT_NE(log.find("did not run for"), std::string::npos) << log;
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), configs.size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << "config " << key.second;
}

// Protected by default: without a token the tracker serves loopback only; another
// address needs --insecure, and is then flagged in every status; a token file others can read
// is refused, as ssh refuses such keys.
TEST_F(Farm, TrackerWithoutAuthenticationServesOnlyThisMachineUnlessInsecure) {
  Process open(kBinary, {"tracker", "--host", "0.0.0.0", "--port", "0", "--db", path("t.db")},
               path("open.log"));
  auto code = open.wait_exit(30);
  ASSERT_TRUE(code.has_value()) << "an open tracker started: " << read_text(path("open.log"));
  EXPECT_NE(*code, 0);
  EXPECT_NE(read_text(path("open.log")).find("--insecure"), std::string::npos)
      << read_text(path("open.log"));

  std::ofstream(path("lax")) << "t0ken\n";
  fs::permissions(path("lax"), fs::perms(0644), fs::perm_options::replace);
  Process lax(kBinary,
              {"tracker", "--port", "0", "--db", path("t.db"), "--token-file", path("lax")},
              path("lax.log"));
  code = lax.wait_exit(30);
  ASSERT_TRUE(code.has_value()) << read_text(path("lax.log"));
  EXPECT_NE(*code, 0);
  EXPECT_NE(read_text(path("lax.log")).find("chmod 600"), std::string::npos)
      << read_text(path("lax.log"));

  // No --host and no token: loopback.
  Process local(kBinary,
                {"tracker", "--port", "0", "--db", path("t.db"), "--port-file", path("port2")},
                path("local.log"));
  ASSERT_GT(wait_for_port(path("port2")), 0) << read_text(path("local.log"));
  EXPECT_NE(read_text(path("local.log")).find("listening on 127.0.0.1:"), std::string::npos)
      << read_text(path("local.log"));
  local.kill9();

  // --insecure: it starts, says so, and so does every status.
  Process insecure(kBinary,
                   {"tracker", "--host", "0.0.0.0", "--insecure", "--port", "0", "--db",
                    path("t.db"), "--port-file", path("port3")},
                   path("insecure.log"));
  const int port = wait_for_port(path("port3"));
  ASSERT_GT(port, 0) << read_text(path("insecure.log"));
  EXPECT_NE(read_text(path("insecure.log")).find("INSECURE"), std::string::npos);
  Process status(kBinary, {"status", "--tracker", "127.0.0.1:" + std::to_string(port)},
                 path("status.log"));
  code = status.wait_exit(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << read_text(path("status.log"));
  EXPECT_NE(read_text(path("status.log")).find("WARNING: INSECURE"), std::string::npos)
      << read_text(path("status.log"));
}

// Named credentials: a device with a client's token cannot register, a client with a
// device's token cannot submit; each does what its role allows; a lax tokens file is refused.
TEST_F(Farm, NamedCredentialsAllowEachRoleOnlyItsOwnCalls) {
  const std::string alice = "alice-client-token-0123", box = "box1-device-token-4567",
                    root = "root-admin-token-89abcdef";
  write_secret(path("tokens"), "# name role token\nalice client " + alice + "\nbox1 device " + box +
                                   "\n\nroot admin " + root + "\n");
  write_secret(path("alice"), alice + "\n");
  write_secret(path("box"), box + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0)
      << read_text(path("tracker.log"));

  Process& as_client = start_device("sim", {"--simulate-ms", "5", "--token-file", path("alice")});
  auto code = as_client.wait_exit(20);
  ASSERT_TRUE(code.has_value()) << "still retrying: " << read_text(path("device0.log"));
  EXPECT_EQ(*code, 1);
  EXPECT_NE(read_text(path("device0.log")).find("PERMISSION_DENIED"), std::string::npos)
      << read_text(path("device0.log"));
  EXPECT_NE(read_text(path("device0.log")).find("'alice' is client"), std::string::npos)
      << read_text(path("device0.log"));

  start_device("sim", {"--simulate-ms", "5", "--token-file", path("box")});
  auto admin = client(root);
  ASSERT_TRUE(wait_for_devices(*admin, 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 3);
  auto as_device = client(box)->measure(task, space, configs, quick_timing(), "sim", "x");
  ASSERT_FALSE(as_device);
  EXPECT_NE(as_device.error().message.find("PERMISSION_DENIED"), std::string::npos)
      << as_device.error().message;
  auto measured = client(alice)->measure(task, space, configs, quick_timing(), "sim", "alice-job");
  ASSERT_TRUE(measured) << measured.error().message;
  EXPECT_EQ(measured->size(), configs.size());
  EXPECT_FALSE(client(box)->status()) << "a device credential reads no status";
  EXPECT_NE(read_text(path("tracker.log")).find("'box1'"), std::string::npos)
      << "refusals name the credential";
  EXPECT_NE(read_text(path("tracker.log")).find("'alice-job' from alice@"), std::string::npos)
      << "jobs name their credential";
  auto st = admin->status();
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_EQ(st->devices_size(), 1);
  EXPECT_EQ(st->devices(0).name().rfind("box1/", 0), 0u) << st->devices(0).name();
  EXPECT_EQ(read_text(path("tracker.log")).find(box), std::string::npos) << "tokens never logged";

  // A tokens file others can read, or with a bad line, stops the tracker at start.
  tracker_.reset();
  fs::permissions(path("tokens"), fs::perms(0644), fs::perm_options::replace);
  Process lax(kBinary,
              {"tracker", "--port", "0", "--db", path("t.db"), "--tokens-file", path("tokens")},
              path("lax.log"));
  code = lax.wait_exit(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(read_text(path("lax.log")).find("chmod 600"), std::string::npos)
      << read_text(path("lax.log"));
  write_secret(path("bad"), "alice client " + alice + "\nbob superuser " + box + "\n");
  Process bad(kBinary,
              {"tracker", "--port", "0", "--db", path("t.db"), "--tokens-file", path("bad")},
              path("bad.log"));
  code = bad.wait_exit(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(read_text(path("bad.log")).find(path("bad") + ":2: role 'superuser'"),
            std::string::npos)
      << read_text(path("bad.log"));
}

// Rotation: SIGHUP reloads the tokens file; a revoked device loses its stream at
// once and its items complete on another device, each exactly once; a file that does not load
// keeps the old credentials.
TEST_F(Farm, SighupRevokesADeviceWhoseItemsCompleteElsewhereExactlyOnce) {
  const std::string alice = "alice-client-token-0123", box1 = "box1-device-token-4567",
                    box2 = "box2-device-token-89ab";
  write_secret(path("tokens"),
               "alice client " + alice + "\nbox1 device " + box1 + "\nbox2 device " + box2 + "\n");
  write_secret(path("box1"), box1 + "\n");
  write_secret(path("box2"), box2 + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0);
  Process& revoked = start_device("sim", {"--simulate-ms", "60", "--token-file", path("box1")});
  start_device("sim", {"--simulate-ms", "60", "--token-file", path("box2")});
  auto c = client(alice);
  ASSERT_TRUE(wait_for_devices(*c, 2)) << read_text(path("tracker.log"));

  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 24);
  Expected<std::vector<ss::MeasureResult>> results = internal_error("not run");
  std::thread job([&] {
    results = client(alice)->measure(task, space, configs, quick_timing(), "sim", "rotation");
  });
  // Revoke box1 while it holds an item of the job.
  ASSERT_TRUE(wait_until([&] {
    auto st = c->status();
    if (!st) return false;
    for (const auto& d : st->devices())
      if (d.name().rfind("box1/", 0) == 0 && d.busy() > 0) return true;
    return false;
  })) << read_text(path("tracker.log"));
  write_secret(path("tokens"), "alice client " + alice + "\nbox2 device " + box2 + "\n");
  tracker_->signal(SIGHUP);
  job.join();
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_EQ(results->size(), configs.size());
  for (const auto& r : *results) EXPECT_TRUE(r.ok()) << r.error_msg;
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), configs.size());
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << "config " << key.second;
  auto code = revoked.wait_exit(20);
  ASSERT_TRUE(code.has_value()) << "the revoked device still runs: "
                                << read_text(path("device0.log"));
  EXPECT_NE(read_text(path("tracker.log")).find("credential 'box1' revoked"), std::string::npos)
      << read_text(path("tracker.log"));

  // A tokens file that does not load keeps the old set.
  write_secret(path("tokens"), "alice client " + alice + "\nbox2 sudo " + box2 + "\n");
  tracker_->signal(SIGHUP);
  wait_until(
      [&] { return read_text(path("tracker.log")).find("not reloaded") != std::string::npos; });
  EXPECT_NE(read_text(path("tracker.log")).find("role 'sudo'"), std::string::npos)
      << read_text(path("tracker.log"));
  auto st = c->status();
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->devices_size(), 1) << "box2 keeps its stream";
}

TEST_F(Farm, RefusedDevicesExitWithTheReasonInsteadOfRetrying) {
  write_secret(path("token"), "right-token-0123456789\n");
  write_secret(path("wrong"), "wrong-token-0123456789\n");
  ASSERT_GT(start_tracker(0, {"--token-file", path("token")}), 0);
  Process& wrong = start_device("sim", {"--simulate-ms", "5", "--token-file", path("wrong")});
  auto code = wrong.wait_exit(20);
  ASSERT_TRUE(code.has_value()) << "still retrying: " << read_text(path("device0.log"));
  EXPECT_EQ(*code, 1);
  EXPECT_NE(
      read_text(path("device0.log")).find("refused this device: UNAUTHENTICATED: wrong token"),
      std::string::npos)
      << read_text(path("device0.log"));
  Process& bad_key =
      start_device("bad key!", {"--simulate-ms", "5", "--token-file", path("token")});
  code = bad_key.wait_exit(20);
  ASSERT_TRUE(code.has_value()) << "still retrying: " << read_text(path("device1.log"));
  EXPECT_EQ(*code, 1);
  EXPECT_NE(read_text(path("device1.log")).find("register.device_key = 'bad key!'"),
            std::string::npos)
      << read_text(path("device1.log"));
}

TEST_F(Farm, AKeyAtItsDeviceLimitRefusesOneMoreUntilADeviceLeaves) {
  ASSERT_GT(start_tracker(0, {"--max-devices-per-key", "1"}), 0);
  Process& first = start_device("sim", {"--simulate-ms", "5"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  start_device("sim", {"--simulate-ms", "5"});
  const auto refused = [&] {
    return read_text(path("device1.log"))
               .find(
                   "RESOURCE_EXHAUSTED: register.device_key 'sim' already has 1 devices, the "
                   "tracker's limit (--max-devices-per-key)") != std::string::npos;
  };
  wait_until(refused);
  ASSERT_TRUE(refused()) << read_text(path("device1.log"));
  EXPECT_EQ(c->status()->devices_size(), 1);
  // The refusal is not permanent: once the first device is gone, the second gets in.
  first.kill9();
  const auto registered = [&] {
    return read_text(path("device1.log")).find("registered with") != std::string::npos;
  };
  wait_until(registered);
  EXPECT_TRUE(registered()) << read_text(path("device1.log"));
}

TEST_F(Farm, TlsTrackerServesVerifiedClientsAndDevicesOnly) {
  const std::string cert = path("cert.pem"), key = path("key.pem");
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + key + " -out " + cert +
      " -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 "
      ">/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    GTEST_SKIP() << "openssl is not available to make a test certificate";
  ASSERT_GT(start_tracker(0, {"--tls-cert", cert, "--tls-key", key}), 0)
      << read_text(path("tracker.log"));
  start_device("sim", {"--simulate-ms", "5", "--tls-ca", cert});
  wire::TrackerEndpoint e;
  e.address = "localhost:" + std::to_string(port_);
  e.tls_ca = cert;
  auto secure = std::move(tracker::TrackerClient::connect(e)).value();
  ASSERT_TRUE(wait_for_devices(*secure, 1)) << read_text(path("device0.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  auto r = secure->measure(task, space, valid_configs(space, 2), quick_timing(), "sim", "tls");
  ASSERT_TRUE(r) << r.error().message;
  auto plain = client()->status();  // plaintext against a TLS port
  EXPECT_FALSE(plain);
}

// A worker that replaced a crashed one outlives the tracker connection it was started under:
// after the tracker restarts, the next configs measure, and none is blamed for a worker that
// died while idle (the replacement used to be killed with the thread that had started it).
TEST_F(Farm, AReplacedWorkerOutlivesTheTrackerConnectionAndNoConfigIsBlamed) {
  const int port = start_tracker();
  ASSERT_GT(port, 0);
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 6);
  start_device("x86", {"--fault-inject", "crash@" + std::to_string(configs[1].index)});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  auto first =
      c->measure(task, space, {configs[0], configs[1], configs[2]}, quick_timing(), "x86", "crash");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ((*first)[1].error_no, ss::MeasureErrorNo::kRuntimeDevice);
  EXPECT_TRUE((*first)[2].ok()) << (*first)[2].error_msg;  // measured by the replacement

  tracker_->kill9();
  ASSERT_EQ(start_tracker(port), port) << read_text(path("tracker.log"));
  auto again = client();
  ASSERT_TRUE(wait_for_devices(*again, 1, 20)) << read_text(path("device0.log"));
  auto second =
      again->measure(task, space, {configs[3], configs[4]}, quick_timing(), "x86", "after restart");
  ASSERT_TRUE(second) << second.error().message;
  for (const auto& r : *second) EXPECT_TRUE(r.ok()) << r.error_msg;

  // An idle worker killed from outside (as the OOM killer would) is replaced before the next
  // config is handed over: that config measures.
  std::string children;
  for (const auto& t :
       fs::directory_iterator("/proc/" + std::to_string(devices_[0]->pid()) + "/task"))
    children += read_text(t.path() / "children");
  ASSERT_FALSE(children.empty()) << "the device server has no worker process";
  const pid_t worker = std::stoi(children);
  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  // Dead before the next item arrives, as a worker killed while idle is: a zombie whose every
  // thread has exited (until then its server cannot reap it).
  const std::string proc = "/proc/" + std::to_string(worker);
  auto dead = [&] {
    const std::string stat = read_text(proc + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
    if (stat[paren + 2] != 'Z') return false;
    std::error_code ec;
    return std::distance(fs::directory_iterator(proc + "/task", ec), fs::directory_iterator()) <= 1;
  };
  wait_until(dead, 5);
  auto third = again->measure(task, space, {configs[5]}, quick_timing(), "x86", "after a kill");
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_TRUE((*third)[0].ok()) << (*third)[0].error_msg;
  const std::string log = read_text(path("device0.log"));
  // Only the injected crash was a config's fault.
  size_t blamed = 0;
  for (size_t at = log.find("worker process died"); at != std::string::npos;
       at = log.find("worker process died", at + 1))
    ++blamed;
  EXPECT_EQ(blamed, 1u) << log;
  EXPECT_NE(log.find("the idle worker"), std::string::npos) << log;
}

// One rule for every secret: a single --token-file token shorter than 16 characters is refused
// as a --tokens-file line's is (a 3-character one used to open the tracker to the network).
TEST_F(Farm, AShortSingleTokenIsRefusedLikeATokensFileLine) {
  write_secret(path("short"), "abc\n");
  const auto [code, log] = run_to_exit(
      {"tracker", "--port", "0", "--db", path("t.db"), "--token-file", path("short")}, "short.log");
  ASSERT_TRUE(code.has_value()) << "it started: " << log;
  EXPECT_NE(*code, 0);
  EXPECT_NE(log.find("the --token-file token is shorter than 16 characters"), std::string::npos)
      << log;
}

// One tracker per archive: a second one on the same file is refused while the first runs
// (two trackers on one archive measured and archived the same configs twice).
TEST_F(Farm, ASecondTrackerOnTheSameArchiveIsRefused) {
  ASSERT_GT(start_tracker(), 0);
  const auto [code, log] =
      run_to_exit({"tracker", "--port", "0", "--db", path("tracker.db")}, "second.log");
  ASSERT_TRUE(code.has_value()) << "it started: " << log;
  EXPECT_NE(*code, 0);
  EXPECT_NE(log.find("is in use by another tracker"), std::string::npos) << log;
  // Once the first is gone (killed: the kernel drops its lock), the archive opens again.
  tracker_->kill9();
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
}

// Two devices started with the same --name: the second is refused (ALREADY_EXISTS, retried)
// while the first is registered, so that the archive's device column and --exclude-device tell
// them apart; once the first leaves, the second gets in under that name.
TEST_F(Farm, ASecondDeviceWithTheSameNameWaitsUntilTheFirstLeaves) {
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
  auto device = [&](const std::string& log) {
    return std::make_unique<Process>(
        kBinary,
        std::vector<std::string>{"device", "--tracker", "127.0.0.1:" + std::to_string(port_),
                                 "--key", "sim", "--name", "box", "--simulate-ms", "5"},
        path(log));
  };
  auto first = device("first.log");
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("tracker.log"));
  auto second = device("second.log");
  // Wait for the refusal itself, in the second device's log.
  wait_until([&] {
    return read_text(path("second.log")).find("a device named 'box' is registered") !=
           std::string::npos;
  });
  const std::string refused = read_text(path("second.log"));
  EXPECT_NE(refused.find("a device named 'box' is registered"), std::string::npos) << refused;
  EXPECT_TRUE(second->alive()) << "a refused name is retried, not fatal";
  auto s = c->status();
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->devices_size(), 1);
  const uint64_t first_id = s->devices(0).device_id();
  first->kill9();
  // The tracker drops the first (its stream ends), and the second registers as 'box'.
  const bool replaced = wait_until([&] {
    auto st = c->status();
    return st && st->devices_size() == 1 && st->devices(0).device_id() != first_id &&
           st->devices(0).name() == "box";
  });
  EXPECT_TRUE(replaced) << read_text(path("tracker.log"));
}

// Two users tune the same dense workload at once (two `tune-op --tuner grid` processes): each
// config is measured once and archived once, and both clients record all of them. Their jobs
// are made to overlap for certain: both wait at the tracker until the one device arrives.
TEST_F(Farm, TwoClientsTuningTheSameWorkloadAtOnceMeasureEachConfigOnce) {
  ASSERT_GT(start_tracker(), 0);
  auto c = client();
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  auto tune = [&](const std::string& db) {
    return run_cli(
        "tune-op --op dense --data 1x64 --weight 64x64 --tuner grid --trials 12 "
        "--tracker " +
        tracker + " --key sim --db " + path(db) + " --number 1 --repeat 1 --min-repeat-ms 0");
  };
  std::pair<int, std::string> first, second;
  std::thread a([&] { first = tune("alice.db"); });
  std::thread b([&] { second = tune("bob.db"); });
  EXPECT_TRUE(wait_until([&] {
    auto s = c->status();
    return s && s->jobs_size() >= 2;
  })) << "the two clients' jobs never waited at the tracker together";
  start_device("sim", {"--simulate-ms", "20"});
  a.join();
  b.join();
  ASSERT_EQ(first.first, 0) << first.second;
  ASSERT_EQ(second.first, 0) << second.second;
  const auto counts = archive_counts();
  EXPECT_EQ(counts.size(), 12u);
  for (const auto& [key, n] : counts) EXPECT_EQ(n, 1) << "config " << key.second << " archived";
  for (const char* db : {"alice.db", "bob.db"}) {
    auto store = records::RecordStore::open(path(db));
    ASSERT_TRUE(store);
    EXPECT_EQ(*(*store)->result_count(), 12) << db;
  }
}

}  // namespace
}  // namespace tensortune::testing
