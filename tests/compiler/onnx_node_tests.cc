#include "tests/compiler/onnx_node_tests.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "compiler/frontend/onnx_io.h"

namespace tensortune::testing {

namespace fs = std::filesystem;

std::string onnx_node_test_dir() {
  if (const char* d = std::getenv("TT_ONNX_NODE_DIR")) return d;
  return "/usr/include/onnx/backend/test/data/node";
}

namespace {

// Test-name prefixes (after "test_") of the operator families in scope.
const std::vector<std::string> kFamilies = {
    "conv", "basic_conv", "maxpool", "averagepool", "globalaveragepool", "gemm", "matmul",
    "batchnorm", "relu", "clip", "sigmoid", "hardsigmoid", "hardswish", "add", "sub", "mul", "div",
    "flatten", "reshape", "transpose", "concat", "softmax", "shape", "cast", "slice", "gather",
    "unsqueeze", "squeeze", "identity", "dropout",
    // Real exported models' operators.
    "abs", "and", "argmax", "argmin", "ceil", "constant_pad", "constantofshape", "convtranspose",
    "resize", "upsample", "gather_elements", "depthtospace", "edge_pad", "elu", "equal", "erf",
    "exp", "expand", "floor", "gelu", "greater", "instancenorm", "layer_normalization", "leakyrelu",
    "less", "log", "max_", "mean", "min_", "mish", "neg", "not", "or", "pow", "prelu", "range",
    "reciprocal", "reduce_l1", "reduce_l2", "reduce_log_sum", "reduce_sum_square", "logsoftmax",
    "size", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "reflect_pad",
    "round", "selu", "softplus", "spacetodepth", "split", "sqrt", "sum", "tanh", "tile", "where",
    "mod", "xor",
    // Indexing.
    "scatternd", "top_k",
    // Linear quantization.
    "quantizelinear", "dequantizelinear", "qlinearconv", "qlinearmatmul"};

bool in_scope(const std::string& name) {
  for (const auto& f : kFamilies)
    if (name.rfind("test_" + f, 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<std::string> node_test_folders_in_scope() {
  std::vector<std::string> folders;
  const std::string dir = onnx_node_test_dir();
  if (!fs::exists(dir)) return folders;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && in_scope(e.path().filename().string()))
      folders.push_back(e.path().string());
  std::sort(folders.begin(), folders.end());
  return folders;
}

namespace {

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns (numpy has no
// bfloat16): read against a bfloat16 value, those bits are the bfloat16 numbers.
graph::Tensor as_bfloat16(const graph::Tensor& t) {
  graph::Tensor out = graph::Tensor::zeros(graph::DType::kBFloat16, t.shape);
  for (size_t i = 0; i < t.i64.size(); ++i) {
    const auto bits = static_cast<uint16_t>(t.i64[i]);
    char bytes[2];
    std::memcpy(bytes, &bits, 2);
    out.f32[i] = graph::float_from_bytes(graph::DType::kBFloat16, bytes);
  }
  return out;
}

std::string compare(const graph::Tensor& got, const graph::Tensor& reference, size_t index) {
  const std::string which = "output " + std::to_string(index);
  const graph::Tensor want =
      got.dtype == graph::DType::kBFloat16 && reference.dtype == graph::DType::kUInt16
          ? as_bfloat16(reference)
          : reference;
  if (got.dtype != want.dtype)
    return which + " has dtype " + graph::dtype_name(got.dtype) + ", expected " +
           graph::dtype_name(want.dtype);
  if (got.shape != want.shape)
    return which + " has shape [" + shape_to_string(got.shape) + "], expected [" +
           shape_to_string(want.shape) + "]";
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = got.at(i), b = want.at(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) && a == b) continue;
    if (!(std::abs(a - b) <= 1e-5 + 1e-3 * std::abs(b)))
      return which + "[" + std::to_string(i) + "] = " + std::to_string(a) + ", expected " +
             std::to_string(b);
  }
  return "";
}

NodeTestOutcome run_node_test_in(const std::string& folder, const GraphRunner& runner) {
  NodeTestOutcome outcome;
  outcome.name = fs::path(folder).filename().string();
  // ONNX 1.12 made these references by truncating float32 to bfloat16. ONNX's reference since
  // (helper.float32_to_bfloat16 with truncate=False), ONNX Runtime and the hardware's convert
  // instructions round to nearest even, as we do (Float16.*, support_test, checks that).
  if (outcome.name.find("FLOAT_to_BFLOAT16") != std::string::npos) {
    outcome.status = NodeTestStatus::kSkipped;
    outcome.detail =
        "ONNX 1.12's reference truncates to bfloat16; we round to nearest even, as ONNX's later "
        "reference and ONNX Runtime do";
    return outcome;
  }
  const std::string model = folder + "/model.onnx";
  auto input_names = frontend::onnx_model_inputs(model);
  if (!input_names) {
    outcome.status = input_names.error().code == ErrorCode::kUnimplemented
                         ? NodeTestStatus::kSkipped
                         : NodeTestStatus::kFailed;
    outcome.detail = input_names.error().message;
    return outcome;
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    outcome.detail = "no test_data_set folder";
    return outcome;
  }
  for (const auto& set : sets) {
    std::map<std::string, graph::Tensor> inputs;
    frontend::OnnxImportOptions options;
    for (size_t i = 0; i < input_names->size(); ++i) {
      const auto path = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(path)) continue;  // optional input left out
      auto t = frontend::read_onnx_tensor(path.string());
      if (t && t->dtype == graph::DType::kUInt16 &&
          (*input_names)[i].dtype == graph::DType::kBFloat16)
        t = as_bfloat16(*t);
      if (!t) {
        outcome.status = t.error().code == ErrorCode::kUnimplemented ? NodeTestStatus::kSkipped
                                                                     : NodeTestStatus::kFailed;
        outcome.detail = t.error().message;
        return outcome;
      }
      const std::string& name = (*input_names)[i].name;
      // Resize's scales and roi are float shape operands: initializers in real models.
      if (!graph::is_float(t->dtype) || t->shape.empty() || name == "scales" || name == "roi")
        options.frozen_inputs[name] = *t;
      else
        inputs[name] = *t;
      options.input_shapes[name] = t->shape;
    }
    for (const auto& [name, t] : options.frozen_inputs) options.input_shapes.erase(name);
    auto g = frontend::import_onnx_file(model, options);
    if (!g && g.error().message.find("--input-shape") != std::string::npos &&
        g.error().message.find("has rank") != std::string::npos) {
      // The test's data contradicts the model's declared input (ONNX 1.12's bfloat16 CastLike
      // tests give 'like' shape [1] for a declared [3,4]): not a test of us.
      outcome.status = NodeTestStatus::kSkipped;
      outcome.detail = "the test data disagrees with the model: " + g.error().message;
      return outcome;
    }
    if (!g) {
      outcome.status = g.error().code == ErrorCode::kUnimplemented ? NodeTestStatus::kSkipped
                                                                   : NodeTestStatus::kFailed;
      outcome.detail = g.error().message;
      return outcome;
    }
    auto got = runner(*g, inputs);
    if (!got) {
      outcome.status = NodeTestStatus::kFailed;
      outcome.detail = got.error().message;
      return outcome;
    }
    for (size_t k = 0; k < got->size(); ++k) {
      auto want =
          frontend::read_onnx_tensor((set / ("output_" + std::to_string(k) + ".pb")).string());
      if (!want) {
        outcome.status = want.error().code == ErrorCode::kUnimplemented ? NodeTestStatus::kSkipped
                                                                        : NodeTestStatus::kFailed;
        outcome.detail = "reference " + want.error().message;
        return outcome;
      }
      std::string diff = compare((*got)[k], *want, k);
      if (!diff.empty()) {
        outcome.status = NodeTestStatus::kFailed;
        outcome.detail = set.filename().string() + ": " + diff;
        return outcome;
      }
    }
  }
  outcome.status = NodeTestStatus::kPassed;
  return outcome;
}

}  // namespace

NodeTestOutcome run_node_test(const std::string& folder, const GraphRunner& runner) {
  NodeTestOutcome o = run_node_test_in(folder, runner);
  // Messages name files by full path; the folder is implied by the test name.
  for (size_t at; (at = o.detail.find(folder + "/")) != std::string::npos;)
    o.detail.erase(at, folder.size() + 1);
  return o;
}

}  // namespace tensortune::testing
