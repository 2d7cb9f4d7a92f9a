// The one `tensortune` binary. The only place that turns an Error into an exit code.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "support/log.h"

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

int main(int argc, char** argv) {
  namespace cli = tensortune::cli;
  CLI::App app{
      "tensortune: autotuning of tensor programs (conv2d_NCHWc, dense) with real LLVM code "
      "generation,\n"
      "a gRPC device farm, a SQLite record store, and a graph front end (model zoo, ONNX, "
      "passes)."};
  app.footer(
      "\nStart with `tensortune demo`, then `tensortune tasks --model resnet-18` and `tensortune "
      "tune-op --help`;\n"
      "for a farm, `tensortune tracker --help` and `tensortune device --help`.\n"
      "Logs go to stderr; set the level with --log-level or SPDLOG_LEVEL (e.g. "
      "SPDLOG_LEVEL=measure=debug).");
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  int exit_code = 0;
  cli::add_tune_op_command(app, exit_code);
  cli::add_tune_model_command(app, exit_code);
  cli::add_op_command(app, exit_code);
  cli::add_records_command(app, exit_code);
  cli::add_demo_command(app, exit_code);
  cli::add_model_commands(app, exit_code);
  cli::add_graph_tune_command(app, exit_code);
  cli::add_compile_commands(app, exit_code);
  cli::add_farm_commands(app, exit_code);
  cli::add_gpus_command(app, exit_code);
  app.parse_complete_callback([&] {
    if (!tensortune::set_log_level(log_level)) {
      std::fprintf(stderr, "error: --log-level = '%s' is not a level\n", log_level.c_str());
      std::exit(2);
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // "--trials: = 0, must be >= 1" reads better without CLI11's colon before our "= ".
    std::string what = e.what();
    const size_t colon = what.find(": = ");
    if (colon != std::string::npos) what.erase(colon, 1);
    std::fprintf(stderr, "error: %s\nRun with --help for the options.\n", what.c_str());
    return 2;
  }
  return exit_code;
}
