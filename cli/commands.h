#pragma once
/// \file
/// The subcommands of `tensortune`, one file each. Every `add_*` registers its subcommand and
/// options on `app`; the callback stores the process exit code in `exit_code`.

#include <string>

#include "support/error.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace tensortune::cli {

void add_tune_op_command(CLI::App& app, int& exit_code);
void add_tune_model_command(CLI::App& app, int& exit_code);
void add_op_command(CLI::App& app, int& exit_code);
void add_records_command(CLI::App& app, int& exit_code);
void add_demo_command(CLI::App& app, int& exit_code);
/// tasks, inspect, export-onnx
void add_model_commands(CLI::App& app, int& exit_code);
/// compile, run
void add_compile_commands(CLI::App& app, int& exit_code);
/// bench
void add_bench_command(CLI::App& app, int& exit_code);
/// tracker, device, status, admin (and the hidden device-worker)
void add_farm_commands(CLI::App& app, int& exit_code);
/// gpus
void add_gpus_command(CLI::App& app, int& exit_code);
/// graph-tune
void add_graph_tune_command(CLI::App& app, int& exit_code);
/// check-model
void add_check_model_command(CLI::App& app, int& exit_code);
/// quantize
void add_quantize_command(CLI::App& app, int& exit_code);

/// Prints "error: <message>" to stderr and returns the exit code for it (1).
int report_error(const Error& error);

/// A CLI11 check that a number is >= `min` (and <= `max`), with a message like
/// "--trials = 0, must be >= 1" instead of CLI11's range text.
CLI::Validator at_least(double min, double max = 1e300);

/// --tls-cert and --tls-key: this caller's certificate for a tracker that requires client
/// certificates (mutual TLS), in the option group `group`.
void add_client_certificate_options(CLI::App& cmd, std::string& cert, std::string& key,
                                    const std::string& group = "");

}  // namespace tensortune::cli
