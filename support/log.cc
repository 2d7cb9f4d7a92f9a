#include "support/log.h"

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace tensortune {

std::shared_ptr<spdlog::logger> logger(const std::string& name) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (auto existing = spdlog::get(name)) return existing;
  auto created = spdlog::stderr_color_mt(name);
  created->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  return created;
}

bool set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") return false;
  spdlog::set_level(parsed);
  spdlog::cfg::load_env_levels();
  return true;
}

}  // namespace tensortune
