#include "tracker/server_core.h"

#include <regex>

#include "support/log.h"

namespace tensortune::tracker {

int ServerCore::set_credentials(std::vector<Credential> credentials) {
  std::vector<std::function<void()>> to_end;
  {
    std::lock_guard<std::mutex> lock(credentials_mu_);
    credentials_ = std::move(credentials);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const Credential* c = find_credential(credentials_, it->second.token);
      if (c && c->name == it->second.name && (c->roles & it->second.roles)) {
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

bool ServerCore::authenticated() const {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  return !credentials_.empty();
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

grpc::Status ServerCore::authorize(const grpc::ServerContextBase& ctx, const char* rpc,
                                   uint8_t roles, std::string* who, std::string* token) const {
  std::lock_guard<std::mutex> lock(credentials_mu_);
  const std::vector<Credential>& credentials = credentials_;
  if (credentials.empty()) return grpc::Status::OK;
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
  if ((c->roles & roles) == 0) {
    logger("tracker")->warn("{} from {}: credential '{}' ({}) may not: PERMISSION_DENIED", rpc,
                            ctx.peer(), c->name, role_names(c->roles));
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        std::string(rpc) + " needs a " + role_names(roles) + " credential; '" +
                            c->name + "' is " + role_names(c->roles));
  }
  if (who) *who = c->name;
  if (token) *token = c->token;
  return grpc::Status::OK;
}

void ServerCore::record(const std::shared_ptr<const void>& context, int index,
                        const schedule_space::MeasureResult& result) const {
  if (!context) return;  // a job that is not archived (layout transforms)
  const auto& info = *static_cast<const JobRecordInfo*>(context.get());
  Status s = archive->record(info.task_id, *info.space, info.configs[index], result, info.name);
  if (!s)
    logger("tracker")->error("archive write failed for job '{}' index {}: {}", info.name, index,
                             s.error().message);
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
