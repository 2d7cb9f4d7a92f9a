#include "tracker/monitor_server.h"

#include <httplib.h>

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "support/connection_front.h"
#include "support/log.h"
#include "tracker/dashboard_page.h"
#include "tracker/metrics.h"
#include "tracker/server_core.h"
#include "tracker/status_json.h"

namespace tensortune::tracker {

namespace {

using json = nlohmann::json;

// The client's address: the front names it (plaintext); over TLS the front cannot, and the
// server sees the front's loopback connection.
std::string client_address(const httplib::Request& req) {
  const std::string forwarded = req.get_header_value("X-Forwarded-For");
  return forwarded.empty() ? req.remote_addr : forwarded;
}

// 32 random bytes as hex: a login session's id, which the cookie carries instead of the token.
std::string random_session_id() {
  std::random_device rd;  // getrandom(2) on Linux
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; ++i) {
    const unsigned v = rd() & 0xff;
    id += hex[v >> 4];
    id += hex[v & 15];
  }
  return id;
}

std::string cookie_value(const httplib::Request& req, const std::string& name) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = name + "=";
  for (size_t pos = 0; pos < cookies.size();) {
    while (pos < cookies.size() && (cookies[pos] == ' ' || cookies[pos] == ';')) ++pos;
    const size_t end = std::min(cookies.find(';', pos), cookies.size());
    if (cookies.compare(pos, key.size(), key) == 0)
      return cookies.substr(pos + key.size(), end - pos - key.size());
    pos = end;
  }
  return "";
}

// A number from a query parameter within [lo, hi], else `fallback`.
int int_param(const httplib::Request& req, const char* name, int fallback, int lo, int hi) {
  if (!req.has_param(name)) return fallback;
  try {
    const int v = std::stoi(req.get_param_value(name));
    return v < lo || v > hi ? fallback : v;
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

struct MonitorServer::Impl {
  ServerCore& core;
  std::unique_ptr<httplib::Server> http;
  std::thread thread;
  // The public port: slow clients wait there, not in the server's threads.
  std::unique_ptr<ConnectionFront> front;
  int port = 0;
  bool tls = false;

  struct Session {
    std::string name, token;
    std::chrono::steady_clock::time_point expires;
  };
  std::mutex sessions_mu;
  std::map<std::string, Session> sessions;

  explicit Impl(ServerCore& c) : core(c) {}

  enum class Access { kAllowed, kLogin, kOff };
  // Whether the request may read the dashboard: a client credential's token (header or a
  // login's cookie) on a tracker with tokens; anyone on one without (it serves this machine
  // only, or the network by --insecure); nobody on one that takes client certificates.
  Access access(const httplib::Request& req) {
    if (!core.options.tls_client_ca.empty()) return Access::kOff;
    if (!core.authenticated()) return Access::kAllowed;
    std::string token;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) {
      token = auth.substr(7);
    } else if (const std::string id = cookie_value(req, "tt_session"); !id.empty()) {
      std::lock_guard<std::mutex> lock(sessions_mu);
      auto it = sessions.find(id);
      if (it != sessions.end() && it->second.expires > std::chrono::steady_clock::now())
        token = it->second.token;
    }
    // Checked against the current credentials each time: a revoked token's session ends too.
    auto c = core.credential_for_token(token);
    return c && (c->roles & kRoleClient) ? Access::kAllowed : Access::kLogin;
  }

  bool refuse(const httplib::Request& req, httplib::Response& res, bool api) {
    const Access a = access(req);
    if (a == Access::kAllowed) return false;
    if (a == Access::kOff) {
      res.status = 403;
      res.set_content(
          "the dashboard needs a tracker with --tokens-file or --token-file credentials; this "
          "one authenticates by client certificates (only /metrics is served)\n",
          "text/plain");
    } else if (api) {
      res.status = 401;
      res.set_content(json{{"error", "a client token is required (Authorization: Bearer)"}}.dump(),
                      "application/json");
    } else {
      res.status = 401;
      res.set_content(kLoginPage, "text/html; charset=utf-8");
    }
    return true;
  }

  void routes() {
    httplib::Server& s = *http;
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      v1::StatusReply status = core.dispatcher->status();
      if (auto n = core.archive->result_count()) status.set_archived_results(*n);
      res.set_content(core.metrics->scrape(status), "text/plain; version=0.0.4; charset=utf-8");
    });
    s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
      if (refuse(req, res, false)) return;
      res.set_content(kDashboardPage, "text/html; charset=utf-8");
    });
    s.Post("/login", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string token = req.has_param("token") ? req.get_param_value("token") : "";
      auto c = core.credential_for_token(token);
      if (!c || !(c->roles & kRoleClient)) {
        logger("tracker")->warn("dashboard login from {}: wrong token", client_address(req));
        res.status = 401;
        res.set_content(kLoginPage, "text/html; charset=utf-8");
        return;
      }
      const std::string id = random_session_id();
      {
        std::lock_guard<std::mutex> lock(sessions_mu);
        const auto now = std::chrono::steady_clock::now();
        std::erase_if(sessions, [&](const auto& e) { return e.second.expires < now; });
        sessions[id] = {c->name, token, now + std::chrono::hours(12)};
      }
      logger("tracker")->info("dashboard login of '{}' from {}", c->name, client_address(req));
      res.set_header("Set-Cookie", "tt_session=" + id + "; Path=/; HttpOnly; SameSite=Strict" +
                                       (tls ? "; Secure" : ""));
      res.set_redirect("/", 303);
    });
    s.Get("/api/status", [this](const httplib::Request& req, httplib::Response& res) {
      if (refuse(req, res, true)) return;
      v1::StatusReply status = core.dispatcher->status();
      if (auto n = core.archive->result_count()) status.set_archived_results(*n);
      status.set_security_warning(core.security_warning);
      res.set_content(status_to_json(status).dump(), "application/json");
    });
    s.Get("/api/curves", [this](const httplib::Request& req, httplib::Response& res) {
      if (refuse(req, res, true)) return;
      auto curves = core.archive->recent_progress(int_param(req, "groups", 8, 1, 100));
      if (!curves) {
        res.status = 500;
        res.set_content(json{{"error", curves.error().message}}.dump(), "application/json");
        return;
      }
      json out = json::array();
      for (const auto& c : *curves)
        out.push_back({{"workload_key", c.workload_key},
                       {"template", c.template_name},
                       {"device_key", c.device_key},
                       {"results", c.results},
                       {"best", c.best}});
      res.set_content(out.dump(), "application/json");
    });
    s.Get("/api/best", [this](const httplib::Request& req, httplib::Response& res) {
      if (refuse(req, res, true)) return;
      records::RecordStore::BestQuery q;
      q.template_name = req.has_param("template") ? req.get_param_value("template") : "";
      q.shape = req.has_param("workload") ? req.get_param_value("workload") : "";
      q.device_key = req.has_param("key") ? req.get_param_value("key") : "";
      auto best = q.template_name.empty() && q.shape.empty() && q.device_key.empty()
                      ? core.archive->best_all()
                      : core.archive->query_best(q);
      if (!best) {
        res.status = best.error().code == ErrorCode::kInvalidArgument ? 400 : 500;
        res.set_content(json{{"error", best.error().message}}.dump(), "application/json");
        return;
      }
      const size_t limit = static_cast<size_t>(int_param(req, "limit", 200, 1, 5000));
      json out = json::array();
      for (const auto& b : *best) {
        if (out.size() >= limit) break;
        const auto& r = b.record;
        out.push_back(
            {{"workload_key", r.task.workload_key},
             {"template", r.task.template_name},
             {"device_key", r.result.device_key},
             {"gflops", r.result.ok() ? json(b.gflops) : json(nullptr)},
             {"mean_ms", r.result.ok() ? json(r.result.mean_cost() * 1e3) : json(nullptr)},
             {"measured", b.measured},
             {"threads", r.result.threads},
             {"device", r.device},
             {"client", r.client},
             {"entity", r.entity_json}});
      }
      res.set_content(out.dump(), "application/json");
    });
    s.Get("/api/errors", [this](const httplib::Request& req, httplib::Response& res) {
      if (refuse(req, res, true)) return;
      const std::string device = req.has_param("device") ? req.get_param_value("device") : "";
      json out = json::array();
      for (const auto& e : core.metrics->recent_errors(device, int_param(req, "limit", 50, 1, 500)))
        out.push_back({{"timestamp", e.timestamp},
                       {"device", e.device},
                       {"key", e.device_key},
                       {"error", e.error},
                       {"config_index", e.config_index},
                       {"message", e.message}});
      res.set_content(out.dump(), "application/json");
    });
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.status == 404) res.set_content("not found\n", "text/plain");
    });
    s.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr e) {
          std::string what = "unknown";
          try {
            if (e) std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            what = ex.what();
          } catch (...) {
          }
          logger("tracker")->error("dashboard request {} failed: {}", req.path, what);
          res.status = 500;
          res.set_content("internal error\n", "text/plain");
        });
  }
};

MonitorServer::MonitorServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MonitorServer::~MonitorServer() {
  if (!impl_) return;
  impl_->front.reset();
  impl_->http->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int MonitorServer::port() const { return impl_->port; }

Expected<std::unique_ptr<MonitorServer>> MonitorServer::start(ServerCore& core,
                                                              const std::string& host, int port) {
  auto impl = std::make_unique<Impl>(core);
  const TrackerOptions& o = core.options;
  if (!o.tls_cert.empty()) {
    impl->http = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
    impl->tls = true;
  } else {
    impl->http = std::make_unique<httplib::Server>();
  }
  if (!impl->http->is_valid())
    return invalid_argument("--metrics-port: cannot serve HTTPS with --tls-cert " + o.tls_cert +
                            " and --tls-key " + o.tls_key);
  impl->http->set_payload_max_length(64 * 1024);
  impl->http->set_read_timeout(10);
  // More threads than the front lets one address hold connections, so one slow client (or a
  // few) never holds them all.
  impl->http->new_task_queue = [] { return new httplib::ThreadPool(32); };
  impl->routes();
  const int backend = impl->http->bind_to_any_port("127.0.0.1");
  if (backend <= 0) return unavailable("--metrics-port: cannot listen on a loopback port");
  const std::string h =
      host.size() >= 2 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  auto front = ConnectionFront::start(h, port, backend, /*plaintext=*/!impl->tls);
  if (!front)
    return unavailable("--metrics-port: cannot listen on " + host + ":" + std::to_string(port) +
                       " (in use, or not an address of this machine): " + front.error().message);
  impl->front = std::move(*front);
  impl->port = impl->front->port();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->http->listen_after_bind(); });
  logger("tracker")->info("dashboard and metrics on {}://{}:{}/ (/metrics needs no token)",
                          impl->tls ? "https" : "http", host, impl->port);
  return std::unique_ptr<MonitorServer>(new MonitorServer(std::move(impl)));
}

}  // namespace tensortune::tracker
