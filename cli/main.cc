// The one `tensortune` binary: its subcommands (the library tt_cli) under one CLI11 app.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "support/log.h"

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
  // TT_VERSION is the project's version (CMake), the Debian package's too.
  app.set_version_flag("--version", "tensortune " TT_VERSION);
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
  cli::add_check_model_command(app, exit_code);
  cli::add_quantize_command(app, exit_code);
  cli::add_graph_tune_command(app, exit_code);
  cli::add_compile_commands(app, exit_code);
  cli::add_bench_command(app, exit_code);
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
  } catch (const CLI::CallForVersion& e) {
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
