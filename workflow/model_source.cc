#include "workflow/model_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/tuned_configs.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/printer.h"
#include "compiler/graph/sequence_range.h"
#include "compiler/passes/passes.h"
#include "compiler/runtime/ranged_artifact.h"
#include "support/image_io.h"
#include "support/npy.h"
#include "workflow/input_shapes.h"
#include "workflow/op_task.h"

namespace tensortune::workflow {

namespace {

bool is_zoo_name(const std::string& model) {
  for (const auto& n : frontend::zoo_model_names())
    if (n == model) return true;
  return false;
}

}  // namespace

Expected<schedule_space::AlgorithmFilter> algorithm_filter(const ModelOptions& flags) {
  return schedule_space::exclude_algorithms(flags.excluded_algorithms, "--exclude-algorithm");
}

namespace {

Expected<graph::Graph> load_with_shapes(const ModelOptions& flags,
                                        std::map<std::string, graph::Shape> shapes) {
  if (is_zoo_name(flags.model)) {
    graph::Shape shape = {1, 3, 224, 224};
    for (const auto& [name, s] : shapes) {
      if (name != "data")
        return invalid_argument("--input-shape names '" + name + "', but zoo model " + flags.model +
                                " has one input, 'data'");
      shape = s;
    }
    return frontend::zoo_model(flags.model, shape);
  }
  if (!std::filesystem::exists(flags.model)) {
    std::string zoo;
    for (const auto& n : frontend::zoo_model_names()) zoo += (zoo.empty() ? "" : ", ") + n;
    return not_found("--model = '" + flags.model + "' is neither a zoo model (" + zoo +
                     ") nor an existing file");
  }
  frontend::OnnxImportOptions options;
  options.input_shapes = std::move(shapes);
  options.limits = flags.limits;
  return frontend::import_onnx_file(flags.model, options);
}

}  // namespace

Expected<std::optional<graph::SequenceRange>> sequence_range(const ModelOptions& flags) {
  TT_ASSIGN_OR_RETURN(auto parsed, parse_input_shapes(flags.input_shapes));
  const std::string& scheme = flags.sequence_buckets;
  if (!parsed.range) {
    if (!scheme.empty())
      return invalid_argument("--sequence-buckets " + scheme +
                              ": no --input-shape gives a range (NAME=1x1..512)");
    return parsed.range;
  }
  graph::SequenceRange& range = *parsed.range;
  if (scheme == "octaves") {
    range.buckets = graph::sequence_buckets(range.lo, range.hi, false);
  } else if (scheme.empty() || scheme == "half-octaves") {
    range.buckets = graph::sequence_buckets(range.lo, range.hi, true);
  } else {
    TT_ASSIGN_OR_RETURN(range.buckets, parse_int_list(scheme, "--sequence-buckets"));
    if (auto checked = graph::buckets_of(range); !checked)
      return checked.error().with_context("--sequence-buckets " + scheme);
  }
  return parsed.range;
}

Expected<graph::Graph> load_model_at_length(const ModelOptions& flags, int64_t length) {
  TT_ASSIGN_OR_RETURN(auto parsed, parse_input_shapes(flags.input_shapes));
  if (parsed.range)
    for (const auto& in : parsed.range->inputs)
      parsed.shapes[in.name][static_cast<size_t>(in.axis)] = length;
  return load_with_shapes(flags, std::move(parsed.shapes));
}

Expected<graph::Graph> load_model(const ModelOptions& flags) {
  TT_ASSIGN_OR_RETURN(auto parsed, parse_input_shapes(flags.input_shapes));
  if (parsed.range)
    return invalid_argument("--input-shape " + parsed.range->inputs[0].name + ": a range of " +
                            "sequence lengths (" + std::to_string(parsed.range->lo) + ".." +
                            std::to_string(parsed.range->hi) +
                            ") is for compile and tune; give this command one length");
  return load_with_shapes(flags, std::move(parsed.shapes));
}

Expected<graph::Graph> optimise_model(const graph::Graph& graph, const ModelOptions& flags) {
  passes::PassContext ctx;
  ctx.opt_level = flags.opt_level;
  if (flags.print_after_each) {
    ctx.after_pass = [](const std::string& pass, const graph::Graph& g) {
      std::printf("=== after %s ===\n%s\n", pass.c_str(), graph::print_graph(g).c_str());
    };
  }
  passes::PipelineOptions options;
  const schedule_space::Target target = codegen::host_target();
  options.layout.vector_lanes = target.vector_lanes;
  auto tuned = std::make_shared<driver::TunedConfigs>();
  if (!flags.records.empty()) {
    TT_ASSIGN_OR_RETURN(
        *tuned,
        driver::TunedConfigs::load(
            flags.records, flags.device_key.empty() ? codegen::host_device_key() : flags.device_key,
            target.vector_lanes, !flags.no_borrow));
  }
  TT_ASSIGN_OR_RETURN(auto algorithms, algorithm_filter(flags));
  auto chooser = std::make_shared<driver::KernelChooser>(*tuned, target, algorithms);
  if (!flags.no_int8)
    options.integer_ops = [target, filter = algorithms](const schedule_space::Workload& w) {
      return !schedule_space::templates_for(w, schedule_space::target_backend(target), filter)
                  .empty();
    };
  // Attention fused as compile fuses it (records decide where they time both ways).
  options.attention = [tuned, target, algorithms,
                       fuse = !flags.no_fuse_attention](const schedule_space::Workload& w) {
    const auto* a = std::get_if<schedule_space::AttentionWorkload>(&w);
    return a && driver::attention_fused(*tuned, *a, target, algorithms, fuse);
  };
  options.layout.choose_blocks = [tuned, chooser](const schedule_space::Conv2dWorkload& w) {
    const auto [ic, oc] = chooser->layout_blocks(w);  // no template: compile says why
    return passes::ConvBlocks{ic, oc};
  };
  return passes::run_pipeline(passes::standard_pipeline(options), graph, ctx);
}

graph::Tensor random_input(const graph::TensorType& type) {
  Tensor a = Tensor::zeros(type.dtype, type.shape);
  if (graph::is_float(type.dtype)) fill_uniform(a, 0);
  return a;
}

Expected<std::map<std::string, graph::Tensor>> read_inputs(const graph::Graph& g,
                                                           const std::vector<std::string>& items,
                                                           const ImageNormalization& images) {
  std::map<std::string, graph::Tensor> inputs;
  for (const auto& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("--input = '" + item +
                              "' is not NAME=FILE.npy, NAME=IMAGE.jpg|png or NAME=random");
    const std::string name = item.substr(0, eq), source = item.substr(eq + 1);
    const graph::ValueId id = g.find_input(name);
    if (id == graph::kNoValue || name == graph::kSequenceMaskInput) {
      std::string names;
      for (auto in : g.inputs())
        if (g.value(in).name != graph::kSequenceMaskInput)
          names += (names.empty() ? "" : ", ") + g.value(in).name;
      return invalid_argument("--input names '" + name +
                              "', which is not an input of the model (its inputs: " + names + ")");
    }
    if (source == "random") {
      inputs[name] = random_input(g.type(id));
    } else if (is_image_path(source)) {
      TT_ASSIGN_OR_RETURN(inputs[name], image_tensor(source, g.type(id), images));
    } else {
      TT_ASSIGN_OR_RETURN(Tensor a, read_npy(source));
      // numpy's default float64 (or float16) array for a float32 input, and so on: the values
      // are taken onto the input's float dtype, as a numpy astype would.
      const graph::DType want = g.type(id).dtype;
      if (graph::is_float(a.dtype) && graph::is_float(want) && a.dtype != want) {
        a.dtype = want;
        a.round_to_dtype();
      }
      inputs[name] = std::move(a);
    }
  }
  for (auto in : g.inputs())
    if (!inputs.count(g.value(in).name) && g.value(in).name != graph::kSequenceMaskInput)
      return invalid_argument("input '" + g.value(in).name + "' (" +
                              graph::type_string(g.type(in)) + ") has no --input; pass --input " +
                              g.value(in).name + "=x.npy, =photo.jpg or =random");
  return inputs;
}

Status report_outputs(const graph::Graph& g, const std::vector<graph::Tensor>& outputs,
                      const std::vector<std::string>& paths) {
  // Fewer paths than outputs write the first ones (a decoder's logits before its cache).
  if (paths.size() > outputs.size())
    return invalid_argument("--output was given " + std::to_string(paths.size()) +
                            " times; the model has " + std::to_string(outputs.size()) + " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& t = outputs[i];
    double lo = INFINITY, hi = -INFINITY;
    int64_t arg = 0;
    for (int64_t k = 0; k < t.size(); ++k) {
      lo = std::min(lo, t.at(k));
      if (t.at(k) > hi) hi = t.at(k), arg = k;
    }
    std::printf("output %zu '%s': %s, min %.5g, max %.5g at flat index %lld\n", i,
                g.output_name(i).c_str(), type_string(t.type()).c_str(), lo, hi,
                static_cast<long long>(arg));
    if (i < paths.size()) {
      TT_RETURN_IF_ERROR(write_npy(paths[i], t));
      std::printf("wrote %s\n", paths[i].c_str());
    }
  }
  return ok_status();
}

Expected<schedule_space::Precision> model_precision(const ModelOptions& flags,
                                                    const std::string& target_spec) {
  if (flags.precision.empty()) return schedule_space::Precision::kFloat32;
  TT_ASSIGN_OR_RETURN(const schedule_space::Precision p,
                      schedule_space::parse_float_precision(flags.precision));
  const std::string target = target_spec.empty() ? flags.target : target_spec;
  if (schedule_space::is_reduced_float(p) && target.rfind("cuda", 0) != 0)
    return invalid_argument(
        "--precision " + flags.precision +
        " runs on a CUDA target's tensor cores (sm_80 or newer); the target is '" +
        (target.empty() ? std::string("llvm") : target) + "'");
  return p;
}

namespace {

Expected<driver::CompileOptions> compile_options(const ModelOptions& flags, int threads,
                                                 bool layout_aware, bool use_graph_best,
                                                 driver::NodeKernelObserver on_node_kernel) {
  driver::CompileOptions options;
  options.target = flags.target;
  options.gpu_blocked_layout = flags.gpu_blocked;
  options.opt_level = flags.opt_level;
  options.threads = threads;
  options.records = flags.records;
  options.device_key = flags.device_key;
  options.layout_aware = layout_aware;
  options.use_graph_best = use_graph_best;
  options.borrow_configs = !flags.no_borrow;
  TT_ASSIGN_OR_RETURN(options.algorithms, algorithm_filter(flags));
  options.integer_kernels = !flags.no_int8;
  options.fuse_attention = !flags.no_fuse_attention;
  TT_ASSIGN_OR_RETURN(options.precision, model_precision(flags));
  options.on_node_kernel = std::move(on_node_kernel);
  if (flags.print_after_each) {
    options.after_pass = [](const std::string& pass, const graph::Graph& g) {
      std::printf("=== after %s ===\n%s\n", pass.c_str(), graph::print_graph(g).c_str());
    };
  }
  return options;
}

}  // namespace

Expected<runtime::CompiledNetwork> compile_model(const ModelOptions& flags, int threads,
                                                 bool layout_aware, bool use_graph_best,
                                                 driver::NodeKernelObserver on_node_kernel) {
  TT_ASSIGN_OR_RETURN(graph::Graph model, load_model(flags));
  TT_ASSIGN_OR_RETURN(auto options, compile_options(flags, threads, layout_aware, use_graph_best,
                                                    std::move(on_node_kernel)));
  return driver::compile_network(model, options);
}

Expected<graph::SequencePlan> plan_model_range(const ModelOptions& flags) {
  TT_ASSIGN_OR_RETURN(auto range, sequence_range(flags));
  if (!range) return invalid_argument("no --input-shape gives a range (NAME=1x1..512)");
  return graph::plan_sequence_range(
      *range, [&](int64_t length) { return load_model_at_length(flags, length); });
}

Expected<std::string> compile_ranged_model(const ModelOptions& flags, int threads,
                                           bool layout_aware, bool use_graph_best,
                                           const RangedProgress& progress) {
  TT_ASSIGN_OR_RETURN(graph::SequencePlan plan, plan_model_range(flags));
  TT_ASSIGN_OR_RETURN(auto options,
                      compile_options(flags, threads, layout_aware, use_graph_best, {}));
  runtime::RangedArtifactWriter writer(plan);
  TT_ASSIGN_OR_RETURN(const auto buckets, graph::buckets_of(plan.range));
  for (size_t i = 0; i < buckets.size(); ++i) {
    TT_ASSIGN_OR_RETURN(graph::Graph model, load_model_at_length(flags, buckets[i]));
    TT_ASSIGN_OR_RETURN(graph::Graph masked, graph::mask_sequence_padding(model, plan, buckets[i]));
    auto net = driver::compile_network(masked, options);
    if (!net)
      return Error{net.error().code,
                   "bucket " + std::to_string(buckets[i]) + ": " + net.error().message};
    if (progress) progress(i, buckets.size(), buckets[i], *net);
    writer.add(buckets[i], std::move(*net));
  }
  return writer.finish();
}

}  // namespace tensortune::workflow
