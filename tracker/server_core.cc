#include "tracker/server_core.h"

#include <chrono>
#include <regex>

#include "support/log.h"

namespace tensortune::tracker {

int ServerCore::set_credentials(std::vector<Credential> credentials) {
  std::vector<std::function<void()>> to_end;
  {
    std::lock_guard<std::mutex> lock(credentials_mu_);
    credentials_ = std::move(credentials);
    std::map<std::string, Quota> overrides;
    for (const Credential& c : credentials_) overrides[c.name] = c.quota;
    quotas.set_overrides(std::move(overrides));
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const Credential* c = find_credential(credentials_, it->second.token);
      if (it->second.token.empty() ||
          (c && c->name == it->second.name && (c->roles & it->second.roles))) {
        ++it;
        continue;
      }
      logger("tracker")->warn("credential '{}' revoked: its session ends", it->second.name);
      to_end.push_back(std::move(it->second.end));
      it = sessions_.erase(it);
    }
  }
  for (auto& end : to_end) end();  // outside the lock: ending a device takes the dispatcher's
  return static_cast<int>(to_end.size());
}

Expected<int> ServerCore::reload_credentials(std::vector<Credential> named) {
  if (!options.token.empty()) {
    if (find_credential(named, options.token))
      return invalid_argument("the shared --token-file token is also a named credential's");
    named.push_back({"shared", kRoleDevice | kRoleClient | kRoleBuilder, options.token});
  }
  if (named.empty() && options.tls_client_ca.empty() && !is_loopback_host(options.host) &&
      !options.insecure)
    return Error{ErrorCode::kFailedPrecondition,
                 "the new credentials are empty: the tracker would be open to the network"};
  return set_credentials(std::move(named));
}

Expected<int> ServerCore::reload_tokens_file() {
  if (options.tokens_file.empty())
    return Error{ErrorCode::kFailedPrecondition,
                 "the tracker was started without --tokens-file: nothing to reload"};
  TT_ASSIGN_OR_RETURN(auto named, load_tokens_file(options.tokens_file));
  return reload_credentials(std::move(named));
}

std::optional<Credential> ServerCore::credential_for_token(const std::string& token) const {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  if (token.empty()) return std::nullopt;
  const Credential* c = find_credential(credentials_, token);
  return c ? std::optional<Credential>(*c) : std::nullopt;
}

int ServerCore::credential_count() const {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  return static_cast<int>(credentials_.size());
}

bool ServerCore::authenticated() const {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  return !credentials_.empty() || !options.tls_client_ca.empty();
}

std::string Caller::account() const {
  if (!name.empty()) return name;
  // "ipv4:10.0.0.5:41234" -> "10.0.0.5", "ipv6:[::1]:41234" -> "[::1]"
  std::string host = peer.substr(peer.find(':') + 1);
  host = host.substr(0, host.rfind(':'));
  return "anonymous@" + host;
}

uint64_t ServerCore::add_session(Session session) {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  const uint64_t id = next_session_++;
  sessions_.emplace(id, std::move(session));
  return id;
}

void ServerCore::remove_session(uint64_t id) {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  sessions_.erase(id);
}

namespace {

/// "device or builder": any one of the roles will do.
std::string role_choices(uint8_t roles) {
  std::string out = role_names(roles);
  for (size_t plus = out.find('+'); plus != std::string::npos; plus = out.find('+'))
    out.replace(plus, 1, " or ");
  return out;
}

grpc::Status permission_denied(const char* rpc, uint8_t roles, const Credential& c,
                               const std::string& peer) {
  logger("tracker")->warn("{} from {}: credential '{}' ({}) may not: PERMISSION_DENIED", rpc, peer,
                          c.name, role_names(c.roles));
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      std::string(rpc) + " needs a " + role_choices(roles) + " credential; '" +
                          c.name + "' is " + role_names(c.roles));
}

}  // namespace

grpc::Status ServerCore::authorize(const grpc::ServerContextBase& ctx, const char* rpc,
                                   uint8_t roles, Caller* caller) const {
  if (caller) caller->peer = ctx.peer();
  if (!options.tls_client_ca.empty()) {
    // gRPC verified the certificate against the CA during the handshake; its subject names
    // the caller.
    const auto auth = ctx.auth_context();
    const auto subject =
        auth ? auth->FindPropertyValues("x509_subject") : std::vector<grpc::string_ref>{};
    if (subject.empty()) {
      logger("tracker")->warn("{} from {}: no client certificate: UNAUTHENTICATED", rpc,
                              ctx.peer());
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "no client certificate: pass --tls-cert and --tls-key");
    }
    auto c = credential_from_subject(std::string(subject[0].data(), subject[0].size()));
    if (!c) {
      logger("tracker")->warn("{} from {}: {}: PERMISSION_DENIED", rpc, ctx.peer(),
                              c.error().message);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, c.error().message);
    }
    if ((c->roles & roles) == 0) return permission_denied(rpc, roles, *c, ctx.peer());
    if (caller) {
      caller->name = c->name;
      caller->roles = c->roles;
    }
    return grpc::Status::OK;
  }
  std::lock_guard<std::mutex> lock(credentials_mu_);
  const std::vector<Credential>& credentials = credentials_;
  if (credentials.empty()) {  // no authentication (--insecure): everyone may do everything
    if (caller) caller->roles = kRoleDevice | kRoleClient | kRoleAdmin | kRoleBuilder;
    return grpc::Status::OK;
  }
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    logger("tracker")->warn("{} from {}: no token: UNAUTHENTICATED", rpc, ctx.peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing token: pass --token-file with the tracker's token");
  }
  const std::string value(it->second.data(), it->second.size());
  const Credential* c =
      value.rfind("Bearer ", 0) == 0 ? find_credential(credentials, value.substr(7)) : nullptr;
  if (!c) {
    logger("tracker")->warn("{} from {}: wrong token: UNAUTHENTICATED", rpc, ctx.peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong token");
  }
  if ((c->roles & roles) == 0) return permission_denied(rpc, roles, *c, ctx.peer());
  if (caller) {
    caller->name = c->name;
    caller->token = c->token;
    caller->roles = c->roles;
  }
  return grpc::Status::OK;
}

void ServerCore::record(const std::shared_ptr<const void>& context, int index,
                        const schedule_space::MeasureResult& result, const std::string& device,
                        std::function<void()> then) const {
  if (!context) {  // a job that is not archived (layout transforms)
    if (then) then();
    return;
  }
  const auto& info = *static_cast<const JobRecordInfo*>(context.get());
  ArchiveWriter::Entry e;
  e.row = Archive::Row{info.task_id, info.space, info.configs[index], result,
                       records::RunInfo{"farm", info.name, info.client, device}};
  e.then = std::move(then);
  e.job = info.name;
  e.index = index;
  archive_writer->add(std::move(e));
}

grpc::Status check_device_key(const std::string& field, const std::string& key) {
  static const std::regex key_re("[A-Za-z0-9._-]{1,64}");
  if (std::regex_match(key, key_re)) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::INVALID_ARGUMENT,
      field + " = '" + key.substr(0, 80) + "' must be 1-64 letters, digits, '.', '_' or '-'");
}

grpc::Status invalid_argument_status(const Error& e) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e.message);
}

}  // namespace tensortune::tracker
