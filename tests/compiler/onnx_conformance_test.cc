// ONNX's backend node tests for the operators the front end supports, imported and run by
// the reference interpreter against ONNX's stored outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/interpreter.h"
#include "tests/compiler/onnx_node_tests.h"

namespace tensortune::testing {
namespace {

namespace fs = std::filesystem;

// The tests the issue names: a skip is a failure for these.
const std::set<std::string> kMustPass = {
    "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_basic_conv_with_padding",
    "test_basic_conv_without_padding",
    "test_maxpool_2d_same_upper",
    "test_maxpool_2d_same_lower",
    "test_maxpool_2d_pads",
    "test_averagepool_2d_same_upper",
    "test_averagepool_2d_same_lower",
    "test_averagepool_2d_pads_count_include_pad",
    "test_globalaveragepool",
    "test_gemm_all_attributes",
    "test_gemm_default_no_bias",
    "test_gemm_transposeA",
    "test_gemm_transposeB",
    "test_matmul_2d",
    "test_matmul_3d",
    "test_matmul_4d",
    "test_batchnorm_example",
    "test_batchnorm_epsilon",
    "test_softmax_axis_1",
    "test_reshape_negative_dim",
    "test_slice",
    "test_gather_0",
    "test_unsqueeze_axis_0",
    "test_hardswish",
};

TEST(OnnxNodeTests, SupportedOperatorsMatchOnnxOutputsInTheInterpreter) {
  const std::string dir = onnx_node_test_dir();
  if (!fs::exists(dir))
    GTEST_SKIP() << "ONNX node tests not installed at " << dir
                 << " (Debian package libonnx-testdata)";
  const std::vector<std::string> folders = node_test_folders_in_scope();
  const GraphRunner interpreter = [](const graph::Graph& g,
                                     const std::map<std::string, graph::Tensor>& in) {
    return graph::interpret(g, in);
  };
  int passed = 0, failed = 0, skipped = 0;
  std::ostringstream skipped_list, failed_list;
  std::set<std::string> passed_names;
  for (const auto& folder : folders) {
    const NodeTestOutcome o = run_node_test(folder, interpreter);
    switch (o.status) {
      case NodeTestStatus::kPassed:
        ++passed;
        passed_names.insert(o.name);
        break;
      case NodeTestStatus::kFailed:
        ++failed;
        failed_list << "  FAILED  " << o.name << ": " << o.detail << "\n";
        break;
      case NodeTestStatus::kSkipped:
        ++skipped;
        skipped_list << "  skipped " << o.name << ": " << o.detail << "\n";
        break;
    }
  }
  std::cout << "ONNX node tests in scope (" << dir << "): " << folders.size() << "; ran "
            << passed + failed << ", passed " << passed << ", failed " << failed << ", skipped "
            << skipped << "\n"
            << failed_list.str() << skipped_list.str();
  EXPECT_EQ(failed, 0) << failed_list.str();
  for (const auto& name : kMustPass) EXPECT_TRUE(passed_names.count(name)) << name;
}

// Export: every node test that passes imported is exported from our graph to ONNX (opset 17),
// imported again and run against the same stored outputs. A graph with an operator the
// exporter does not map is counted and named, never a failure; a wrong export is.
TEST(OnnxNodeTests, ImportedGraphsRoundTripThroughExport) {
  if (!fs::exists(onnx_node_test_dir())) GTEST_SKIP() << "ONNX node tests not installed";
  const std::string path =
      (fs::temp_directory_path() / ("tt_roundtrip_" + std::to_string(::getpid()) + ".onnx"))
          .string();
  const GraphRunner round_trip =
      [&](const graph::Graph& g,
          const std::map<std::string, graph::Tensor>& in) -> Expected<std::vector<graph::Tensor>> {
    TT_RETURN_IF_ERROR(frontend::export_onnx(g, path));
    auto back = frontend::import_onnx_file(path);
    if (!back) return back.error().with_context("re-importing the export");
    return graph::interpret(*back, in);
  };
  int passed = 0, not_exported = 0;
  std::map<std::string, int> missing;  // "cannot export operator X" -> tests
  std::ostringstream failed_list;
  for (const auto& folder : node_test_folders_in_scope()) {
    const NodeTestOutcome o = run_node_test(folder, round_trip);
    if (o.status == NodeTestStatus::kPassed) {
      ++passed;
    } else if (o.status == NodeTestStatus::kFailed) {
      const auto at = o.detail.find("cannot export operator ");
      if (at != std::string::npos) {
        ++not_exported;
        ++missing[o.detail.substr(at + 23, o.detail.find(' ', at + 23) - at - 23)];
      } else {
        failed_list << "  FAILED  " << o.name << ": " << o.detail << "\n";
      }
    }
  }
  fs::remove(path);
  std::cout << "ONNX node tests through export and back: " << passed << " pass, " << not_exported
            << " have an operator the exporter does not map:";
  for (const auto& [op, n] : missing) std::cout << " " << op << " (" << n << ")";
  std::cout << "\n" << failed_list.str();
  EXPECT_TRUE(failed_list.str().empty()) << failed_list.str();
  EXPECT_GT(passed, 400);
}

}  // namespace
}  // namespace tensortune::testing
