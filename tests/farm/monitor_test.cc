// The tracker's HTTP port with real processes: Prometheus metrics that parse and
// count what the farm did, a dashboard and its API behind the token (header or login cookie),
// and requests that are malformed or unknown answered without harm.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "tests/farm/farm_test_fixture.h"

namespace tensortune::testing {
namespace {

using json = nlohmann::json;

// Prometheus text format, version 0.0.4: every sample line is `name{labels} value`, every
// family has # HELP and # TYPE. Returns "name{labels}" -> value; fails the test on a bad line.
std::map<std::string, double> parse_metrics(const std::string& text) {
  static const std::regex sample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? ([-+0-9.eE]+|NaN|[-+]Inf))");
  static const std::regex comment(R"(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::smatch m;
    if (line[0] == '#') {
      EXPECT_TRUE(std::regex_match(line, comment)) << line;
      continue;
    }
    if (!std::regex_match(line, m, sample)) {
      ADD_FAILURE() << "not a sample line: " << line;
      continue;
    }
    out[m[1].str() + m[2].str()] = std::stod(m[4].str());
  }
  return out;
}

TEST_F(Farm, MetricsParseAndCountWhatTheFarmDidAndTheDashboardNeedsTheToken) {
  const std::string alice = "alice-client-token-0123", box = "box1-device-token-4567";
  write_secret(path("tokens"), "alice client " + alice + "\nbox1 device " + box + "\n");
  write_secret(path("box"), box + "\n");
  ASSERT_GT(start_tracker(0, {"--tokens-file", path("tokens"), "--metrics-port", "0",
                              "--metrics-port-file", path("mport")}),
            0)
      << read_text(path("tracker.log"));
  const int mport = wait_for_port(path("mport"));
  ASSERT_GT(mport, 0);
  start_device("sim", {"--simulate-ms", "5", "--token-file", path("box")});
  auto c = client(alice);
  ASSERT_TRUE(wait_for_devices(*c, 1)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  ASSERT_TRUE(c->measure(task, space, valid_configs(space, 7), quick_timing(), "sim", "watched"));

  httplib::Client http("127.0.0.1", mport);
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics) << "no answer";
  EXPECT_EQ(metrics->status, 200) << "/metrics needs no token";
  const auto samples = parse_metrics(metrics->body);
  EXPECT_EQ(samples.at(R"(tensortune_results_total{error="NO_ERROR",key="sim"})"), 7);
  EXPECT_EQ(samples.at(R"(tensortune_dispatch_latency_seconds_count{key="sim"})"), 7);
  EXPECT_EQ(samples.at(R"(tensortune_archive_writes_total{outcome="ok"})"), 7);
  EXPECT_EQ(samples.at("tensortune_archived_results"), 7);
  EXPECT_EQ(samples.at(R"(tensortune_devices{key="sim",state="idle"})") +
                samples.at(R"(tensortune_devices{key="sim",state="busy"})"),
            1);
  EXPECT_EQ(samples.at(R"(tensortune_slots{key="sim",state="free"})"), 1);
  EXPECT_EQ(samples.at(R"(tensortune_jobs{state="finished"})"), 1);
  EXPECT_EQ(metrics->body.find(alice), std::string::npos) << "no token in the metrics";

  // The dashboard and its API: refused without the token, served with it.
  auto page = http.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 401);
  EXPECT_NE(page->body.find("action=\"/login\""), std::string::npos) << "the login form";
  auto api = http.Get("/api/status");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 401);
  auto status = http.Get("/api/status", {{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(status);
  ASSERT_EQ(status->status, 200) << status->body;
  const json s = json::parse(status->body);
  ASSERT_EQ(s["jobs"].size(), 1u);
  EXPECT_EQ(s["jobs"][0]["name"], "watched");
  EXPECT_EQ(s["jobs"][0]["client"], "alice");
  EXPECT_EQ(s["jobs"][0]["done"], 7);
  EXPECT_EQ(s["devices"][0]["name"], "box1/dev0");
  auto device_token = http.Get("/api/status", {{"Authorization", "Bearer " + box}});
  ASSERT_TRUE(device_token);
  EXPECT_EQ(device_token->status, 401) << "a device credential reads no dashboard";

  auto curves = http.Get("/api/curves", {{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(curves);
  ASSERT_EQ(curves->status, 200) << curves->body;
  const json cj = json::parse(curves->body);
  ASSERT_EQ(cj.size(), 1u);
  EXPECT_EQ(cj[0]["results"], 7);
  EXPECT_FALSE(cj[0]["best"].empty());
  auto best = http.Get("/api/best?workload=1x128", {{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(best);
  ASSERT_EQ(best->status, 200) << best->body;
  EXPECT_EQ(json::parse(best->body).size(), 1u);
  auto bad_best = http.Get("/api/best?workload=1x%27", {{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(bad_best);
  EXPECT_EQ(bad_best->status, 400) << "a malformed shape names the field: " << bad_best->body;

  // A browser signs in once and carries a cookie, never the token.
  auto wrong = http.Post("/login", "token=not-a-token", "application/x-www-form-urlencoded");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto login = http.Post("/login", "token=" + alice, "application/x-www-form-urlencoded");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  const std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_EQ(cookie.find(alice), std::string::npos)
      << "the cookie holds a session id, not the token";
  auto signed_in = http.Get("/", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(signed_in);
  EXPECT_EQ(signed_in->status, 200);
  EXPECT_NE(signed_in->body.find("Tuning curves"), std::string::npos);

  // Unknown and malformed requests: 404 or 400, and the tracker lives on.
  for (const char* p : {"/nope", "/api/", "/api/status/../../etc/passwd", "/%zz", "/metrics/x"}) {
    auto r = http.Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_TRUE(r->status == 404 || r->status == 400) << p << ": " << r->status;
  }
  auto odd = http.Get("/api/curves?groups=abc", {{"Authorization", "Bearer " + alice}});
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->status, 200);
  EXPECT_TRUE(c->status()) << "the tracker still serves";
}

// Headless Chromium (Debian's) loads the dashboard of a tracker with two device servers while a
// job runs: it signs in with a token in the address's fragment, the job's progress advances
// between two loads, a tuning curve is drawn; a screenshot lands in the test output.
TEST_F(Farm, DashboardInARealBrowserShowsAJobAdvancingAndItsCurve) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) GTEST_SKIP() << "no " << chromium << " (scripts/deps.sh --test)";
  const std::string alice = "alice-client-token-0123", box = "box1-device-token-4567";
  write_secret(path("tokens"), "alice client " + alice + "\nbox1 device " + box + "\n");
  write_secret(path("box"), box + "\n");
  // Long heartbeat and lease limits: the devices are stopped (SIGSTOP) while the browser loads.
  ASSERT_GT(start_tracker(
                0, {"--tokens-file", path("tokens"), "--metrics-port", "0", "--metrics-port-file",
                    path("mport"), "--heartbeat-timeout", "600", "--lease-margin", "600"}),
            0)
      << read_text(path("tracker.log"));
  const int mport = wait_for_port(path("mport"));
  ASSERT_GT(mport, 0);
  // 120 items of 200 ms on two devices. The devices are frozen while Chromium loads the page, so
  // the progress it shows cannot depend on how long Chromium takes to start (on a loaded CI
  // machine a load once took longer than the whole job).
  Process& dev1 = start_device("sim", {"--simulate-ms", "200", "--token-file", path("box")});
  Process& dev2 = start_device("sim", {"--simulate-ms", "200", "--token-file", path("box")});
  auto freeze = [&](bool stop) {
    dev1.signal(stop ? SIGSTOP : SIGCONT);
    dev2.signal(stop ? SIGSTOP : SIGCONT);
  };
  ASSERT_TRUE(wait_for_devices(*client(alice), 2)) << read_text(path("tracker.log"));
  const ss::Task task = dense_task(128);
  const auto space = *ss::make_config_space(task);
  std::atomic<int> done{0};
  std::atomic<bool> job_over{false};
  Expected<std::vector<ss::MeasureResult>> results = internal_error("not run");
  std::thread job([&] {
    results = client(alice)->measure(task, space, valid_configs(space, 120), quick_timing(), "sim",
                                     "browser-watched", 0,
                                     [&](int, const ss::MeasureResult&, bool) { ++done; });
    job_over = true;
  });
  // What the page shows after its scripts ran: the DOM, or a screenshot.
  auto browse = [&](const std::vector<std::string>& extra) {
    std::string cmd = chromium +
                      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                      "--disable-background-networking --disable-component-update --disable-sync "
                      "--user-data-dir=" +
                      path("chromium-profile") + " --virtual-time-budget=4000";
    for (const auto& e : extra) cmd += " " + e;
    cmd += " 'http://127.0.0.1:" + std::to_string(mport) + "/#token=" + alice + "' 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
  };
  auto job_done = [](const std::string& dom) {
    static const std::regex row(R"re(data-job="browser-watched" data-done="([0-9]+)")re");
    std::smatch m;
    return std::regex_search(dom, m, row) ? std::stoi(m[1].str()) : -1;
  };
  // A job that fails ends the waits (its error is reported below), so it cannot hang the suite.
  EXPECT_TRUE(wait_until([&] { return done >= 5 || job_over; }, 120)) << "5 results";
  freeze(true);
  const std::string first = browse({"--dump-dom"});
  const int first_done = job_done(first);
  freeze(false);
  // The client counts a result after the tracker has: once it saw 10 more, the tracker did too.
  EXPECT_TRUE(wait_until([&] { return done >= first_done + 10 || done >= 120 || job_over; }, 120))
      << "10 more results";
  freeze(true);
  const std::string second = browse({"--dump-dom"});
  const int second_done = job_done(second);
  freeze(false);
  const fs::path out_dir = fs::path(TENSORTUNE_BINARY).parent_path().parent_path() / "test-output";
  fs::create_directories(out_dir);
  browse({"--window-size=1400,1100", "--screenshot=" + (out_dir / "dashboard.png").string()});
  job.join();
  ASSERT_TRUE(results) << results.error().message;
  EXPECT_GE(first_done, 1) << "the job's row after sign-in: " << first.substr(0, 2000);
  EXPECT_GT(second_done, first_done) << "the job's progress advances";
  EXPECT_NE(second.find("class=\"curve\""), std::string::npos) << "a tuning curve is drawn";
  EXPECT_NE(second.find("box1/dev1"), std::string::npos) << "both devices are listed";
  EXPECT_TRUE(fs::exists(out_dir / "dashboard.png")) << "the screenshot";
}

TEST_F(Farm, DashboardOnTheNetworkWithoutATokenNeedsInsecure) {
  Process open(kBinary,
               {"tracker", "--port", "0", "--db", path("t.db"), "--metrics-port", "0",
                "--metrics-host", "0.0.0.0"},
               path("open.log"));
  auto code = open.wait_exit(30);
  ASSERT_TRUE(code.has_value()) << read_text(path("open.log"));
  EXPECT_EQ(*code, 1);
  EXPECT_NE(read_text(path("open.log")).find("refusing to serve the dashboard on 0.0.0.0"),
            std::string::npos)
      << read_text(path("open.log"));
}

// A second tracker asking for a metrics port in use is refused, as for its gRPC port (it used
// to start, and both answered part of the scrapes).
TEST_F(Farm, AMetricsPortInUseIsRefused) {
  ASSERT_GT(start_tracker(0, {"--metrics-port", "0", "--metrics-port-file", path("mport")}), 0);
  const int port = wait_for_port(path("mport"));
  ASSERT_GT(port, 0);
  const auto [code, log] = run_to_exit(
      {"tracker", "--port", "0", "--db", path("t2.db"), "--metrics-port", std::to_string(port)},
      "second.log");
  ASSERT_TRUE(code.has_value()) << "it started: " << log;
  EXPECT_NE(*code, 0);
  EXPECT_NE(log.find("--metrics-port: cannot listen"), std::string::npos) << log;
}

// A slow client: a TCP connection from `source` (an address of the loopback network) that has
// sent a request line and then a header line now and then, never the end of its headers.
struct SlowClient {
  int fd = -1;
  SlowClient(const std::string& source, int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in from{}, to{};
    from.sin_family = to.sin_family = AF_INET;
    ::inet_pton(AF_INET, source.c_str(), &from.sin_addr);
    ::inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    to.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    send("GET /metrics HTTP/1.1\r\nHost: tracker\r\n");
  }
  ~SlowClient() {
    if (fd >= 0) ::close(fd);
  }
  void send(const std::string& text) const {
    [[maybe_unused]] ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  }
  // Whether the tracker has answered or closed the connection (without waiting).
  bool answered_or_closed() const {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  std::string answer() const {
    char buffer[512];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
  }
};

// Slow clients on the metrics port (found by a chaos run: eight sockets sending a header line
// every 3 s made every scrape time out): one address holds a few connections at most, the
// rest are refused at once; the ones it holds wait outside the server's threads and are
// closed at the header deadline; scrapes from elsewhere are answered all along.
TEST_F(Farm, SlowClientsOnTheMetricsPortNeitherStopScrapesNorStayForever) {
  ASSERT_GT(start_tracker(0, {"--metrics-port", "0", "--metrics-port-file", path("mport")}), 0);
  const int port = wait_for_port(path("mport"));
  ASSERT_GT(port, 0);
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<SlowClient>("127.0.0.2", port));
    ASSERT_GE(slow.back()->fd, 0) << "cannot connect from 127.0.0.2";
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    for (int line = 0; !done; ++line) {
      for (const auto& c : slow) c->send("X-Slow-" + std::to_string(line) + ": 1\r\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  // Refused at once beyond the address's share (429), while the scrapes go on.
  EXPECT_TRUE(wait_until([&] {
    int refused = 0;
    for (const auto& c : slow) refused += c->answered_or_closed();
    return refused >= 30;
  })) << "most of 40 connections from one address were not refused";
  httplib::Client scraper("127.0.0.1", port);
  scraper.set_read_timeout(20, 0);
  for (int i = 0; i < 5; ++i) {
    auto r = scraper.Get("/metrics");
    ASSERT_TRUE(r) << "scrape " << i << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("tensortune_"), std::string::npos);
  }
  // The ones held wait for the end of their headers until the deadline, then are told 408.
  EXPECT_TRUE(wait_until([&] {
    for (const auto& c : slow)
      if (!c->answered_or_closed()) return false;
    return true;
  })) << "slow connections outlived the header deadline";
  int refused = 0, timed_out = 0;
  for (const auto& c : slow) {
    const std::string a = c->answer();
    refused += a.find(" 429 ") != std::string::npos;
    timed_out += a.find(" 408 ") != std::string::npos;
  }
  EXPECT_EQ(refused + timed_out, 40);
  EXPECT_GT(timed_out, 0);
  done = true;
  trickle.join();
}

}  // namespace
}  // namespace tensortune::testing
