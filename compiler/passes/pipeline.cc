#include "compiler/passes/passes.h"

namespace tensortune::passes {

std::vector<Pass> standard_pipeline(PipelineOptions options) {
  std::vector<Pass> passes;
  if (options.integer_ops) passes.push_back(fake_quantization_to_integer(options.integer_ops));
  for (Pass p : {simplify_inference(), fold_pad(), fold_constant(),
                 fold_scale_axis(options.fold_scale), dense_from_matmul()})
    passes.push_back(std::move(p));
  // Before PadGemmShapes, whose pads and slices would hide the matmuls around the softmax.
  if (options.attention) passes.push_back(fuse_attention(options.attention));
  if (options.pad_gemm_shapes) passes.push_back(pad_gemm_shapes());
  // After DenseFromMatMul and PadGemmShapes: it moves GELU up through their reshapes and slices.
  passes.push_back(fuse_gelu());
  passes.push_back(fuse_layer_norm());
  if (options.alter_layout) passes.push_back(alter_op_layout(options.layout));
  passes.push_back(fold_constant());
  // After a first DeadCodeElimination: it counts each value's readers, and the importer's
  // quantizing casts that FakeQuantizationToInteger replaced still read the residuals.
  if (options.fuse.dequantize_in_epilogue)
    for (Pass p : {dead_code_elimination(), residuals_as_bytes()}) passes.push_back(std::move(p));
  for (Pass p : {dead_code_elimination(), fuse_ops(options.fuse)}) passes.push_back(std::move(p));
  return passes;
}

}  // namespace tensortune::passes
