#pragma once
/// \file
/// Who may call the tracker (issue 19): named tokens, each with a role, read from a tokens file
/// of `name role token` lines, so that every registration and every job is attributed to a
/// name. Roles: `device` (registers and measures), `client` (submits jobs, reads status and
/// records), `admin` (what a client may, and the farm's administration). The single shared
/// `--token-file` is one credential named "shared" with the device and client roles.
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace tensortune::tracker {

enum Role : uint8_t { kRoleDevice = 1, kRoleClient = 2, kRoleAdmin = 4 };

struct Credential {
  std::string name;
  uint8_t roles = 0;  ///< Role bits
  std::string token;
};

/// "device", "client", "admin", or "device+client" for the shared credential.
std::string role_names(uint8_t roles);

/// Parses a tokens file. Blank lines and lines starting with '#' are skipped; every other line
/// is `name role token`: a name of 1-64 [A-Za-z0-9._-], one role, a token of at least 16
/// characters. A malformed line, an unknown role, a duplicate name or a token given twice is
/// an error naming `source:line`; nothing is half-loaded.
Expected<std::vector<Credential>> parse_tokens(const std::string& text, const std::string& source);

/// Reads and parses a tokens file; refuses one that group or others can read (chmod 600).
Expected<std::vector<Credential>> load_tokens_file(const std::string& path);

/// The credential whose token this is, or null. Compares against every credential in constant
/// time per comparison, so timings tell nothing about which token is near.
const Credential* find_credential(const std::vector<Credential>& credentials,
                                  const std::string& token);

}  // namespace tensortune::tracker
