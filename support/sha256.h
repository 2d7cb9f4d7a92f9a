#pragma once
/// \file
/// SHA-256 (OpenSSL's): the one digest of the project, for artifacts' checksums and the
/// content addresses of built kernels.
#include <string>
#include <string_view>

namespace tensortune {

/// The 32-byte digest of `bytes`.
std::string sha256(std::string_view bytes);

/// The digest as 64 lowercase hexadecimal characters.
std::string sha256_hex(std::string_view bytes);

/// Whether `text` has the form sha256_hex returns.
bool is_sha256_hex(std::string_view text);

}  // namespace tensortune
