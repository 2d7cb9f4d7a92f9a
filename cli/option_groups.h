#pragma once
/// \file
/// Option groups several subcommands share: each registers its flags on a command and writes
/// them into the options struct of the workflow/ function the command calls.
#include "workflow/model_source.h"
#include "workflow/tuning_session.h"

namespace CLI {
class App;
}

namespace tensortune::cli {

/// --model, --input-shape and the ONNX limits; with `optimise`, also --opt-level,
/// --print-after-each, --records, --device-key, --no-fallback-from-records and
/// --exclude-algorithm.
void add_model_flags(CLI::App* command, workflow::ModelOptions& flags, bool optimise,
                     bool model_required = true);

/// --precision fp32|tf32|fp16|bf16 into `precision`: the dense and batch matmul layers' products
/// on a CUDA target's tensor cores; `effect` says what it does in this command.
void add_precision_flag(CLI::App* command, std::string& precision, const std::string& effect);

/// --exclude-algorithm NAME (repeatable) into `excluded`, and --no-NAME for each algorithm of the
/// registry but the direct one; `effect` says what leaving one out does in this command.
void add_algorithm_flags(CLI::App* command, std::vector<std::string>& excluded,
                         const std::string& effect);

/// Registers --tuner, --trials, --batch-size, --early-stopping, --seed, --threads, --number,
/// --repeat, --min-repeat-ms, --timeout, --flush-cache, --device-key and the farm's options.
/// `threads_flag` false: no --threads (a command with a --threads of its own).
void add_tuning_flags(CLI::App& cmd, workflow::TuningOptions& flags, bool threads_flag = true);

}  // namespace tensortune::cli
