#pragma once
/// \file
/// Who may call the tracker: named tokens, each with a role, read from a tokens file
/// of `name role token` lines, so that every registration and every job is attributed to a
/// name. Roles: `device` (registers and measures), `client` (submits jobs, reads status and
/// records), `builder` (sends built kernels with its jobs, which devices load and run: needed
/// beside `client` by a client that builds on its own cores), `admin` (what a client may, and
/// the farm's administration). A line may give several joined by '+' ("client+builder"). The
/// single shared `--token-file` is one credential named "shared" with the device, client and
/// builder roles.
///
/// With mutual TLS (`tracker --tls-client-ca`) the certificate is the credential instead: its
/// subject's CN is the name and its O (organization) values the roles, as Kubernetes reads
/// users and groups from client certificates.
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"
#include "tracker/quotas.h"

namespace tensortune::tracker {

enum Role : uint8_t { kRoleDevice = 1, kRoleClient = 2, kRoleAdmin = 4, kRoleBuilder = 8 };

/// The bits of a role name ("admin" includes client); 0 for an unknown name.
uint8_t role_bits(const std::string& name);

struct Credential {
  std::string name;
  uint8_t roles = 0;  ///< Role bits
  std::string token;  ///< empty for a certificate's credential
  /// The client's quota where it differs from the tracker's defaults (-1 fields: the default).
  Quota quota = Quota::unset();
};

/// "device", "client", "admin", "builder", or joined by '+' ("device+client+builder").
std::string role_names(uint8_t roles);

/// Parses a tokens file. Blank lines and lines starting with '#' are skipped; every other line
/// is `name role token [quota ...]`: a name of 1-64 [A-Za-z0-9._-], a role (or roles joined by
/// '+'), a token of at
/// least 16 characters, then optional quota overrides for that client (`jobs=2 queued=5000
/// batch=500 per_minute=60`, see quotas.h). A malformed line, an unknown role or quota, a
/// duplicate name or a token given twice is an error naming `source:line`; nothing is
/// half-loaded.
/// The one rule for every secret the tracker accepts (--token-file, --tokens-file lines):
/// at least 16 characters. `what` names where it came from in the error.
Status check_token_strength(const std::string& token, const std::string& what);

Expected<std::vector<Credential>> parse_tokens(const std::string& text, const std::string& source);

/// Reads and parses a tokens file; refuses one that group or others can read (chmod 600).
Expected<std::vector<Credential>> load_tokens_file(const std::string& path);

/// The credential whose token this is, or null. Compares against every credential in constant
/// time per comparison, so timings tell nothing about which token is near.
const Credential* find_credential(const std::vector<Credential>& credentials,
                                  const std::string& token);

/// The credential a verified client certificate stands for, from its subject as gRPC gives it
/// (RFC 2253: "CN=alice,O=client" or "O=device,CN=box1"): CN is the name (1-64 of
/// [A-Za-z0-9._-]), every O that names a role gives that role. An error says what is missing.
Expected<Credential> credential_from_subject(const std::string& subject);

}  // namespace tensortune::tracker
