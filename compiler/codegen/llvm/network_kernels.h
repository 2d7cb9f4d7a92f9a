#pragma once
/// \file
/// Kernels of whole networks: one per fusion group, compiled together into one object file
/// that an artifact carries and a later process loads. LLVM stays behind this header.
///
/// Every network kernel has one ABI:
///   void kernel(const float* const* args, int64_t begin, int64_t end)
/// computing the slice [begin, end) of its parallel loop. The args are, by kind:
///   conv2d_NCHWc  data, weight (OIHW[x]i[y]o; depthwise O(1)HW(1)i[y]o), out, then the
///                 epilogue's operands
///   dense         data [M, K], weight (packed N/bn, K, bn, or plain N, K), out, operands
///   elementwise   out, then the operands in program order
///   max pool      out, data
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/codegen/llvm/cpu_description.h"
#include "support/error.h"

namespace tensortune::codegen {

/// The parallel loop extent of a kernel (what [begin, end) ranges over).
int64_t parallel_extent(const NetworkKernelSpec& spec);

/// A stable text of the spec: equal texts compile to equal code (used to share kernels).
std::string spec_key(const NetworkKernelSpec& spec);

/// Emits every kernel into one module, optimises it and returns an ELF object for the host.
Expected<std::string> compile_network_object(const std::vector<NamedKernel>& kernels,
                                             int vector_lanes);

using NetworkKernelFn = void (*)(const float* const*, int64_t, int64_t);

/// Object code linked into this process (ORC); its kernels live as long as this does.
class LoadedObject {
 public:
  static Expected<LoadedObject> load(const std::string& object_code);
  /// kNotFound naming the symbol.
  Expected<NetworkKernelFn> lookup(const std::string& symbol) const;

  struct Impl;

 private:
  explicit LoadedObject(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace tensortune::codegen
