// The back-end commands: `compile` (a model to a .tt artifact), `run` (an artifact or a model,
// compiled or --reference) and `bench` (end-to-end time and --profile).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/artifact_source.h"
#include "cli/commands.h"
#include "cli/option_groups.h"
#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/printer.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/benchmark.h"
#include "compiler/runtime/executor.h"
#include "compiler/runtime/ranged_artifact.h"
#include "compiler/runtime/ranged_executor.h"
#include "support/npy.h"
#include "support/stopwatch.h"
#include "workflow/model_source.h"

namespace tensortune::cli {
namespace {

using runtime::CompiledNetwork;
using runtime::Step;

void print_summary(const CompiledNetwork& net) {
  int kinds[3] = {0, 0, 0};
  std::map<std::string, int> interpreted;
  std::set<std::string> symbols;
  for (const Step& s : net.steps) {
    ++kinds[static_cast<int>(s.kind)];
    if (s.kind == Step::Kind::kKernel) symbols.insert(s.symbol);
    if (s.kind == Step::Kind::kInterpret) ++interpreted[s.label];
  }
  int tuned = 0, borrowed = 0;
  for (const auto& s : net.schedules) tuned += s.tuned, borrowed += !s.borrowed_from.empty();
  const bool gpu = net.target == runtime::TargetKind::kCuda;
  std::printf(
      "%s at opt level %d for %s (%s): %zu steps: %d run generated code (%zu distinct "
      "kernels), %d native, %d %s\n",
      net.model.c_str(), net.opt_level, runtime::describe_target(net).c_str(),
      gpu ? "CUDA kernels; the rest on the host CPU" : net.cpu.triple.c_str(), net.steps.size(),
      kinds[0], symbols.size(), kinds[1], kinds[2],
      gpu ? "interpreted on the host" : "interpreted");
  for (const auto& [label, count] : interpreted)
    std::printf("  interpreted (no kernel for it yet): %s x%d\n", label.c_str(), count);
  std::printf("conv2d/dense kernels: %d tuned, %d borrowed, %zu default (records: %s)\n", tuned,
              borrowed, net.schedules.size() - tuned - borrowed, net.records_source.c_str());
  int full_range = 0, narrowed = 0;
  for (const auto& s : net.schedules) {
    full_range += s.workload.ends_with(" u8i8");
    narrowed += s.workload.ends_with(" u8i7");
  }
  if (!gpu && full_range > 0 && !codegen::host_has_int8_dot()) {
    if (narrowed == 0)
      std::printf(
          "note: %d int8 workloads have weights beyond [-64, 64]; without VNNI this CPU widens "
          "them to int16 (exact, near float32 speed). A model quantized with `tensortune quantize "
          "--reduce-range=auto` runs byte products instead where that adds little noise, about "
          "1.3x faster.\n",
          full_range);
    else  // narrowed where it was quiet (--reduce-range=auto): the rest were kept on purpose
      std::printf(
          "note: %d of %d int8 workloads keep weights beyond [-64, 64] (the quantizer kept them at "
          "full range, as `--reduce-range=auto` does where 7 bits would add noise); without VNNI "
          "this CPU widens those to int16 (exact, near float32 speed). `tensortune quantize "
          "--reduce-range` narrows every layer.\n",
          full_range, full_range + narrowed);
  }
  if (gpu)
    std::printf("GPU module: %zu bytes of CUDA C, %s\n", net.gpu_source.size(),
                net.gpu_ptx.empty()
                    ? "no PTX (NVRTC was not available here)"
                    : (std::to_string(net.gpu_ptx.size()) + " bytes of PTX from NVRTC").c_str());
}

struct CompileFlags {
  workflow::ModelOptions model;
  bool fastest_records = false;
  bool no_graph_best = false;
  int threads = 1;
  std::string output;
  bool verbose = false;
};

std::string run_inputs_hint(const graph::Graph& g) {
  std::string inputs;
  for (graph::ValueId in : g.inputs())
    if (g.value(in).name != graph::kSequenceMaskInput)
      inputs += " --input " + g.value(in).name + "=" + g.value(in).name + ".npy";
  return inputs;
}

/// compile with a range of sequence lengths: every bucket, a line each, into one artifact.
Status compile_ranged(const CompileFlags& f, const graph::SequenceRange& range) {
  const Stopwatch start;
  std::string inputs;
  std::printf("compiling %s for sequence lengths %lld..%lld: %zu buckets\n", f.model.model.c_str(),
              static_cast<long long>(range.lo), static_cast<long long>(range.hi),
              range.buckets.size());
  const auto progress = [&](size_t i, size_t count, int64_t length, const CompiledNetwork& net) {
    int kernels = 0, tuned = 0;
    for (const Step& s : net.steps) kernels += s.kind == Step::Kind::kKernel;
    for (const auto& s : net.schedules) tuned += s.tuned;
    std::printf(
        "  bucket %zu/%zu: length %lld, %zu steps (%d generated), %d of %zu "
        "conv2d/dense/matmul kernels tuned, %.1f s\n",
        i + 1, count, static_cast<long long>(length), net.steps.size(), kernels, tuned,
        net.schedules.size(), start.seconds());
    std::fflush(stdout);
    if (inputs.empty()) inputs = run_inputs_hint(net.graph);
  };
  TT_ASSIGN_OR_RETURN(std::string bytes, workflow::compile_ranged_model(
                                             f.model, f.threads, !f.fastest_records,
                                             !f.fastest_records && !f.no_graph_best, progress));
  TT_RETURN_IF_ERROR(runtime::write_artifact_bytes(bytes, f.output));
  std::printf(
      "wrote %s (%.1f MB; the buckets share equal weights) in %.1f s; run it on any length in "
      "%lld..%lld with `tensortune run %s%s`\n",
      f.output.c_str(), double(bytes.size()) / 1e6, start.seconds(),
      static_cast<long long>(range.lo), static_cast<long long>(range.hi), f.output.c_str(),
      inputs.c_str());
  return ok_status();
}

Status compile(const CompileFlags& f) {
  TT_ASSIGN_OR_RETURN(auto range, workflow::sequence_range(f.model));
  if (range) return compile_ranged(f, *range);
  const Stopwatch start;
  TT_ASSIGN_OR_RETURN(CompiledNetwork net,
                      workflow::compile_model(f.model, f.threads, !f.fastest_records,
                                              !f.fastest_records && !f.no_graph_best));
  TT_RETURN_IF_ERROR(runtime::write_network(net, f.output));
  print_summary(net);
  if (f.verbose)
    for (const auto& s : net.schedules)
      std::printf("  %-55s %s (%s)\n", s.workload.c_str(), s.schedule.c_str(),
                  s.tuned                   ? "tuned"
                  : s.borrowed_from.empty() ? "default"
                                            : ("borrowed from " + s.borrowed_from).c_str());
  // The run command to suggest names the network's own inputs.
  const std::string inputs = run_inputs_hint(net.graph);
  if (net.target == runtime::TargetKind::kCuda) {
    std::printf(
        "wrote %s (%.1f MB) in %.1f s; check it on this CPU with `tensortune run %s --emulate%s`\n",
        f.output.c_str(), double(std::filesystem::file_size(f.output)) / 1e6, start.seconds(),
        f.output.c_str(), inputs.c_str());
    return ok_status();
  }
  std::printf(
      "wrote %s (%.1f MB) in %.1f s; run it with `tensortune run %s%s` or time it with "
      "`tensortune bench %s --profile`\n",
      f.output.c_str(), double(std::filesystem::file_size(f.output)) / 1e6, start.seconds(),
      f.output.c_str(), inputs.c_str(), f.output.c_str());
  return ok_status();
}

struct RunFlags {
  std::string artifact;
  workflow::ModelOptions model;
  bool reference = false;
  bool emulate = false;
  int threads = 0;
  int gpu = -1;  ///< -1: not given (GPU 0)
  std::vector<std::string> inputs;
  workflow::ImageNormalization images;
  std::vector<std::string> saved_inputs;  ///< NAME=x.npy: the tensor input NAME ran on
  std::vector<std::string> outputs;
  int64_t max_artifact_bytes = runtime::kDefaultMaxArtifactBytes;
  int64_t sequence_length = 0;  ///< a ranged artifact's NAME=random length; 0: the range's top
};

/// --save-input NAME=x.npy: writes what input NAME was given (an image after its resize and
/// normalisation, random data), so that another runtime can run on the same tensor.
Status save_inputs(const std::map<std::string, graph::Tensor>& inputs,
                   const std::vector<std::string>& items) {
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    const std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    const auto it = inputs.find(name);
    if (it == inputs.end() || eq + 1 == item.size())
      return invalid_argument("--save-input = '" + item +
                              "' is not NAME=x.npy for an --input NAME");
    TT_RETURN_IF_ERROR(write_npy(item.substr(eq + 1), it->second));
  }
  return ok_status();
}

Status run_ranged(const RunFlags& f, std::shared_ptr<const runtime::RangedArtifact> artifact) {
  if (f.reference)
    return invalid_argument("--reference runs one network's graph; " + f.artifact +
                            " holds one per bucket of sequence lengths: run the model with "
                            "--model and --input-shape instead");
  const int threads = f.threads > 0 ? f.threads : artifact->threads();
  const Stopwatch start;
  TT_ASSIGN_OR_RETURN(
      auto exe, runtime::RangedExecutable::load(artifact, threads, f.emulate, std::max(f.gpu, 0)));
  TT_ASSIGN_OR_RETURN(runtime::Executable * first, exe->bucket(0));
  const graph::Graph& g = first->network().graph;
  TT_ASSIGN_OR_RETURN(int64_t length, length_in_range(f.sequence_length, artifact->plan()));
  TT_ASSIGN_OR_RETURN(
      auto inputs,
      workflow::read_inputs(inputs_at_length(g, artifact->plan(), length), f.inputs, f.images));
  TT_RETURN_IF_ERROR(save_inputs(inputs, f.saved_inputs));
  TT_ASSIGN_OR_RETURN(const int64_t actual, exe->length_of(inputs));
  if (auto loaded = exe->prepare(inputs); !loaded) return loaded.error();  // the bucket, loaded
  const double load_s = start.seconds();
  const Stopwatch run_start;
  TT_ASSIGN_OR_RETURN(auto outputs, exe->run(inputs));
  std::printf(
      "ran %s at sequence length %lld (bucket %lld of %lld..%lld, %d thread%s%s) in %.2f "
      "ms (first run; loading took %.2f s)\n",
      artifact->model().c_str(), static_cast<long long>(actual),
      static_cast<long long>(graph::bucket_for_length(artifact->buckets(), actual)),
      static_cast<long long>(artifact->plan().range.lo),
      static_cast<long long>(artifact->plan().range.hi), threads, threads == 1 ? "" : "s",
      f.emulate ? ", emulated on this CPU" : "", run_start.seconds() * 1e3, load_s);
  return workflow::report_outputs(g, outputs, f.outputs);
}

Status run(const RunFlags& f) {
  TT_ASSIGN_OR_RETURN(auto ranged, ranged_artifact(f.artifact, f.max_artifact_bytes));
  if (ranged) return run_ranged(f, ranged);
  TT_ASSIGN_OR_RETURN(auto net, network_for(f.artifact, f.model, f.threads, f.max_artifact_bytes));
  TT_ASSIGN_OR_RETURN(auto inputs, workflow::read_inputs(net->graph, f.inputs, f.images));
  TT_RETURN_IF_ERROR(save_inputs(inputs, f.saved_inputs));
  std::vector<graph::Tensor> outputs;
  const Stopwatch start;
  if (f.reference) {
    TT_ASSIGN_OR_RETURN(outputs, graph::interpret(net->graph, inputs));
    std::printf("ran %s (opt level %d) with the reference interpreter in %.2f s\n",
                net->model.c_str(), net->opt_level, start.seconds());
  } else {
    const int threads = f.threads > 0 ? f.threads : net->threads;
    TT_ASSIGN_OR_RETURN(int gpu, gpu_for(*net, f.gpu, f.emulate));
    TT_ASSIGN_OR_RETURN(auto exe, runtime::Executable::load(net, threads, f.emulate, gpu));
    const double load_s = start.seconds();
    const Stopwatch run_start;
    TT_ASSIGN_OR_RETURN(outputs, exe->run(inputs));
    if (f.emulate) {
      std::printf(
          "ran %s (opt level %d, %s, emulated on this CPU, %d thread%s) in %.2f s (not a "
          "GPU's time; compiling the kernels for emulation took %.2f s)\n",
          net->model.c_str(), net->opt_level, runtime::describe_target(*net).c_str(), threads,
          threads == 1 ? "" : "s", run_start.seconds(), load_s);
    } else {
      std::printf(
          "ran %s (opt level %d, compiled, %d thread%s) in %.2f ms (first run; loading took "
          "%.2f s)\n",
          net->model.c_str(), net->opt_level, threads, threads == 1 ? "" : "s",
          run_start.seconds() * 1e3, load_s);
    }
  }
  return workflow::report_outputs(net->graph, outputs, f.outputs);
}

}  // namespace

void add_compile_commands(CLI::App& app, int& exit_code) {
  auto cf = std::make_shared<CompileFlags>();
  CLI::App* c =
      app.add_subcommand("compile", "Compile a model with tuned records into a .tt artifact");
  add_model_flags(c, cf->model, true);
  c->add_option("--threads", cf->threads, "the default thread count of run and bench")
      ->check(at_least(1))
      ->capture_default_str();
  c->add_option("-o,--output", cf->output, "the artifact to write (net.tt)")->required();
  c->add_option("--target", cf->model.target,
                "llvm (this CPU), or cuda, cuda-smXY: CUDA kernels for that compute capability "
                "(cuda: sm_80), compiled on any machine")
      ->default_str("llvm");
  c->add_option_function<std::string>(
       "--gpu-layout",
       [cf](const std::string& layout) { cf->model.gpu_blocked = layout == "nchwc"; },
       "with --target cuda: nchw (AutoTVM's layout, the templates its CUDA logs tune) or nchwc "
       "(the CPU's blocked layouts, the blocked CUDA templates' records choosing the blocks)")
      ->check(CLI::IsMember({"nchw", "nchwc"}))
      ->default_str("nchw");
  add_precision_flag(c, cf->model.precision,
                     "their records are those of the tasks `tune --model --precision` tunes");
  c->add_flag("-v,--verbose", cf->verbose,
              "list every conv2d and dense workload's template, its config and where it came from");
  c->add_flag(
      "--fastest-records", cf->fastest_records,
      "with --records: take every workload's fastest record, even where its blocks differ from its "
      "neighbours' (by default: the graph-best records of `tensortune graph-tune` where the DB has "
      "them for this model, else a choice that counts the layout transforms between layers)");
  c->add_flag("--no-graph-best", cf->no_graph_best,
              "with --records: ignore the DB's graph-best records for this model (use the "
              "layout-aware choice per workload)");
  c->footer(
      "\nThe artifact holds the object code for this CPU, the optimised graph, the packed "
      "parameters, "
      "the target and the records used.\n"
      "Examples:\n  tensortune compile --model resnet-18 --records tuning.db -o r18.tt\n"
      "  tensortune compile --model model.onnx --input-shape input=1x3x224x224 --opt-level 3 "
      "--threads 2 -o net.tt");
  c->callback([&exit_code, cf] {
    if (Status s = compile(*cf); !s) exit_code = report_error(s.error());
  });

  auto rf = std::make_shared<RunFlags>();
  CLI::App* r = app.add_subcommand("run", "Run a compiled artifact (or a model) on .npy inputs");
  r->add_option("artifact", rf->artifact, "a .tt artifact from tensortune compile");
  add_artifact_limit(*r, rf->max_artifact_bytes);
  add_model_flags(r, rf->model, true, false);
  r->add_flag("--reference", rf->reference,
              "run the reference interpreter on the (optimised) graph instead");
  r->add_flag("--emulate", rf->emulate,
              "run a network compiled for cuda on this CPU: the same CUDA kernels, compiled by the "
              "host C++ compiler behind an emulation of blocks and threads (slow; for checking "
              "and debugging without a GPU)");
  r->add_option("--target", rf->model.target, "with --model: compile for this target first")
      ->default_str("llvm");
  r->add_option("--threads", rf->threads,
                "threads (default: the artifact's); with --emulate, each kernel's blocks are split "
                "over them")
      ->check(at_least(1));
  r->add_option("--gpu", rf->gpu, "a network compiled for cuda: run it on this GPU (default 0)")
      ->check(at_least(0));
  r->add_option("--input", rf->inputs,
                "NAME=x.npy, NAME=photo.jpg|png (a float32 [N, 3, H, W] input: resized to H x W, "
                "scaled to [0, 1] and normalised by --mean/--std), or NAME=random for "
                "deterministic uniform data")
      ->required();
  r->add_option("--mean", rf->images.mean,
                "image inputs: per-channel mean subtracted from pixels scaled to [0, 1] (R,G,B)")
      ->capture_default_str();
  r->add_option("--std", rf->images.std, "image inputs: per-channel divisor after the mean")
      ->capture_default_str();
  r->add_option("--save-input", rf->saved_inputs,
                "NAME=x.npy: write the tensor input NAME ran on (an image as the network saw it), "
                "to run another runtime on the same data");
  r->add_option("--sequence-length", rf->sequence_length,
                "an artifact compiled for a range of sequence lengths: the length of NAME=random "
                "inputs (default: the range's top; .npy inputs bring their own)")
      ->check(at_least(1));
  r->add_option("-o,--output", rf->outputs,
                "write the graph outputs to these .npy files, in order (fewer than the outputs: "
                "the first ones)");
  r->footer(
      "\nExamples:\n  tensortune run r18.tt --input data=x.npy --output y.npy\n"
      "  tensortune run r18.tt --reference --input data=x.npy --output y_ref.npy\n"
      "  tensortune run --model resnet-18 --opt-level 0 --reference --input data=random\n"
      "  tensortune run net.tt --input input=cat.jpg --save-input input=cat.npy -o logits.npy\n"
      "  tensortune compile --model resnet-18 --target cuda-sm80 -o r18-gpu.tt && \\\n"
      "    tensortune run r18-gpu.tt --emulate --input data=x.npy --output y.npy");
  r->callback([&exit_code, rf] {
    if (Status s = run(*rf); !s) exit_code = report_error(s.error());
  });
}

}  // namespace tensortune::cli
