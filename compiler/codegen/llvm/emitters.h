#pragma once
/// \file
/// Private to compiler/codegen/llvm: the IR emitters of each template. Each adds one function
/// with the common kernel ABI (see compiler/kernel.h) to a module.

#include <string>

#include "compiler/kernel.h"
#include "schedule_space/conv2d_nchwc_template.h"
#include "schedule_space/dense_template.h"

namespace llvm {
class Module;
}

namespace tensortune::compiler::codegen {

/// Register-tiled direct convolution in NCHW[x]c. The fused (n, oc_chunk, oh_tile) loop is the
/// parallel one; each output tile of reg_h x reg_n positions x oc_bn channels keeps its
/// accumulators in vector registers across the whole (ic, kh, kw) reduction. Padding is handled
/// without a padded copy: tiles touching the border are emitted separately with the
/// out-of-range taps removed at compile time, interior tiles carry no checks at all.
void emit_conv2d_nchwc(llvm::Module& m, const std::string& name,
                       const schedule_space::Conv2dWorkload& w,
                       const schedule_space::Conv2dSchedule& s, int lanes,
                       const KernelOptions& options);

/// Dense with packed weights (vectorised over output units) or plain weights (vectorised over
/// the reduction axis).
void emit_dense(llvm::Module& m, const std::string& name, const schedule_space::DenseWorkload& w,
                const schedule_space::DenseSchedule& s, int lanes, const KernelOptions& options);

}  // namespace tensortune::compiler::codegen
