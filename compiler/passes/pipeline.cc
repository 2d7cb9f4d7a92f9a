#include "compiler/passes/passes.h"

namespace tensortune::passes {

std::vector<Pass> standard_pipeline(PipelineOptions options) {
  return {simplify_inference(),
          fold_constant(),
          fold_scale_axis(options.fold_scale),
          alter_op_layout(options.layout),
          fold_constant(),
          dead_code_elimination(),
          fuse_ops()};
}

}  // namespace tensortune::passes
