#include "proto/rpc_channel.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace tensortune::wire {

Expected<std::string> read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + what + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "ERROR";
  }
}

}  // namespace

Status check_secret_file_mode(const std::string& path, const std::string& what) {
  // As ssh does with private keys: a secret others on the machine can read is no secret. As
  // PostgreSQL does with its key, a root-owned file may also be read by its group (0440, 0640):
  // that is how container secrets arrive (a Kubernetes secret volume with fsGroup, a root-owned
  // file given to the service's group), and only root can have made it so.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (st.st_uid == 0 ? 037 : 077)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error{ErrorCode::kFailedPrecondition, what + " " + path +
                                                     " is readable by group or others (mode " +
                                                     mode + "); run: chmod 600 " + path};
  }
  return ok_status();
}

Expected<std::string> read_token_file(const std::string& path) {
  TT_RETURN_IF_ERROR(check_secret_file_mode(path, "token file"));
  TT_ASSIGN_OR_RETURN(std::string text, read_text_file(path, "token file"));
  const size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  text.erase(0, start);
  if (text.empty()) return invalid_argument("token file " + path + " is empty");
  return text;
}

Expected<TrackerEndpoint> tracker_endpoint(const std::string& address,
                                           const std::string& token_file, const std::string& tls_ca,
                                           const std::string& tls_cert,
                                           const std::string& tls_key) {
  TrackerEndpoint e;
  e.address = address;
  e.tls_ca = tls_ca;
  e.tls_cert = tls_cert;
  e.tls_key = tls_key;
  if (!token_file.empty()) {
    TT_ASSIGN_OR_RETURN(e.token, read_token_file(token_file));
  }
  return e;
}

Expected<std::shared_ptr<grpc::Channel>> make_tracker_channel(const TrackerEndpoint& e) {
  if (e.address.empty() || e.address.find(':') == std::string::npos)
    return invalid_argument("--tracker = '" + e.address + "' is not HOST:PORT");
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (e.tls_cert.empty() != e.tls_key.empty())
    return invalid_argument("--tls-cert and --tls-key go together");
  if (!e.tls_cert.empty() && e.tls_ca.empty())
    return invalid_argument("--tls-cert needs --tls-ca (the CA of the tracker's certificate)");
  if (e.tls_ca.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    TT_ASSIGN_OR_RETURN(ssl.pem_root_certs, read_text_file(e.tls_ca, "TLS CA file"));
    if (!e.tls_cert.empty()) {
      TT_ASSIGN_OR_RETURN(ssl.pem_cert_chain, read_text_file(e.tls_cert, "TLS certificate"));
      TT_RETURN_IF_ERROR(check_secret_file_mode(e.tls_key, "TLS key"));
      TT_ASSIGN_OR_RETURN(ssl.pem_private_key, read_text_file(e.tls_key, "TLS key"));
    }
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(e.max_message_bytes);
  args.SetMaxSendMessageSize(e.max_message_bytes);
  // Reconnect within a second of a tracker restart (gRPC's default back-off grows to 2
  // minutes): re-dial at most every 0.5 s while it is away.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  return grpc::CreateCustomChannel(e.address, creds, args);
}

void add_token(grpc::ClientContext& context, const std::string& token) {
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
}

std::string describe(const grpc::Status& status) {
  return std::string(code_name(status.error_code())) + ": " + status.error_message();
}

}  // namespace tensortune::wire
