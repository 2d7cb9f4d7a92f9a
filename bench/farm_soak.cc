// Soak and chaos: a tracker, device servers and concurrent tuning clients on
// loopback for minutes while processes die:
//   - a random device server is killed (SIGKILL) and restarted every --device-chaos seconds;
//   - device servers of key x86 measure for real, and their workers crash on some configs;
//   - a random tuning client (a `tensortune tune-op` process) is killed and started again
//     (it resumes from its DB and resubmits) every --client-chaos seconds;
//   - the tracker is killed and restarted on the same port and archive every --tracker-chaos
//     seconds (0: never, to watch its memory).
// Then it reports: results lost (in a client's DB, not in the archive), results doubled (a
// config measured twice on one key), the archive's integrity_check, p50/p99 dispatch latency
// (the tracker's histogram), and the tracker's RSS and open files over time.
//   build/bench/farm_soak --minutes 10            # the issue's run
//   build/bench/farm_soak --minutes 0.5 --check   # the CI variant: exits 1 on a lost or
//                                                 # doubled result or a damaged archive
#include <httplib.h>
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "tests/farm/farm_fixture.h"

namespace tt = tensortune;
namespace fs = std::filesystem;
using tt::testing::Process;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

long status_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return 0;
}

long open_files(pid_t pid) {
  std::error_code ec;
  long n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != fs::directory_iterator(); ++it)
    ++n;
  return n;
}

// Rows of a query over a SQLite file, as text.
std::vector<std::vector<std::string>> query(const std::string& db, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return rows;
  }
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

struct Options {
  double minutes = 10;
  int sim_devices = 6, real_devices = 2, clients = 4;
  double device_chaos_s = 10, client_chaos_s = 15, tracker_chaos_s = 60;
  int finished_job_ttl_s = 0;     ///< 0: the tracker's default
  int sqlite_heap_limit_mib = 0;  ///< 0: the tracker's default (no cap)
  bool check = false;
};

class Soak {
 public:
  Soak(std::string binary, Options o) : bin_(std::move(binary)), o_(o) {
    dir_ = fs::temp_directory_path() / ("tt_soak_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Soak() {
    clients_.clear();
    devices_.clear();
    tracker_.reset();
    if (!keep_) fs::remove_all(dir_);
  }

  int run() {
    start_tracker(0);
    for (int i = 0; i < o_.sim_devices + o_.real_devices; ++i) devices_.push_back(start_device(i));
    for (int i = 0; i < o_.clients; ++i) clients_.push_back(start_client(i));
    const auto start = Clock::now();
    auto next_device = start, next_client = start, next_tracker = start, next_sample = start;
    auto bump = [](Clock::time_point& t, double s) {
      t += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    };
    bump(next_device, o_.device_chaos_s);
    bump(next_client, o_.client_chaos_s);
    bump(next_tracker, o_.tracker_chaos_s > 0 ? o_.tracker_chaos_s : 1e9);
    // RSS splits into anonymous memory (the heap: what a leak grows) and file-backed pages (the
    // archive's memory map and libraries, which grow with the DB and the kernel can drop).
    // "in use" and "free" are glibc's count of the heap (mallinfo2): a leak grows the first,
    // fragmentation the second.
    std::printf("%8s %6s %10s %10s %10s %10s %10s %8s %8s %10s %s\n", "time s", "pid", "RSS MiB",
                "anon MiB", "in use MiB", "free MiB", "SQLite MiB", "files", "devices", "archived",
                "event");
    std::string event = "start";
    while (since(start) < o_.minutes * 60) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto now = Clock::now();
      for (size_t i = 0; i < clients_.size(); ++i)  // a finished client starts its next task
        if (!clients_[i]->alive()) clients_[i] = start_client(static_cast<int>(i));
      if (now >= next_device) {
        const size_t i = rng_() % devices_.size();
        devices_[i]->kill9();
        std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng_() % 1500));
        devices_[i] = start_device(static_cast<int>(i));
        event += " device" + std::to_string(i) + "-killed";
        bump(next_device, o_.device_chaos_s);
      }
      if (now >= next_client) {
        const size_t i = rng_() % clients_.size();
        clients_[i]->kill9();
        clients_[i] = start_client(static_cast<int>(i));
        event += " client" + std::to_string(i) + "-killed";
        bump(next_client, o_.client_chaos_s);
      }
      if (now >= next_tracker) {
        scrape();  // its histogram dies with it
        tracker_->kill9();
        ++tracker_kills_;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        start_tracker(port_);
        event += " tracker-killed";
        bump(next_tracker, o_.tracker_chaos_s);
      }
      if (now >= next_sample) {
        scrape();
        const pid_t pid = tracker_->pid();
        const long rss = status_kib(pid, "VmRSS");
        rss_.push_back(rss);
        anon_.push_back(status_kib(pid, "RssAnon"));
        sqlite_.push_back(static_cast<long>(last_sqlite_kib_));
        in_use_.push_back(static_cast<long>(last_in_use_kib_));
        files_.push_back(open_files(pid));
        std::printf("%8.0f %6d %10.1f %10.1f %10.1f %10.1f %10.1f %8ld %8d %10s %s\n", since(start),
                    pid, rss / 1024.0, anon_.back() / 1024.0, last_in_use_kib_ / 1024.0,
                    last_free_kib_ / 1024.0, last_sqlite_kib_ / 1024.0, files_.back(),
                    last_devices_, archived().c_str(), event.c_str());
        std::fflush(stdout);
        event.clear();
        bump(next_sample, 10);
      }
    }
    scrape();
    clients_.clear();  // killed mid-flight: what they hold must be in the archive
    std::this_thread::sleep_for(std::chrono::seconds(1));
    tracker_.reset();
    devices_.clear();
    return report();
  }

 private:
  std::string db() const { return (dir_ / "tracker.db").string(); }
  std::string archived() const {
    auto r = query(db(), "SELECT count(*) FROM results");
    return r.empty() ? "?" : r[0][0];
  }

  void start_tracker(int port) {
    fs::remove(dir_ / "port");
    fs::remove(dir_ / "mport");
    std::vector<std::string> args{"--log-level",
                                  "warn",
                                  "tracker",
                                  "--host",
                                  "127.0.0.1",
                                  "--port",
                                  std::to_string(port),
                                  "--db",
                                  db(),
                                  "--port-file",
                                  (dir_ / "port").string(),
                                  "--metrics-port",
                                  "0",
                                  "--metrics-port-file",
                                  (dir_ / "mport").string(),
                                  "--heartbeat-timeout",
                                  "3"};
    if (o_.sqlite_heap_limit_mib > 0) {
      args.push_back("--sqlite-heap-limit-mib");
      args.push_back(std::to_string(o_.sqlite_heap_limit_mib));
    }
    if (o_.finished_job_ttl_s > 0) {
      args.push_back("--finished-job-ttl");
      args.push_back(std::to_string(o_.finished_job_ttl_s));
    }
    tracker_ = std::make_unique<Process>(bin_, args, (dir_ / "tracker.log").string());
    port_ = tt::testing::wait_for_port((dir_ / "port").string(), 60);
    mport_ = tt::testing::wait_for_port((dir_ / "mport").string(), 60);
  }

  std::unique_ptr<Process> start_device(int i) {
    const bool real = i >= o_.sim_devices;
    std::vector<std::string> args = {"--log-level",
                                     "warn",
                                     "device",
                                     "--tracker",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "--name",
                                     "dev" + std::to_string(i),
                                     "--key",
                                     real ? "x86" : "sim"};
    if (real) {
      // Workers crash on every 13th config index of the small dense spaces.
      std::string faults;
      for (int k = 5; k < 2000; k += 13)
        faults += (faults.empty() ? "" : ",") + ("crash@" + std::to_string(k));
      args.insert(args.end(), {"--fault-inject", faults, "--worker-grace", "5"});
    } else {
      args.insert(args.end(), {"--simulate-ms", "25"});
    }
    return std::make_unique<Process>(bin_, args,
                                     (dir_ / ("device" + std::to_string(i) + ".log")).string());
  }

  // Client i tunes its own workloads (none shared with another client), one after another;
  // a restarted client resumes from its DB.
  std::unique_ptr<Process> start_client(int i) {
    const int round = rounds_[i]++ / 3;  // about three restarts per workload before moving on
    const bool real = i == 0 && o_.real_devices > 0;
    std::vector<std::string> args = {"--log-level",
                                     "warn",
                                     "tune-op",
                                     "--tuner",
                                     "random",
                                     "--trials",
                                     "100000",
                                     "--tracker",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "--key",
                                     real ? "x86" : "sim",
                                     "--db",
                                     (dir_ / ("client" + std::to_string(i) + ".db")).string(),
                                     "--number",
                                     "1",
                                     "--repeat",
                                     "1",
                                     "--min-repeat-ms",
                                     "0"};
    if (real) {
      const int n = 32 + 16 * (round % 8);
      args.insert(args.end(), {"--op", "dense", "--data", "1x" + std::to_string(n), "--weight",
                               std::to_string(n) + "x" + std::to_string(n)});
    } else {
      const int c = 16 * (i + 1), h = 8 + 2 * (round % 16);
      args.insert(
          args.end(),
          {"--op", "conv2d_NCHWc", "--data",
           "1x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(h), "--kernel",
           std::to_string(c) + "x" + std::to_string(c) + "x3x3", "--pads", "1"});
    }
    return std::make_unique<Process>(bin_, args,
                                     (dir_ / ("client" + std::to_string(i) + ".log")).string());
  }

  // Adds the tracker's dispatch-latency histogram to the incarnation's latest (cumulative
  // buckets; a restart starts them again).
  void scrape() {
    httplib::Client http("127.0.0.1", mport_);
    http.set_read_timeout(5);
    auto r = http.Get("/metrics");
    if (!r || r->status != 200) return;
    static const std::regex bucket(
        R"re(tensortune_dispatch_latency_seconds_bucket\{key="[^"]+",le="([^"]+)"\} ([0-9.e+]+))re");
    static const std::regex devices(R"re(tensortune_devices\{[^}]*\} ([0-9.]+))re");
    static const std::regex sqlite_heap(R"re(tensortune_sqlite_heap_bytes ([0-9.e+]+))re");
    std::smatch sm;
    static const std::regex in_use(R"re(tensortune_malloc_in_use_bytes ([0-9.e+]+))re");
    static const std::regex free_bytes(R"re(tensortune_malloc_free_bytes ([0-9.e+]+))re");
    if (std::regex_search(r->body, sm, sqlite_heap)) last_sqlite_kib_ = std::stod(sm[1]) / 1024;
    if (std::regex_search(r->body, sm, in_use)) last_in_use_kib_ = std::stod(sm[1]) / 1024;
    if (std::regex_search(r->body, sm, free_bytes)) last_free_kib_ = std::stod(sm[1]) / 1024;
    std::map<double, double> now;
    for (std::sregex_iterator it(r->body.begin(), r->body.end(), bucket), end; it != end; ++it) {
      const std::string le = (*it)[1];
      now[le == "+Inf" ? 1e300 : std::stod(le)] += std::stod((*it)[2]);
    }
    int n = 0;
    for (std::sregex_iterator it(r->body.begin(), r->body.end(), devices), end; it != end; ++it)
      n += static_cast<int>(std::stod((*it)[1]));
    last_devices_ = n;
    if (tracker_->pid() != incarnation_pid_) {
      for (auto& [le, c] : latest_) total_[le] += c;
      latest_.clear();
      incarnation_pid_ = tracker_->pid();
    }
    latest_ = now;
  }

  double latency_percentile(double p) const {
    std::map<double, double> all = total_;
    for (const auto& [le, c] : latest_) all[le] += c;
    if (all.empty() || all.rbegin()->second == 0) return 0;
    const double target = p * all.rbegin()->second;
    for (const auto& [le, c] : all)
      if (c >= target) return le;
    return all.rbegin()->first;
  }

  int report() {
    // Lost: a result a client recorded (the tracker sent it) that the archive lacks.
    int lost = 0, client_results = 0;
    for (int i = 0; i < o_.clients; ++i) {
      const std::string cdb = (dir_ / ("client" + std::to_string(i) + ".db")).string();
      auto rows = query(cdb,
                        "SELECT t.workload_key, c.config_index FROM results r JOIN configs c ON "
                        "c.id = r.config_id JOIN tasks t ON t.id = c.task_id");
      client_results += static_cast<int>(rows.size());
      std::set<std::pair<std::string, std::string>> archive;
      for (auto& r : query(db(),
                           "SELECT t.workload_key, c.config_index FROM results r JOIN configs c "
                           "ON c.id = r.config_id JOIN tasks t ON t.id = c.task_id"))
        archive.insert({r[0], r[1]});
      for (auto& r : rows) lost += archive.count({r[0], r[1]}) == 0;
    }
    auto doubled = query(db(),
                         "SELECT count(*) FROM (SELECT config_id, device_key FROM results GROUP BY "
                         "config_id, device_key HAVING count(*) > 1)");
    auto integrity = query(db(), "PRAGMA integrity_check");
    const std::string check = integrity.empty() ? "unreadable" : integrity[0][0];
    const int doubles = doubled.empty() ? -1 : std::stoi(doubled[0][0]);
    const size_t warm = std::min<size_t>(rss_.size(), 6);  // the first minute is warm-up
    const long rss_warm = rss_.empty() ? 0 : *std::max_element(rss_.begin(), rss_.begin() + warm);
    const long rss_max = rss_.empty() ? 0 : *std::max_element(rss_.begin(), rss_.end());
    const long anon_warm =
        anon_.empty() ? 0 : *std::max_element(anon_.begin(), anon_.begin() + warm);
    const long anon_max = anon_.empty() ? 0 : *std::max_element(anon_.begin(), anon_.end());
    const long files_max = files_.empty() ? 0 : *std::max_element(files_.begin(), files_.end());
    std::printf(
        "\nSoak: %.1f min, %d device servers (%d real with crashing workers), %d clients, "
        "%d tracker kills\n",
        o_.minutes, o_.sim_devices + o_.real_devices, o_.real_devices, o_.clients, tracker_kills_);
    std::printf("| measure | value | goal |\n|---|---:|---|\n");
    std::printf("| results archived | %s | |\n", archived().c_str());
    std::printf("| results the clients recorded | %d | |\n", client_results);
    std::printf("| lost (in a client's DB, not in the archive) | %d | 0 |\n", lost);
    std::printf("| doubled (one config measured twice on one key) | %d | 0 |\n", doubles);
    std::printf("| archive integrity_check | %s | ok |\n", check.c_str());
    std::printf("| dispatch latency p50 / p99 (histogram bucket) | <= %.3g s / <= %.3g s | |\n",
                latency_percentile(0.5), latency_percentile(0.99));
    std::printf("| tracker RSS after warm-up / max | %.1f / %.1f MiB | flat |\n", rss_warm / 1024.0,
                rss_max / 1024.0);
    std::printf(
        "| tracker anonymous memory (heap) after warm-up / max | %.1f / %.1f MiB | flat |\n",
        anon_warm / 1024.0, anon_max / 1024.0);
    // The heap less SQLite's allocations: SQLite's page caches fill up to their bound (64 MiB
    // per archive connection) as the archive grows; everything else should stay flat.
    std::vector<long> other;
    for (size_t i = 0; i < anon_.size() && i < sqlite_.size(); ++i)
      other.push_back(anon_[i] - sqlite_[i]);
    const long other_warm =
        other.empty()
            ? 0
            : *std::max_element(other.begin(), other.begin() + std::min(warm, other.size()));
    const long other_max = other.empty() ? 0 : *std::max_element(other.begin(), other.end());
    const long sqlite_max = sqlite_.empty() ? 0 : *std::max_element(sqlite_.begin(), sqlite_.end());
    std::printf("| SQLite's heap in the tracker, max | %.1f MiB | bounded by its caches |\n",
                sqlite_max / 1024.0);
    std::printf("| heap less SQLite's, after warm-up / max | %.1f / %.1f MiB | flat |\n",
                other_warm / 1024.0, other_max / 1024.0);
    // What the program holds, by glibc's count, less SQLite's part: the leak detector.
    std::vector<long> held;
    for (size_t i = 0; i < in_use_.size() && i < sqlite_.size(); ++i)
      held.push_back(in_use_[i] - sqlite_[i]);
    const long held_warm =
        held.empty() ? 0
                     : *std::max_element(held.begin(), held.begin() + std::min(warm, held.size()));
    const long held_max = held.empty() ? 0 : *std::max_element(held.begin(), held.end());
    std::printf(
        "| heap in use (mallinfo2) less SQLite's, after warm-up / max | %.1f / %.1f MiB | "
        "flat |\n",
        held_warm / 1024.0, held_max / 1024.0);
    std::printf("| tracker open files max | %ld | flat |\n", files_max);
    const bool ok = lost == 0 && doubles == 0 && check == "ok";
    if (!ok) {
      keep_ = true;
      std::printf("logs kept in %s\n", dir_.c_str());
    }
    return o_.check && !ok ? 1 : 0;
  }

  std::string bin_;
  Options o_;
  fs::path dir_;
  bool keep_ = false;
  std::mt19937 rng_{12345};
  std::unique_ptr<Process> tracker_;
  std::vector<std::unique_ptr<Process>> devices_, clients_;
  std::map<int, int> rounds_;
  int port_ = 0, mport_ = 0, tracker_kills_ = 0, last_devices_ = 0;
  pid_t incarnation_pid_ = -1;
  std::map<double, double> total_, latest_;
  std::vector<long> rss_, anon_, files_, sqlite_;   ///< KiB, KiB, count, KiB per sample
  std::vector<long> in_use_;                        ///< KiB per sample: glibc's heap in use
  double last_in_use_kib_ = 0, last_free_kib_ = 0;  ///< mallinfo2 at the last scrape
  double last_sqlite_kib_ = 0;  ///< SQLite's heap in the tracker at the last scrape
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Soak and chaos test of a farm on loopback");
  Options o;
  std::string binary = TENSORTUNE_BINARY;
  app.add_option("--minutes", o.minutes, "how long")->capture_default_str();
  app.add_option("--sim-devices", o.sim_devices, "simulated device servers")->capture_default_str();
  app.add_option("--real-devices", o.real_devices,
                 "device servers that build and time for real (their workers crash on some "
                 "configs)")
      ->capture_default_str();
  app.add_option("--clients", o.clients, "concurrent tuning clients")->capture_default_str();
  app.add_option("--device-chaos", o.device_chaos_s, "seconds between device kills")
      ->capture_default_str();
  app.add_option("--client-chaos", o.client_chaos_s, "seconds between client kills")
      ->capture_default_str();
  app.add_option("--tracker-chaos", o.tracker_chaos_s,
                 "seconds between tracker kills (0: never, to watch its memory)")
      ->capture_default_str();
  app.add_option("--finished-job-ttl", o.finished_job_ttl_s,
                 "the tracker's --finished-job-ttl in seconds (0: its default); shorter than the "
                 "run, so that finished jobs leave within it")
      ->capture_default_str();
  app.add_option("--sqlite-heap-limit-mib", o.sqlite_heap_limit_mib,
                 "the tracker's --sqlite-heap-limit-mib (0: none), so that SQLite's caches reach "
                 "their cap within the run")
      ->capture_default_str();
  app.add_flag("--check", o.check,
               "exit 1 when a result is lost or doubled or the archive damaged");
  app.add_option("--binary", binary, "the tensortune binary")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return Soak(binary, o).run();
}
