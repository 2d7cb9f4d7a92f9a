// `tensortune op run`: run one operator on .npy inputs with the best config in the DB.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "compiler/codegen/cuda/cuda_kernel.h"
#include "workflow/op_task.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#endif
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/op_runner.h"
#include "records/record_store.h"
#include "support/npy.h"

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

struct OpRunFlags {
  workflow::OpArgs op;
  std::string data, weight, bias, out, db;
  int threads = 1;
  bool relu = false;
  bool emulate = false;
  bool print_source = false;
  int64_t config_index = -1;
};

// A CUDA template's kernel on GPU 0 (the driver and NVRTC opened at run time).
Expected<Tensor> run_on_gpu(const ss::Task& task, const ss::ConfigSpace& space,
                            const ss::Config& config, const measure::OperatorInputs& in,
                            bool relu) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus)
    return unavailable(gpus.error().message +
                       "; --emulate runs the generated kernel on this CPU instead");
  const codegen::cuda::GpuDevice& gpu = gpus->front();
  TT_ASSIGN_OR_RETURN(auto kernel,
                      codegen::cuda::emit_cuda_kernel(
                          task, space, config,
                          codegen::cuda::CudaKernelOptions::bias_relu(in.bias.has_value(), relu)));
  const auto packed = measure::pack_operands(task, kernel.signature, in.data, in.weight);
  Tensor out = Tensor::zeros(kernel.signature.out_shape);
  std::vector<std::vector<float>> operands;
  if (in.bias) operands.push_back(in.bias->f32);
  TT_ASSIGN_OR_RETURN(
      auto run, codegen::cuda::run_on_gpu(gpu, kernel, packed.data.f32, packed.weight.f32, operands,
                                          out.size(), 10));
  std::fprintf(stderr, "ran on GPU 0 (%s, sm_%d): %.3f us per run, %lld registers per thread\n",
               gpu.name.c_str(), gpu.compute_capability, run.seconds_per_run * 1e6,
               static_cast<long long>(run.registers_per_thread));
  out.f32 = std::move(run.out);
  return measure::unpack_output(task, kernel.signature, out);
#else
  return unimplemented(task.template_name +
                       ": this build has no CUDA support (built without the CUDA Toolkit); "
                       "--emulate runs the generated kernel on this CPU");
#endif
}

Status run_op(const OpRunFlags& f) {
  measure::OperatorInputs in;
  TT_ASSIGN_OR_RETURN(in.data, read_npy(f.data));
  TT_ASSIGN_OR_RETURN(in.weight, read_npy(f.weight));
  if (!f.bias.empty()) {
    TT_ASSIGN_OR_RETURN(Tensor bias, read_npy(f.bias));
    in.bias = std::move(bias);
  }
  auto task = workflow::make_op_task(f.op, in.data.shape, in.weight.shape);
  if (!task) return task.error().with_context(f.data + " and " + f.weight);
  if (std::holds_alternative<ss::AttentionWorkload>(task->workload))
    return unimplemented(
        "--op " + f.op.op +
        ": attention reads q, k, v and a mask, and `op run` takes a data and a weight file; run "
        "it in a network (`compile`, `run`) or time it with `tune-op --op attention`");
  const bool cuda = ss::template_of(*task).target_kind().runs_on_gpu();
  if (!cuda && f.emulate)
    return invalid_argument("--emulate runs CUDA kernels on the CPU; " + task->template_name +
                            " is a CPU template (use --target cuda)");
  const std::string device_key = workflow::device_key_for(task->target);
  TT_RETURN_IF_ERROR(measure::check_operator_inputs(*task, in));
  TT_ASSIGN_OR_RETURN(auto space, ss::make_config_space(*task));
  ss::Config config = ss::default_config(*task, space);
  std::string source = "the default config (no --db given)";
  if (f.config_index >= 0) {
    auto chosen = space.config_at(f.config_index);
    if (!chosen) return chosen.error().with_context("--config-index");
    if (!space.is_valid(*chosen))
      return invalid_argument("--config-index = " + std::to_string(f.config_index) +
                              " is an invalid config of " + task->template_name + ": " +
                              space.describe(*chosen));
    config = *chosen;
    source = "config " + std::to_string(f.config_index) + " (--config-index)";
  } else if (!f.db.empty()) {
    TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(f.db));
    TT_ASSIGN_OR_RETURN(auto best, store->best(ss::workload_key(*task), "", device_key));
    if (best) {
      TT_ASSIGN_OR_RETURN(auto entity, records::entity_from_json(best->record.entity_json));
      TT_ASSIGN_OR_RETURN(config, space.config_from_entity(entity));
      char buf[128];
      std::snprintf(buf, sizeof buf, "the best record in %s (%.2f GFLOPS when tuned)", f.db.c_str(),
                    best->gflops);
      source = buf;
    } else {
      source = "the default config: " + f.db + " has no record for this workload on " + device_key;
    }
  }
  std::fprintf(stderr, "%s %s: using %s: %s\n", task->template_name.c_str(),
               ss::describe_workload(task->workload).c_str(), source.c_str(),
               space.describe(config).c_str());
  codegen::KernelOptions options;
  options.relu = f.relu;
  if (f.print_source && !cuda) {
    TT_ASSIGN_OR_RETURN(std::string ir,
                        codegen::kernel_ir(*task, space, config, options, /*optimized=*/true));
    std::printf("%s", ir.c_str());
  } else if (f.print_source) {
    TT_ASSIGN_OR_RETURN(
        auto kernel, codegen::cuda::emit_cuda_kernel(
                         *task, space, config,
                         codegen::cuda::CudaKernelOptions::bias_relu(in.bias.has_value(), f.relu)));
    std::printf(
        "// grid (%lld, %lld, %lld), block (%lld, %lld, %lld), %lld bytes of shared memory\n%s",
        static_cast<long long>(kernel.grid.x), static_cast<long long>(kernel.grid.y),
        static_cast<long long>(kernel.grid.z), static_cast<long long>(kernel.block.x),
        static_cast<long long>(kernel.block.y), static_cast<long long>(kernel.block.z),
        static_cast<long long>(kernel.shared_bytes), kernel.source.c_str());
  }
  Tensor out;
  if (cuda && !f.emulate) {
    TT_ASSIGN_OR_RETURN(out, run_on_gpu(*task, space, config, in, f.relu));
  } else {
    TT_ASSIGN_OR_RETURN(out, measure::run_operator(*task, space, config, in, f.threads, options));
  }
  TT_RETURN_IF_ERROR(write_npy(f.out, out));
  std::printf("wrote %s with shape %s\n", f.out.c_str(), shape_to_string(out.shape).c_str());
  return ok_status();
}

}  // namespace

void add_op_command(CLI::App& app, int& exit_code) {
  CLI::App* op = app.add_subcommand("op", "Run single operators");
  op->require_subcommand(1);
  auto flags = std::make_shared<OpRunFlags>();
  CLI::App* run = op->add_subcommand(
      "run", "Run one operator on .npy inputs (NCHW / OIHW) with the best config in the DB");
  run->footer(
      "\nExample:\n"
      "  tensortune op run --op conv2d_NCHWc --data x.npy --weight w.npy --bias b.npy --strides "
      "1,1 \\\n"
      "      --pads 1,1,1,1 --dilation 1,1 --db resnet.db --out y.npy\n"
      "The data and weight are packed into the config's NCHW[x]c / OIHW[x]i[y]o layouts, the "
      "kernel runs, and\n"
      "the result is written back in NCHW (or (M, N) for dense) as float32.\n"
      "Without a GPU, a CUDA template's kernel runs in emulation on the CPU:\n"
      "  tensortune op run --target cuda --emulate --op conv2d --data x.npy --weight w.npy "
      "--pads 1 --out y.npy");
  run->add_option("--op", flags->op.op, "operator: " + workflow::op_names())->required();
  run->add_option("--data", flags->data, "input .npy: NCHW for conv2d, (M, K) for dense")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_option("--weight", flags->weight,
                  "weight .npy: OIHW for conv2d, (N, K) for dense, (B, N, K) for batch_matmul")
      ->required()
      ->check(CLI::ExistingFile);
  run->add_flag(
      "--weight-kn", [flags](int64_t) { flags->op.transpose_b = false; },
      "batch_matmul: the weight .npy is (B, K, N), not AutoTVM's (B, N, K)");
  run->add_option("--bias", flags->bias, "optional bias .npy of shape (OC) or (N)")
      ->check(CLI::ExistingFile);
  run->add_option("--strides", flags->op.strides, "conv2d strides h,w")->capture_default_str();
  run->add_option("--pads", flags->op.pads, "conv2d padding top,left,bottom,right")
      ->capture_default_str();
  run->add_option("--dilation", flags->op.dilation, "conv2d dilation h,w")->capture_default_str();
  run->add_option("--weight-bits", flags->op.weight_bits,
                  "int8 templates: 8 (weights in [-128, 127]) or 7 (in [-64, 64], as `quantize "
                  "--reduce-range` writes them: exact byte-product kernels without VNNI)")
      ->capture_default_str();
  run->add_option(
      "--precision", flags->op.precision,
      "the products' precision: fp32, or on the tensor cores of a CUDA target (sm_80+) tf32 "
      "(as PyTorch's allow_tf32), fp16 or bf16, each summed in float32 (default: the "
      "template's own; `--op dense --precision fp16` picks the tensor-core template)");
  run->add_option("--db", flags->db,
                  "record DB to take the best config from (default config without it)");
  run->add_option("--out", flags->out, "output .npy")->required();
  run->add_option("--threads", flags->threads, "threads to run on")
      ->check(tensortune::cli::at_least(1, 1024))
      ->capture_default_str();
  run->add_option("--config-index", flags->config_index,
                  "run this config of the space instead of the best record");
  run->add_flag("--relu", flags->relu, "apply relu after the bias (fused into the kernel)");
  run->add_option("--target", flags->op.target,
                  "llvm (this CPU), or cuda / cuda-smXY / 'cuda -arch=sm_XY' for the GPU "
                  "templates (cuda means sm_80; records are looked up under cuda-smXY)")
      ->capture_default_str();
  run->add_flag("--emulate", flags->emulate,
                "run a CUDA template's generated kernel on the CPU: the same CUDA source, "
                "blocks in turn and each block's threads meeting at barriers (slow; for "
                "checking a schedule without a GPU)");
  run->add_flag("--print-source", flags->print_source,
                "print the config's kernel: its CUDA C with the launch dimensions, or for a CPU "
                "template the LLVM IR after optimization (`llc -mcpu=native` turns it into the "
                "assembly the JIT runs)");
  run->callback([flags, &exit_code] {
    Status st = run_op(*flags);
    exit_code = st.has_value() ? 0 : report_error(st.error());
  });
}

}  // namespace tensortune::cli
