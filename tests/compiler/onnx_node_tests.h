#pragma once
/// \file
/// Runs ONNX's own backend node tests (Debian's libonnx-testdata: model.onnx plus
/// test_data_set_*/input_*.pb and output_*.pb) through our importer and a runner (the
/// interpreter here; compiled code later), against the stored outputs.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::testing {

/// Where Debian installs the node tests; TT_ONNX_NODE_DIR overrides.
std::string onnx_node_test_dir();

/// The test folders of the operator families the front end supports, sorted.
std::vector<std::string> node_test_folders_in_scope();

enum class NodeTestStatus { kPassed, kFailed, kSkipped };

struct NodeTestOutcome {
  std::string name;
  NodeTestStatus status = NodeTestStatus::kSkipped;
  std::string detail;  ///< why it failed or was skipped
};

using GraphRunner = std::function<Expected<std::vector<graph::Tensor>>(
    const graph::Graph&, const std::map<std::string, graph::Tensor>&)>;

/// One test folder. Inputs that are integers, rank 0, or Resize's "scales" and "roi" are
/// frozen as constants (as TVM's freeze_params): our shapes are static, so shape operands must
/// be known at import.
/// Unsupported operators, dtypes or attributes (kUnimplemented) make the test skipped;
/// any other import error or a mismatch fails it. Tolerance: ONNX's, |a-b| <= 1e-7 +
/// 1e-3 |b|, loosened to 1e-5 absolute.
NodeTestOutcome run_node_test(const std::string& folder, const GraphRunner& runner);

}  // namespace tensortune::testing
