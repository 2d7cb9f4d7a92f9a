// --model and its companions: the model options of `tasks`, `inspect`, `compile`, `run`,
// `bench`, `tune --model`, `graph-tune` and `records best --model`.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/frontend/model_zoo.h"
#include "schedule_space/template.h"

namespace tensortune::cli {

void add_precision_flag(CLI::App* command, std::string& precision, const std::string& effect) {
  command
      ->add_option(
          "--precision", precision,
          "fp32, or with a CUDA target of sm_80+ tf32 (as PyTorch's allow_tf32), fp16, bf16 or "
          "3xtf32 (each input split into two TF32 values: float32's accuracy at a third "
          "of the tensor cores' speed): the convolution, dense and batch matmul layers' "
          "products on the tensor cores, summed in float32 (depthwise convolutions, "
          "softmax, normalisation and reductions stay float32); " +
              effect)
      ->check(CLI::IsMember(
          {"fp32", "float32", "tf32", "fp16", "float16", "bf16", "bfloat16", "3xtf32"}))
      ->default_str("fp32");
}

void add_model_flags(CLI::App* cmd, workflow::ModelOptions& flags, bool optimise,
                     bool model_required) {
  std::string zoo;
  for (const auto& n : frontend::zoo_model_names()) zoo += (zoo.empty() ? "" : ", ") + n;
  cmd->add_option("--model", flags.model, "a zoo model (" + zoo + ") or an ONNX file")
      ->required(model_required);
  cmd->add_option("--input-shape", flags.input_shapes,
                  "NAME=1x3x224x224: fixes an input's shape (required for dynamic dimensions; "
                  "repeat for several inputs); NAME=1x1..512: every sequence length 1..512 "
                  "(compile, tune, tasks, check-model; inputs given the same range share the "
                  "length)");
  cmd->add_option("--sequence-buckets", flags.sequence_buckets,
                  "with a range in --input-shape (NAME=1x1..512): the bucket lengths compiled, "
                  "each length running in the first at or above it: half-octaves (powers of two "
                  "and 1.5x each: pads by at most a third), octaves (powers of two: half the "
                  "buckets, pads up to nearly twice) or a list (16,64,128,512)")
      ->default_str("half-octaves");
  cmd->add_option("--max-model-bytes", flags.limits.max_model_bytes,
                  "an ONNX file larger than this is refused unread")
      ->check(at_least(1))
      ->capture_default_str()
      ->group("Limits");
  cmd->add_option("--max-onnx-nodes", flags.limits.max_nodes,
                  "an ONNX graph with more nodes is refused")
      ->check(at_least(1))
      ->capture_default_str()
      ->group("Limits");
  cmd->add_option("--max-initializers", flags.limits.max_initializers,
                  "an ONNX graph with more initializers (weights) is refused")
      ->check(at_least(1))
      ->capture_default_str()
      ->group("Limits");
  if (!optimise) return;
  cmd->add_option("--opt-level", flags.opt_level,
                  "0: SimplifyInference, DCE; 1: + FuseOps; 2: + FoldConstant; 3: + "
                  "FoldScaleAxis, AlterOpLayout (NCHW[x]c)")
      ->check(at_least(0, 3))
      ->capture_default_str();
  cmd->add_flag("--print-after-each", flags.print_after_each,
                "print the graph after every pass that runs");
  cmd->add_option(
      "--records", flags.records,
      "tuned records (a tensortune DB or an AutoTVM log): each conv2d and dense workload runs "
      "the template whose record measured fastest, with that config (block sizes for "
      "AlterOpLayout, the rest for code generation); workloads without one borrow the config of "
      "the nearest tuned workload, with a warning");
  cmd->add_flag(
      "--no-fallback-from-records", flags.no_borrow,
      "with --records: workloads without a record take the template's default config instead of "
      "borrowing one");
  cmd->add_option("--device-key", flags.device_key,
                  "with --records: use records of this device key (default: this host's)");
  add_algorithm_flags(cmd, flags.excluded_algorithms,
                      "no node runs its templates' kernels, even where their record measured "
                      "fastest");
  cmd->add_flag("--no-int8", flags.no_int8,
                "quantized (QDQ) convolutions compute in float32 on their dequantized values, as "
                "the model is written, instead of the int8 kernels (conv2d_NCHWc_int8)");
  cmd->add_flag("--no-fuse-attention", flags.no_fuse_attention,
                "attention (MatMul, scale, mask, Softmax, MatMul) runs as two batch matmuls around "
                "a softmax where records do not time both ways, instead of one fused attention "
                "kernel (with records of both, the faster runs)");
}

void add_algorithm_flags(CLI::App* cmd, std::vector<std::string>& excluded,
                         const std::string& effect) {
  std::string known;
  for (std::string_view a : schedule_space::algorithm_names())
    if (a != schedule_space::kDirectAlgorithm)
      known += (known.empty() ? "" : ", ") + std::string(a);
  cmd->add_option(
         "--exclude-algorithm", excluded,
         "leave out the templates of this algorithm (" + known + "; repeatable): " + effect)
      ->type_name("NAME");
  // A shorthand per algorithm, from the registry: a new algorithm brings its own.
  for (std::string_view a : schedule_space::algorithm_names()) {
    if (a == schedule_space::kDirectAlgorithm) continue;
    const std::string name(a);
    cmd->add_flag_callback(
        "--no-" + name, [&excluded, name] { excluded.push_back(name); },
        "shorthand for --exclude-algorithm " + name);
  }
}

}  // namespace tensortune::cli
