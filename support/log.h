#pragma once
/// \file
/// One named spdlog logger per folder ("tuner", "records", "compiler", ...). Levels come from
/// `--log-level` or the SPDLOG_LEVEL environment variable (e.g. SPDLOG_LEVEL=tuner=debug).
/// Logs go to stderr; only cli/ prints to stdout.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace tensortune {

/// Returns the logger named `name`, creating it (stderr, colour when a terminal) on first use.
std::shared_ptr<spdlog::logger> logger(const std::string& name);

/// Sets every logger's level ("trace", "debug", "info", "warn", "error", "off"), then applies
/// SPDLOG_LEVEL overrides. Returns false on an unknown level name.
bool set_log_level(const std::string& level);

}  // namespace tensortune
