#include "tracker/server_core.h"

#include <regex>

#include "support/log.h"

namespace tensortune::tracker {
namespace {

// Constant-time comparison, so the token cannot be guessed byte by byte from timings.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

grpc::Status ServerCore::authorize(const grpc::ServerContextBase& ctx, const char* rpc) const {
  if (options.token.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    logger("tracker")->warn("{} from {}: no token: UNAUTHENTICATED", rpc, ctx.peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing token: pass --token-file with the tracker's token");
  }
  const std::string value(it->second.data(), it->second.size());
  if (value.rfind("Bearer ", 0) != 0 || !same_token(value.substr(7), options.token)) {
    logger("tracker")->warn("{} from {}: wrong token: UNAUTHENTICATED", rpc, ctx.peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong token");
  }
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
