// A farm on a shared network, with real processes on loopback: mutual TLS, client
// quotas under a flooding client, impossible timings, revocation of a running client's job by
// the admin call, and the archive's attribution of every result.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "proto/farm.grpc.pb.h"
#include "tests/cli/run_binary.h"
#include "tests/farm/farm_test_fixture.h"

namespace tensortune::testing {
namespace {

// Runs a shell command quietly; false when it fails.
bool shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// The archive's (client, device) per result, oldest first.
std::vector<std::pair<std::string, std::string>> attribution(const std::string& db) {
  std::vector<std::pair<std::string, std::string>> out;
  auto store = records::RecordStore::open(db);
  EXPECT_TRUE(store);
  if (!store) return out;
  auto rows = (*store)->all_records();
  EXPECT_TRUE(rows);
  if (!rows) return out;
  for (const auto& r : *rows) out.emplace_back(r.client, r.device);
  return out;
}

class FarmSecurity : public Farm {
 protected:
  // A CA, the tracker's certificate for localhost, and certificates for `subjects` ("name" ->
  // "/CN=alice/O=client"), signed by the CA; false when openssl is missing.
  bool make_certificates(const std::map<std::string, std::string>& subjects) {
    if (!shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + path("ca.key") + " -out " +
               path("ca.pem") + " -days 1 -subj /CN=test-ca"))
      return false;
    std::ofstream(path("san.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::map<std::string, std::string> all = subjects;
    all["tracker"] = "/CN=localhost";
    for (const auto& [name, subject] : all) {
      const std::string key = path(name + ".key"), csr = path(name + ".csr");
      if (!shell("openssl req -newkey rsa:2048 -nodes -keyout " + key + " -out " + csr + " -subj " +
                 subject) ||
          !shell("openssl x509 -req -in " + csr + " -CA " + path("ca.pem") + " -CAkey " +
                 path("ca.key") + " -CAcreateserial -days 1 -out " + path(name + ".pem") +
                 (name == "tracker" ? " -extfile " + path("san.ext") : std::string())))
        return false;
      fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::replace);
    }
    return true;
  }
  std::unique_ptr<tracker::TrackerClient> tls_client(const std::string& name) {
    wire::TrackerEndpoint e;
    e.address = "localhost:" + std::to_string(port_);
    e.tls_ca = path("ca.pem");
    if (!name.empty()) {
      e.tls_cert = path(name + ".pem");
      e.tls_key = path(name + ".key");
    }
    return std::move(tracker::TrackerClient::connect(e)).value();
  }
};

TEST_F(FarmSecurity, MutualTlsTakesNamesAndRolesFromCertificatesOfTheCaOnly) {
  if (!make_certificates({{"alice", "/CN=alice/O=client"}, {"box1", "/CN=box1/O=device"}}))
    GTEST_SKIP() << "openssl is not available to make test certificates";
  // Eve's certificate says client, but no CA of the tracker's signed it.
  ASSERT_TRUE(shell("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + path("eve.key") +
                    " -out " + path("eve.pem") + " -days 1 -subj /CN=eve/O=client"));
  fs::permissions(path("eve.key"), fs::perms::owner_read | fs::perms::owner_write,
                  fs::perm_options::replace);
  ASSERT_GT(start_tracker(0, {"--tls-cert", path("tracker.pem"), "--tls-key", path("tracker.key"),
                              "--tls-client-ca", path("ca.pem")}),
            0)
      << read_text(path("tracker.log"));
  EXPECT_NE(read_text(path("tracker.log")).find("client certificates required"), std::string::npos);
  // Devices dial "localhost" (the certificate's name), not 127.0.0.1.
  std::vector<std::string> args = {
      "device",         "--tracker",     "localhost:" + std::to_string(port_),
      "--key",          "sim",           "--name",
      "dev0",           "--simulate-ms", "5",
      "--tls-ca",       path("ca.pem"),  "--tls-cert",
      path("box1.pem"), "--tls-key",     path("box1.key")};
  devices_.push_back(std::make_unique<Process>(kBinary, args, path("device0.log")));
  auto alice = tls_client("alice");
  ASSERT_TRUE(wait_for_devices(*alice, 1)) << read_text(path("device0.log"));
  auto st = alice->status();
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->devices(0).name(), "box1/dev0") << "named after its certificate's CN";

  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  auto r = alice->measure(task, space, valid_configs(space, 3), quick_timing(), "sim", "mtls");
  ASSERT_TRUE(r) << r.error().message;
  for (const auto& [client, device] : attribution(path("tracker.db"))) {
    EXPECT_EQ(client, "alice");
    EXPECT_EQ(device, "box1/dev0");
  }

  auto eve = tls_client("eve")->status();
  ASSERT_FALSE(eve) << "a certificate of another CA is refused in the handshake";
  auto anonymous = tls_client("")->status();
  ASSERT_FALSE(anonymous) << "no certificate, no call";
  auto device_as_client =
      tls_client("box1")->measure(task, space, valid_configs(space, 1), quick_timing(), "sim", "x");
  ASSERT_FALSE(device_as_client);
  EXPECT_NE(device_as_client.error().message.find("PERMISSION_DENIED"), std::string::npos)
      << device_as_client.error().message;

  // Certificates and tokens are two ways; a tracker takes one.
  write_secret(path("token"), "a-token-of-sixteen-chars\n");
  Process both(kBinary,
               {"tracker", "--port", "0", "--db", path("t2.db"), "--tls-cert", path("tracker.pem"),
                "--tls-key", path("tracker.key"), "--tls-client-ca", path("ca.pem"), "--token-file",
                path("token")},
               path("both.log"));
  auto code = both.wait_exit(30);
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(read_text(path("both.log")).find("give one of them"), std::string::npos)
      << read_text(path("both.log"));
}

TEST_F(FarmSecurity, FloodingClientMeetsItsQuotaWhileAnotherClientsJobGoesOn) {
  const std::string flood = "flood-client-token-0123", calm = "calm-client-token-4567",
                    box = "box1-device-token-89ab";
  write_secret(path("tokens"), "flood client " + flood + " jobs=1 batch=80\ncalm client " + calm +
                                   "\nbox1 device " + box + "\n");
  write_secret(path("box"), box + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0)
      << read_text(path("tracker.log"));
  start_device("sim", {"--simulate-ms", "30", "--token-file", path("box")});
  ASSERT_TRUE(wait_for_devices(*client(calm), 1)) << read_text(path("tracker.log"));

  const ss::Task big = dense_task(128), other = dense_task(256), small = dense_task(64);
  const auto big_space = *ss::make_config_space(big), other_space = *ss::make_config_space(other),
             small_space = *ss::make_config_space(small);
  const auto flood_configs = valid_configs(big_space, 60);
  ASSERT_EQ(flood_configs.size(), 60u);
  std::atomic<int> flood_done{0};
  Expected<std::vector<ss::MeasureResult>> first = internal_error("not run"),
                                           second = internal_error("not run");
  std::thread flooding([&] {
    first = client(flood)->measure(big, big_space, flood_configs, quick_timing(), "sim", "flood-1",
                                   0, [&](int, const ss::MeasureResult&, bool) { ++flood_done; });
  });
  if (!wait_until([&] { return flood_done > 0; })) {
    flooding.join();
    FAIL() << "the flood did not start: " << read_text(path("tracker.log"));
  }

  // A second job of the flooder's is over jobs=1: refused, and the client is told to wait.
  {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                       grpc::InsecureChannelCredentials());
    auto stub = v1::Tracker::NewStub(channel);
    grpc::ClientContext ctx;
    wire::add_token(ctx, flood);
    auto reader =
        stub->Measure(&ctx, raw_request(other, other_space, valid_configs(other_space, 2), "sim"));
    v1::MeasureJobUpdate u;
    EXPECT_FALSE(reader->Read(&u));
    const grpc::Status st = reader->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
    EXPECT_NE(st.error_message().find("quota jobs=1"), std::string::npos) << st.error_message();
    auto verdict = ctx.GetServerTrailingMetadata().find(wire::kQuotaVerdictKey);
    EXPECT_TRUE(verdict != ctx.GetServerTrailingMetadata().end() &&
                std::string(verdict->second.data(), verdict->second.size()) == "wait");
  }
  // A batch over batch=80 never passes: the client fails at once instead of waiting.
  auto huge = client(flood)->measure(other, other_space, valid_configs(other_space, 81),
                                     quick_timing(), "sim", "too-big");
  EXPECT_TRUE(!huge && huge.error().message.find("batch=80") != std::string::npos)
      << (huge ? std::string("accepted") : huge.error().message);
  // The client library waits for a quota that waiting satisfies: this one runs after flood-1.
  std::thread waiting([&] {
    second = client(flood)->measure(other, other_space, valid_configs(other_space, 4),
                                    quick_timing(), "sim", "flood-2");
  });

  // The calm client's job takes every other slot, not one in as many as the flooder has items.
  auto calm_result = client(calm)->measure(small, small_space, valid_configs(small_space, 6),
                                           quick_timing(), "sim", "calm");
  const int flood_when_calm_finished = flood_done;
  EXPECT_TRUE(calm_result) << calm_result.error().message;
  EXPECT_LT(flood_when_calm_finished, 30)
      << "the calm job waited behind the flood (fair share across clients failed)";
  auto st = client(calm)->status();
  EXPECT_TRUE(st);
  bool saw_flood = false;
  if (st)
    for (const auto& j : st->jobs())
      if (j.name() == "flood-1") saw_flood = j.client() == "flood";
  EXPECT_TRUE(saw_flood) << "status names each job's client";

  flooding.join();
  waiting.join();
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->size(), 4u);
  const std::string log = read_text(path("tracker.log"));
  EXPECT_NE(log.find("RESOURCE_EXHAUSTED: client 'flood' is at its quota jobs=1"),
            std::string::npos)
      << log;
}

TEST_F(FarmSecurity, ImpossibleTimingsAreRejectedAndALiarCanBeExcludedAfterTheFact) {
  ASSERT_GT(start_tracker(), 0) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  const auto configs = valid_configs(space, 3);
  const std::string x = std::to_string(configs[0].index), z = std::to_string(configs[2].index);
  // An honest server whose worker lies about one config: the tracker's bound catches it.
  Process& honest = start_device("x86", {"--fault-inject", "fast@" + x});
  auto c = client();
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("device0.log"));
  auto r = c->measure(task, space, {configs[0], configs[1]}, quick_timing(), "x86", "honest");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].error_no, ss::MeasureErrorNo::kUnknownError);
  EXPECT_NE((*r)[0].error_msg.find("rejected as impossible"), std::string::npos)
      << (*r)[0].error_msg;
  EXPECT_TRUE((*r)[1].ok()) << (*r)[1].error_msg;
  honest.kill9();
  ASSERT_TRUE(wait_for_devices(*c, 0));

  // A server that states an absurd peak gets its lie through; the operator excludes it later.
  start_device("x86", {"--fault-inject", "fast@" + z, "--peak-gflops", "1e7"});
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("device1.log"));
  r = c->measure(task, space, {configs[2]}, quick_timing(), "x86", "liar");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE((*r)[0].ok()) << "under its stated peak";

  auto best = run_tensortune("records best --db " + path("tracker.db") + " --json");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  EXPECT_NE(best.output.find("\"device\": \"dev1\""), std::string::npos) << best.output;
  EXPECT_NE(best.output.find("\"config_index\": " + z), std::string::npos) << best.output;
  best =
      run_tensortune("records best --db " + path("tracker.db") + " --json --exclude-device dev1");
  ASSERT_EQ(best.exit_code, 0) << best.output;
  EXPECT_EQ(best.output.find("\"device\": \"dev1\""), std::string::npos) << best.output;
  EXPECT_NE(best.output.find("\"config_index\": " + std::to_string(configs[1].index)),
            std::string::npos)
      << "the honest device's best stands: " << best.output;
  // The same through the tracker.
  v1::BestRecordsRequest req;
  req.add_exclude_devices("dev1");
  auto remote = c->best_records(req);
  ASSERT_TRUE(remote) << remote.error().message;
  ASSERT_EQ(remote->records_size(), 1);
  EXPECT_EQ(remote->records(0).device(), "dev0");
  EXPECT_EQ(remote->records(0).config_index(), configs[1].index);
}

TEST_F(FarmSecurity, AdminReloadEndsARevokedClientsRunningJobAndKeepsItsResults) {
  const std::string alice = "alice-client-token-0123", root = "root-admin-token-4567",
                    box = "box1-device-token-89ab";
  const std::string keep = "root admin " + root + "\nbox1 device " + box + "\n";
  write_secret(path("tokens"), "alice client " + alice + "\n" + keep);
  write_secret(path("alice"), alice + "\n");
  write_secret(path("root"), root + "\n");
  write_secret(path("box"), box + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens")}), 0)
      << read_text(path("tracker.log"));
  start_device("sim", {"--simulate-ms", "50", "--token-file", path("box")});
  ASSERT_TRUE(wait_for_devices(*client(root), 1)) << read_text(path("tracker.log"));
  const std::string tracker = "--tracker 127.0.0.1:" + std::to_string(port_);

  auto denied =
      run_tensortune("admin reload-credentials " + tracker + " --token-file " + path("alice"));
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_NE(denied.output.find("PERMISSION_DENIED"), std::string::npos) << denied.output;

  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  std::atomic<int> received{0};
  Expected<std::vector<ss::MeasureResult>> results = internal_error("not run");
  std::thread job([&] {
    results = client(alice)->measure(task, space, valid_configs(space, 40), quick_timing(), "sim",
                                     "doomed", 0,
                                     [&](int, const ss::MeasureResult&, bool) { ++received; });
  });
  if (!wait_until([&] { return received >= 3; })) {
    job.join();
    FAIL() << "the job did not start: " << read_text(path("tracker.log"));
  }
  write_secret(path("tokens"), keep);
  auto reload =
      run_tensortune("admin reload-credentials " + tracker + " --token-file " + path("root"));
  job.join();
  EXPECT_EQ(reload.exit_code, 0) << reload.output;
  EXPECT_NE(reload.output.find("2 credential(s), 1 session(s)"), std::string::npos)
      << reload.output;
  ASSERT_FALSE(results) << "the revoked client's job ends";
  EXPECT_NE(results.error().message.find("'alice' was revoked"), std::string::npos)
      << results.error().message;
  EXPECT_LT(received.load(), 40);
  // What was measured stays, attributed; nothing was recorded twice.
  // Items already on the device still finish and are archived: wait until it is idle.
  ASSERT_TRUE(wait_until([&] {
    auto st = client(root)->status();
    return st && st->devices_size() == 1 && st->devices(0).busy() == 0;
  })) << read_text(path("tracker.log"));
  const auto rows = attribution(path("tracker.db"));
  EXPECT_GE(rows.size(), 3u);
  EXPECT_LT(rows.size(), 40u) << "queued items were dropped";
  for (const auto& [client_name, device] : rows) {
    EXPECT_EQ(client_name, "alice");
    EXPECT_EQ(device, "box1/dev0");
  }
  for (const auto& [key, n] : archive_counts()) EXPECT_EQ(n, 1) << "config " << key.second;
  auto after = client(alice)->status();
  EXPECT_FALSE(after) << "the revoked token is refused";
}

}  // namespace
}  // namespace tensortune::testing
