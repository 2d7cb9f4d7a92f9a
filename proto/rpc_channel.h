#pragma once
/// \file
/// Client-side connection set-up shared by device servers and tuning clients: a channel to
/// the tracker (TLS when a CA file is given, the tracker's message-size limit) and the
/// shared token as call metadata.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "support/error.h"

namespace tensortune::wire {

struct TrackerEndpoint {
  std::string address;  ///< HOST:PORT
  std::string token;    ///< empty: none
  std::string tls_ca;   ///< PEM file of the CA that signed the tracker's certificate; empty: plain
  /// PEM files of this caller's own certificate and key, for a tracker that requires client
  /// certificates (mutual TLS; needs tls_ca); both or neither.
  std::string tls_cert, tls_key;
  int max_message_bytes = 4 << 20;
};

/// The whole file; `what` names it in the error ("TLS CA file").
Expected<std::string> read_text_file(const std::string& path, const std::string& what);

/// Trailing metadata of a Measure call that the tracker failed by its own decision (its value
/// says which: "no-device"); a client must not retry such a job.
inline constexpr char kJobVerdictKey[] = "tt-job-verdict";

/// Trailing metadata of a Measure call refused with RESOURCE_EXHAUSTED (a client quota):
/// "wait" when the same request may pass later (running jobs, queued items, jobs per minute),
/// "resize" when it never will (more configs than the batch quota).
inline constexpr char kQuotaVerdictKey[] = "tt-quota";

/// Fails when others may read the file, or its group may and root does not own it (mode & 077,
/// or & 037 for a root-owned file): "run: chmod 600 PATH".
Status check_secret_file_mode(const std::string& path, const std::string& what);

/// Reads a token file (first line, surrounding whitespace removed); an empty file, or one that
/// group or others may read (mode & 077), is an error.
Expected<std::string> read_token_file(const std::string& path);

/// The endpoint a command's --tracker, --token-file, --tls-ca, --tls-cert and --tls-key flags
/// describe.
Expected<TrackerEndpoint> tracker_endpoint(const std::string& address,
                                           const std::string& token_file, const std::string& tls_ca,
                                           const std::string& tls_cert = {},
                                           const std::string& tls_key = {});

Expected<std::shared_ptr<grpc::Channel>> make_tracker_channel(const TrackerEndpoint& endpoint);

/// Adds "authorization: Bearer <token>" when the token is not empty.
void add_token(grpc::ClientContext& context, const std::string& token);

/// "UNAUTHENTICATED: wrong token" for messages.
std::string describe(const grpc::Status& status);

}  // namespace tensortune::wire
