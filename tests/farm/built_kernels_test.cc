// Builders apart from runners, on loopback with real processes: kernels built on the client's
// cores travel with the items, the device checks and loads them instead of compiling, the
// tracker takes them only from a builder, and nothing that fails a check gets timed.
#include <gtest/gtest.h>

#include <thread>

#include "compiler/measure/kernel_build.h"
#include "proto/convert.h"
#include "proto/farm.grpc.pb.h"
#include "support/sha256.h"
#include "tests/cli/run_binary.h"
#include "tests/farm/farm_test_fixture.h"

namespace tensortune::testing {
namespace {

std::vector<ss::KernelBinary> build_all(const ss::Task& task, const ss::ConfigSpace& space,
                                        const std::vector<ss::Config>& configs) {
  std::vector<ss::KernelBinary> out;
  for (const auto& c : configs) {
    auto b = measure::build_kernel(task, space, c);
    EXPECT_TRUE(b) << b.error().message;
    if (b) out.push_back(std::move(b).value());
  }
  return out;
}

// The tracker's answer to a raw request (the first update or the refusal).
grpc::Status send_raw(int port, const v1::MeasureJobRequest& req, const std::string& token = "") {
  auto stub = v1::Tracker::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  auto reader = stub->Measure(&ctx, req);
  v1::MeasureJobUpdate u;
  while (reader->Read(&u)) {
  }
  return reader->Finish();
}

TEST_F(Farm, ADeviceThatAcceptsBuiltCodeTimesTheClientsKernelsAndRefusesAnyOtherSource) {
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
  start_device("x86", {"--accept-built-code"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  // The first four are measured as sent; the others, never measured (the archive would answer
  // for a config measured before), carry the faults.
  const auto all = valid_configs(space, 8);
  ASSERT_EQ(all.size(), 8u);
  std::vector<ss::KernelBinary> built = build_all(task, space, all);
  ASSERT_EQ(built.size(), all.size());
  const std::vector<ss::Config> configs(all.begin(), all.begin() + 4);
  std::vector<ss::KernelBinary> kernels(built.begin(), built.begin() + 4);
  // Build times no device compile could reproduce: a result that reports them was timed from
  // the binary sent, not from a kernel the device compiled itself.
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].build_s = 100.0 + static_cast<double>(i);
  auto results = c->measure_built(task, space, configs, kernels, quick_timing(), "x86", "built");
  ASSERT_TRUE(results) << results.error().message;
  for (size_t i = 0; i < configs.size(); ++i) {
    EXPECT_TRUE((*results)[i].ok()) << (*results)[i].error_msg;
    EXPECT_EQ((*results)[i].compile_s, 100.0 + static_cast<double>(i));
  }

  // Config 4's kernel sent as config 5's: the device makes config 5's source, compares the
  // digests and refuses to time it.
  auto wrong =
      c->measure_built(task, space, {all[5]}, {built[4]}, quick_timing(), "x86", "swapped");
  ASSERT_TRUE(wrong) << wrong.error().message;
  EXPECT_EQ(wrong->front().error_no, ss::MeasureErrorNo::kCompileHost);
  EXPECT_NE(wrong->front().error_msg.find("compiled from another source"), std::string::npos)
      << wrong->front().error_msg;

  // Bytes that are no object file (their digest matches: the tracker cannot tell) fail to
  // load in the worker: a compile error of that config, and the server lives on.
  ss::KernelBinary junk = built[6];
  junk.code = "not an object file";
  auto broken = c->measure_built(task, space, {all[6]}, {junk}, quick_timing(), "x86", "junk");
  ASSERT_TRUE(broken) << broken.error().message;
  EXPECT_EQ(broken->front().error_no, ss::MeasureErrorNo::kCompileHost);
  EXPECT_NE(broken->front().error_msg.find("does not load"), std::string::npos)
      << broken->front().error_msg;
  auto again =
      c->measure_built(task, space, {all[7]}, {built[7]}, quick_timing(), "x86", "after-junk");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(again->front().ok()) << again->front().error_msg;
}

TEST_F(Farm, ACpuDeviceWithoutAcceptBuiltCodeCompilesItselfAndIgnoresWhatItIsSent) {
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
  start_device("x86");
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 3);
  std::vector<ss::KernelBinary> kernels = build_all(task, space, configs);
  ASSERT_EQ(kernels.size(), 3u);
  // Every config carries another config's kernel: a device that loaded them would refuse each.
  std::rotate(kernels.begin(), kernels.begin() + 1, kernels.end());
  auto results = c->measure_built(task, space, configs, kernels, quick_timing(), "x86", "ignored");
  ASSERT_TRUE(results) << results.error().message;
  for (const auto& r : *results) EXPECT_TRUE(r.ok()) << r.error_msg;
}

TEST_F(Farm, TheTrackerTakesKernelsOnlyFromABuilderAndOnlyWithTheirDigest) {
  const std::string alice = "alice-client-token-0123", bob = "bob-builder-token-456789",
                    box = "box1-device-token-4567";
  write_secret(path("tokens"), "alice client " + alice + "\nbob client+builder " + bob +
                                   "\nbox1 device " + box + "\n");
  write_secret(path("box"), box + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0)
      << read_text(path("tracker.log"));
  start_device("x86", {"--accept-built-code", "--token-file", path("box")});
  ASSERT_TRUE(wait_for_devices(*client(bob), 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 2);
  const std::vector<ss::KernelBinary> kernels = build_all(task, space, configs);
  ASSERT_EQ(kernels.size(), 2u);
  v1::MeasureJobRequest req = raw_request(task, space, configs, "x86");
  for (const auto& k : kernels) wire::kernel_binary_to_proto(k, req.add_kernels());

  const grpc::Status as_client = send_raw(port_, req, alice);
  EXPECT_EQ(as_client.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(as_client.error_message().find("builder role"), std::string::npos)
      << as_client.error_message();
  EXPECT_NE(as_client.error_message().find("'alice' is client"), std::string::npos)
      << as_client.error_message();

  v1::MeasureJobRequest tampered = req;
  tampered.mutable_kernels(1)->mutable_code()->back() ^= 1;
  const grpc::Status bad_digest = send_raw(port_, tampered, bob);
  EXPECT_EQ(bad_digest.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad_digest.error_message().find("kernels[1]: kernel.sha256"), std::string::npos)
      << bad_digest.error_message();

  v1::MeasureJobRequest short_list = req;
  short_list.mutable_kernels()->RemoveLast();
  const grpc::Status count = send_raw(port_, short_list, bob);
  EXPECT_EQ(count.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(count.error_message().find("one per config"), std::string::npos)
      << count.error_message();

  auto results =
      client(bob)->measure_built(task, space, configs, kernels, quick_timing(), "x86", "from-bob");
  ASSERT_TRUE(results) << results.error().message;
  for (const auto& r : *results) EXPECT_TRUE(r.ok()) << r.error_msg;
}

TEST_F(Farm, TuneOpBuildsOnTheClientsCoresWhenAsked) {
  ASSERT_GT(start_tracker(), 0);
  start_device("x86", {"--accept-built-code"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1));
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  auto [code, out] = run_tensortune(
      "tune-op --op dense --data 1x128 --weight 128x128 --trials 8 --build-workers 2 --tracker " +
      tracker + " --key x86 --db " + path("client.db") +
      " --number 1 --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Progress: (8/8)"), std::string::npos) << out;
  EXPECT_NE(out.find(", 0 errors"), std::string::npos) << out;
  EXPECT_EQ(archive_counts().size(), 8u);
  EXPECT_NE(out.find("kernels built here on 2 threads: 8 "), std::string::npos) << out;
  EXPECT_NE(out.find("timing: kernels ran"), std::string::npos) << out;
  // The device's next heartbeat carries the share of its slot time spent timing kernels.
  double share = 0;
  for (int i = 0; i < 200 && share == 0; ++i) {
    auto s = c->status();
    ASSERT_TRUE(s) << s.error().message;
    if (s->devices_size() == 1) share = s->devices(0).timing_fraction();
    if (share == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GT(share, 0);
  EXPECT_LE(share, 1);
  auto [status_code, status] = run_tensortune("status --tracker " + tracker);
  EXPECT_EQ(status_code, 0) << status;
  EXPECT_NE(status.find("timing"), std::string::npos) << status;
  EXPECT_NE(out.find("0 from the kernel cache"), std::string::npos) << out;
  // On two threads the configs are measured again, from the same kernels: the record DB's
  // kernel cache holds them all, and nothing is built twice.
  auto [again_code, again] = run_tensortune(
      "tune-op --op dense --data 1x128 --weight 128x128 --trials 8 --build-workers 2 --threads 2 "
      "--tracker " +
      tracker + " --key x86 --db " + path("client.db") +
      " --number 1 --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(again_code, 0) << again;
  EXPECT_NE(again.find("kernels built here on 2 threads: 0 "), std::string::npos) << again;
  EXPECT_NE(again.find("8 from the kernel cache (100% hits)"), std::string::npos) << again;
}

// A builder server builds for a client that does not: the batch goes to key "builder" first
// (not archived), then its kernels to the device, which loads them.
TEST_F(Farm, BuilderServersBuildTheKernelsOfClientsThatDoNot) {
  ASSERT_GT(start_tracker(), 0);
  devices_.push_back(std::make_unique<Process>(
      kBinary,
      std::vector<std::string>{"builder", "--tracker", "127.0.0.1:" + std::to_string(port_),
                               "--workers", "2", "--name", "b0"},
      path("builder.log")));
  start_device("x86", {"--accept-built-code"});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 2)) << read_text(path("builder.log"));
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  auto [code, out] = run_tensortune(
      "tune-op --op dense --data 1x128 --weight 128x128 --trials 8 --remote-build --tracker " +
      tracker + " --key x86 --db " + path("client.db") +
      " --number 1 --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(code, 0) << out << read_text(path("builder.log"));
  EXPECT_NE(out.find("Progress: (8/8)"), std::string::npos) << out;
  EXPECT_NE(out.find(", 0 errors"), std::string::npos) << out;
  EXPECT_NE(out.find("kernels built by the farm's builders: 8"), std::string::npos) << out;
  EXPECT_EQ(archive_counts().size(), 8u) << "the builds are not archived, the timings are";
  auto s = c->status();
  ASSERT_TRUE(s) << s.error().message;
  int build_jobs = 0, built = 0;
  for (const auto& j : s->jobs())
    if (j.device_key() == "builder") {
      ++build_jobs;
      built += j.done();
      EXPECT_EQ(j.failed(), 0);
    }
  EXPECT_GE(build_jobs, 1);
  EXPECT_EQ(built, 8);
}

TEST_F(Farm, BuildersAndDevicesEachNeedTheirOwnRole) {
  const std::string box = "box1-device-token-4567", bob = "bob-builder-token-456789";
  write_secret(path("tokens"), "box1 device " + box + "\nbob builder " + bob + "\n");
  write_secret(path("box"), box + "\n");
  write_secret(path("bob"), bob + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0)
      << read_text(path("tracker.log"));
  const std::string tracker = "127.0.0.1:" + std::to_string(port_);
  // A device's credential cannot make the code devices run...
  auto as_builder =
      run_to_exit({"builder", "--tracker", tracker, "--workers", "1", "--token-file", path("box")},
                  "builder_as_device.log");
  ASSERT_TRUE(as_builder.code.has_value()) << "still retrying: " << as_builder.log;
  EXPECT_EQ(*as_builder.code, 1);
  EXPECT_NE(as_builder.log.find("needs a credential with the builder role; 'box1' is device"),
            std::string::npos)
      << as_builder.log;
  // ...and a builder's cannot time it.
  auto as_device =
      run_to_exit({"device", "--tracker", tracker, "--key", "x86", "--token-file", path("bob")},
                  "device_as_builder.log");
  ASSERT_TRUE(as_device.code.has_value()) << "still retrying: " << as_device.log;
  EXPECT_EQ(*as_device.code, 1);
  EXPECT_NE(as_device.log.find("needs a credential with the device role; 'bob' is builder"),
            std::string::npos)
      << as_device.log;
  // No device may take the builders' key.
  auto reserved =
      run_to_exit({"device", "--tracker", tracker, "--key", "builder", "--token-file", path("box")},
                  "device_on_builder_key.log");
  ASSERT_TRUE(reserved.code.has_value());
  EXPECT_NE(reserved.log.find("is the builder servers' key"), std::string::npos) << reserved.log;
}

}  // namespace
}  // namespace tensortune::testing
