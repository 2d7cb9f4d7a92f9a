// `tensortune tune-op`: tune one conv2d_NCHWc or dense operator on this machine.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "records/record_store.h"
#include "workflow/op_task.h"
#include "workflow/tuning_session.h"

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

struct TuneOpFlags {
  workflow::OpArgs op;
  std::string data, kernel, weight;
  std::string db = "tensortune.db";
  workflow::TuningOptions tuning;
};

Status run_tune_op(const TuneOpFlags& f) {
  TT_ASSIGN_OR_RETURN(auto data, workflow::parse_shape(f.data, "--data"));
  TT_ASSIGN_OR_RETURN(auto target, workflow::op_target(f.op.target));
  TT_ASSIGN_OR_RETURN(std::string tmpl, workflow::template_for_op(f.op.op, target));
  const bool conv = workflow::takes_conv2d_shapes(tmpl);
  const std::string& wtext = conv ? f.kernel : f.weight;
  if (wtext.empty())
    return invalid_argument(conv ? "--kernel is required for conv2d_NCHWc (OIHW, e.g. 64x64x3x3)"
                                 : "--weight is required for dense (out_features x in_features)");
  TT_ASSIGN_OR_RETURN(auto weight, workflow::parse_shape(wtext, conv ? "--kernel" : "--weight"));
  TT_ASSIGN_OR_RETURN(auto task, workflow::make_op_task(f.op, data, weight));
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
  if (!ss::target_kind_of(task.target).runs_on_gpu())
    std::printf("CPU model %s\n", ss::describe_cpu_model(ss::cpu_model_of(task.target)).c_str());
  TT_ASSIGN_OR_RETURN(auto summary, workflow::tune_one_task(task, f.tuning, store.get(), 1, 1));
  const auto& p = summary.result.progress;
  std::printf("best: %.2f GFLOPS with %s\n", p.best_gflops, summary.best_config.c_str());
  std::printf(
      "measured %lld configs in %.1f s (%.3f s per trial), %lld errors; tuner %s took %.2f s "
      "(%.1f%%); "
      "records in %s\n",
      static_cast<long long>(summary.result.measured), p.elapsed_s,
      summary.result.measured ? p.elapsed_s / summary.result.measured : 0.0,
      static_cast<long long>(p.errors), f.tuning.tuner.c_str(), summary.result.tuner_seconds,
      p.elapsed_s > 0 ? 100.0 * summary.result.tuner_seconds / p.elapsed_s : 0.0, f.db.c_str());
  return ok_status();
}

}  // namespace

void add_tune_op_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<TuneOpFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune-op",
      "Tune one operator on this machine or on a farm (--tracker) and record every measurement");
  cmd->footer(
      "\nExamples:\n"
      "  tensortune tune-op --op conv2d_NCHWc --data 1x64x56x56 --kernel 64x64x3x3 --strides 1,1 "
      "\\\n"
      "      --pads 1,1,1,1 --tuner random --trials 200 --db resnet.db\n"
      "  tensortune tune-op --op dense --data 1x2048 --weight 1000x2048 --trials 100\n"
      "  tensortune tune-op --op batch_matmul --data 12x128x64 --weight 12x128x64 --trials 64\n"
      "  tensortune tune-op --op attention --data 12x128x64 --weight 12x64x128 --mask 1x1x128 "
      "--trials 32\n"
      "Pads are top,left,bottom,right. Rerunning the same command resumes it: the run (tuner and "
      "seed) keeps\n"
      "its trial count, and no config already in the DB is measured again. Inspect results with\n"
      "`tensortune records best --db FILE` and `tensortune records plot --db FILE -o curves.png`.");
  cmd->add_option("--op", flags->op.op, "operator: " + workflow::op_names())->required();
  cmd->add_option("--data", flags->data,
                  "input shape: NxCxHxW for conv2d, MxK for dense, BxMxK for batch_matmul and "
                  "attention (its q)")
      ->required();
  cmd->add_option("--kernel", flags->kernel, "conv2d weight shape OxIxKHxKW");
  cmd->add_option("--weight", flags->weight,
                  "dense weight shape NxK (out_features x in_features); batch_matmul BxNxK; "
                  "attention its keys as k^T, BxKxN");
  cmd->add_flag(
      "--weight-kn", [flags](int64_t) { flags->op.transpose_b = false; },
      "batch_matmul: the weight is BxKxN (a MatMul's second operand as exported), not "
      "AutoTVM's BxNxK");
  cmd->add_option("--value-dim", flags->op.value_dim,
                  "attention: the values' width Dv (default: the keys' K)");
  cmd->add_option("--mask", flags->op.mask,
                  "attention: an additive mask MBxMRxN (MB dividing B: a batch over its heads; MR "
                  "1 or M; N the keys)");
  cmd->add_option("--scale", flags->op.scale, "attention: the scores' scale (default 1/sqrt(K))");
  cmd->add_option("--strides", flags->op.strides, "conv2d strides h,w")->capture_default_str();
  cmd->add_option("--pads", flags->op.pads,
                  "conv2d zero padding top,left,bottom,right (or one value, or v,h)")
      ->capture_default_str();
  cmd->add_option("--dilation", flags->op.dilation, "conv2d dilation h,w")->capture_default_str();
  cmd->add_option(
      "--precision", flags->op.precision,
      "the products' precision: fp32, or on the tensor cores of a CUDA target (sm_80+) tf32 "
      "(as PyTorch's allow_tf32), fp16 or bf16, each summed in float32 (default: the "
      "template's own; `--op dense --precision fp16` picks the tensor-core template)");
  cmd->add_option("--weight-bits", flags->op.weight_bits,
                  "int8 templates: 8 (weights in [-128, 127]) or 7 (in [-64, 64], as `quantize "
                  "--reduce-range` writes them: exact byte-product kernels without VNNI)")
      ->capture_default_str();
  cmd->add_option("--target", flags->op.target,
                  "llvm (this CPU), or cuda / cuda-smXY / 'cuda -arch=sm_XY' (on GPU --gpu of "
                  "this machine, or with --tracker on the farm's GPU servers)")
      ->capture_default_str();
  cmd->add_option("--db", flags->db, "SQLite record DB (created if missing)")
      ->capture_default_str();
  add_tuning_flags(*cmd, flags->tuning);
  cmd->callback([flags, &exit_code] {
    Status st = run_tune_op(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
