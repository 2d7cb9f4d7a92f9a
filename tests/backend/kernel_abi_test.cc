// The network kernel ABI (codegen/llvm/network_kernels.h): a kernel reads exactly the arguments
// its step passes. Each kernel of a compiled network is called with its argument array ending
// at a page that cannot be read, so a kernel that loads one argument more than the step gives
// (as conv kernels with relu did, declaring an operand for every epilogue step) faults here
// instead of reading whatever lies beyond the array.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "compiler/codegen/llvm/network_kernels.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/model_zoo.h"
#include "support/aligned_buffer.h"

namespace tensortune::driver {
namespace {

using runtime::ArgRef;
using runtime::CompiledNetwork;
using runtime::Step;

/// Calls every kernel step of `net` over its whole extent with its pointers stored right
/// before an unreadable page. Buffers hold the constants' values; the rest is zeros.
void call_every_kernel_against_a_guard_page(const CompiledNetwork& net) {
  auto object = codegen::LoadedObject::load(net.object_code);
  ASSERT_TRUE(object) << object.error().message;
  const graph::Graph& g = net.graph;
  std::vector<std::unique_ptr<AlignedBuffer>> storage;
  auto buffer = [&](const void* init, int64_t bytes) {
    storage.push_back(std::make_unique<AlignedBuffer>(std::max<int64_t>(bytes / 4 + 16, 16)));
    if (init && bytes > 0) std::memcpy(storage.back()->data(), init, static_cast<size_t>(bytes));
    return static_cast<const float*>(storage.back()->data());
  };
  const long page = ::sysconf(_SC_PAGESIZE);
  void* pages =
      ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(::mprotect(static_cast<char*>(pages) + page, page, PROT_NONE), 0);
  int kernels = 0;
  for (const Step& s : net.steps) {
    if (s.kind != Step::Kind::kKernel) continue;
    auto fn = object->lookup(s.symbol);
    ASSERT_TRUE(fn) << fn.error().message;
    std::vector<const float*> args;
    for (const ArgRef& a : s.args) {
      if (a.kind == ArgRef::Kind::kParam) {
        const graph::Tensor& p = net.params.at(static_cast<size_t>(a.index));
        args.push_back(buffer(p.f32.data(), p.size() * 4));
        continue;
      }
      const auto v = static_cast<graph::ValueId>(a.index);
      const graph::Tensor* c = g.constant(v);
      args.push_back(buffer(c ? c->f32.data() : nullptr, graph::num_elements(g.type(v).shape) * 4));
    }
    auto** at_end = reinterpret_cast<const float**>(static_cast<char*>(pages) + page) -
                    static_cast<std::ptrdiff_t>(args.size());
    std::memcpy(at_end, args.data(), args.size() * sizeof(const float*));
    (*fn)(at_end, 0, s.extent);
    ++kernels;
  }
  ::munmap(pages, 2 * page);
  EXPECT_GT(kernels, 5);
}

TEST(KernelAbi, EveryKernelReadsOnlyTheArgumentsItsStepPasses) {
  // The child re-executes this test alone: a plain fork() could inherit a lock held by a thread
  // pool worker of an earlier test in the same process and hang.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const std::string name : {"resnet-18", "mobilenet-v1"}) {
    auto model = frontend::zoo_model(name, {1, 3, 32, 32});
    ASSERT_TRUE(model) << model.error().message;
    auto net = compile_network(*model, CompileOptions{});
    ASSERT_TRUE(net) << net.error().message;
    EXPECT_EXIT(
        {
          call_every_kernel_against_a_guard_page(*net);
          std::exit(::testing::Test::HasFailure() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "")
        << name << ": a kernel read past its arguments (or failed; see above)";
    bool relu_epilogue = false;  // the case that over-read: epilogue steps without operands
    for (const Step& s : net->steps)
      relu_epilogue |=
          s.kind == Step::Kind::kKernel && (s.label.find("+relu") != std::string::npos ||
                                            s.label.find("+clip") != std::string::npos);
    EXPECT_TRUE(relu_epilogue) << name;
  }
}

}  // namespace
}  // namespace tensortune::driver
