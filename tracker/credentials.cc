#include "tracker/credentials.h"

#include <regex>
#include <set>
#include <sstream>

#include "proto/rpc_channel.h"

namespace tensortune::tracker {

namespace {

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

uint8_t role_bits(const std::string& name) {
  if (name == "device") return kRoleDevice;
  if (name == "client") return kRoleClient;
  if (name == "builder") return kRoleBuilder;
  if (name == "admin") return kRoleAdmin | kRoleClient;
  return 0;
}

std::string role_names(uint8_t roles) {
  std::string out;
  for (auto [bit, name] : {std::pair<uint8_t, const char*>{kRoleDevice, "device"},
                           {kRoleClient, "client"},
                           {kRoleAdmin, "admin"},
                           {kRoleBuilder, "builder"}})
    if (roles & bit) out += (out.empty() ? "" : "+") + std::string(name);
  return out.empty() ? "none" : out;
}

Status check_token_strength(const std::string& token, const std::string& what) {
  if (token.size() < 16)
    return invalid_argument(what +
                            " is shorter than 16 characters (make one with: head -c 24 "
                            "/dev/urandom | base64)");
  return ok_status();
}

Expected<std::vector<Credential>> parse_tokens(const std::string& text, const std::string& source) {
  static const std::regex kName("[A-Za-z0-9._-]{1,64}");
  std::vector<Credential> out;
  std::set<std::string> names, tokens;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const std::string where = source + ":" + std::to_string(number);
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (fields.empty() || fields[0][0] == '#') continue;
    if (fields.size() < 3)
      return invalid_argument(where + ": " + std::to_string(fields.size()) +
                              " fields, expected 'name role token [quota ...]'");
    Credential c{fields[0], 0, fields[2]};
    for (size_t i = 3; i < fields.size(); ++i)
      if (Status s = parse_quota_field(fields[i], &c.quota); !s)
        return invalid_argument(where + ": " + s.error().message);
    if (!std::regex_match(c.name, kName))
      return invalid_argument(where + ": name '" + c.name + "' is not 1-64 of [A-Za-z0-9._-]");
    for (size_t begin = 0; begin <= fields[1].size();) {
      size_t end = fields[1].find('+', begin);
      if (end == std::string::npos) end = fields[1].size();
      const std::string role = fields[1].substr(begin, end - begin);
      const uint8_t bits = role_bits(role);
      if (bits == 0)
        return invalid_argument(where + ": role '" + role +
                                "' is not device, client, builder or admin");
      c.roles |= bits;
      begin = end + 1;
    }
    TT_RETURN_IF_ERROR(check_token_strength(c.token, where + ": the token of '" + c.name + "'"));
    if (!names.insert(c.name).second)
      return invalid_argument(where + ": name '" + c.name + "' is given twice");
    if (!tokens.insert(c.token).second)
      return invalid_argument(where + ": the token of '" + c.name +
                              "' is another credential's too (one token, one name)");
    out.push_back(std::move(c));
  }
  if (out.empty()) return invalid_argument(source + ": no credentials (lines 'name role token')");
  return out;
}

Expected<std::vector<Credential>> load_tokens_file(const std::string& path) {
  TT_RETURN_IF_ERROR(wire::check_secret_file_mode(path, "tokens file"));
  TT_ASSIGN_OR_RETURN(std::string text, wire::read_text_file(path, "tokens file"));
  return parse_tokens(text, path);
}

Expected<Credential> credential_from_subject(const std::string& subject) {
  static const std::regex kName("[A-Za-z0-9._-]{1,64}");
  // Attributes are separated by unescaped commas (or '+' within one RDN); values may escape.
  std::vector<std::pair<std::string, std::string>> attributes;
  std::string key, value, *into = &key;
  auto flush = [&] {
    auto trim = [](std::string s) {
      while (!s.empty() && s.front() == ' ') s.erase(0, 1);
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    };
    if (!key.empty()) attributes.emplace_back(trim(key), trim(value));
    key.clear();
    value.clear();
    into = &key;
  };
  for (size_t i = 0; i < subject.size(); ++i) {
    const char ch = subject[i];
    if (ch == '\\' && i + 1 < subject.size()) {
      *into += subject[++i];
    } else if (ch == ',' || ch == '+' || ch == '/') {
      flush();
    } else if (ch == '=' && into == &key) {
      into = &value;
    } else {
      *into += ch;
    }
  }
  flush();
  Credential c;
  for (const auto& [k, v] : attributes) {
    if (k == "CN") c.name = v;
    if (k != "O" && k != "OU") continue;
    c.roles |= role_bits(v);
  }
  if (c.name.empty())
    return invalid_argument("client certificate subject '" + subject.substr(0, 200) +
                            "' has no CN (the credential's name)");
  if (!std::regex_match(c.name, kName))
    return invalid_argument("client certificate CN '" + c.name.substr(0, 80) +
                            "' is not 1-64 of [A-Za-z0-9._-]");
  if (c.roles == 0)
    return Error{ErrorCode::kFailedPrecondition,
                 "client certificate '" + c.name +
                     "' names no role: its subject needs O=device, O=client or O=admin"};
  return c;
}

const Credential* find_credential(const std::vector<Credential>& credentials,
                                  const std::string& token) {
  const Credential* found = nullptr;
  for (const Credential& c : credentials)  // no early exit: every entry costs the same
    if (same_token(c.token, token)) found = &c;
  return found;
}

}  // namespace tensortune::tracker
