// What every subcommand shares: the error report (the one place an Error becomes an exit code),
// the client-certificate flags and the numeric range check.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

namespace tensortune::cli {

int report_error(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.message.c_str());
  return 1;
}

void add_client_certificate_options(CLI::App& cmd, std::string& cert, std::string& key,
                                    const std::string& group) {
  auto* c = cmd.add_option("--tls-cert", cert,
                           "with --tls-ca: this caller's certificate (PEM), for a tracker that "
                           "requires client certificates (its CN is the name, O the role)");
  auto* k = cmd.add_option("--tls-key", key, "the private key (PEM, mode 600) of --tls-cert");
  if (!group.empty()) {
    c->group(group);
    k->group(group);
  }
}

CLI::Validator at_least(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(value, &used);
          if (used != value.size()) throw std::invalid_argument(value);
        } catch (const std::exception&) {
          return "'" + value + "' is not a number";
        }
        char bound[64];
        if (v < min) {
          std::snprintf(bound, sizeof bound, "%g", min);
          return "= " + value + ", must be >= " + bound;
        }
        if (v > max) {
          std::snprintf(bound, sizeof bound, "%g", max);
          return "= " + value + ", must be <= " + bound;
        }
        return "";
      },
      max < 1e300 ? "[" + std::to_string(static_cast<long long>(min)) + ".." +
                        std::to_string(static_cast<long long>(max)) + "]"
                  : ">=" + std::to_string(static_cast<long long>(min)));
}

}  // namespace tensortune::cli
