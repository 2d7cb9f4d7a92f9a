#include "compiler/codegen/cuda/emulation_prelude.h"

namespace tensortune::codegen::cuda {

// Fibers: every thread of a block gets a stack and a ucontext; the scheduler resumes each
// unfinished thread in turn until it reaches __syncthreads() or returns. A round in which some
// threads wait at a barrier while others have returned is a divergent barrier (undefined on a
// GPU): reported, never waited on. Everything is thread_local so that kernels emulated on
// several OS threads at once do not share state; a block's fibers share one OS thread, so
// `__shared__` (static thread_local) is shared by exactly the threads of the running block.
const char kEmulationPrelude[] = R"PRELUDE(
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

struct tt_uint3 { unsigned x, y, z; };
static thread_local tt_uint3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
#define __ldg(p) (*(p))

namespace tt_emu {
// A launcher argument: the buffer as whichever pointer type the kernel declares (float, or the
// bytes a quantizing epilogue stores).
struct any_ptr {
  float* p;
  template <class T>
  operator T*() const { return reinterpret_cast<T*>(p); }
};
struct Fiber {
  ucontext_t context;
  bool done, at_barrier;
};
static thread_local Fiber* fibers;
static thread_local int current;
static thread_local ucontext_t scheduler;
static thread_local void (*body)();
static thread_local char message[160];

static void trampoline() {
  body();
  fibers[current].done = true;  // returns to uc_link: the scheduler
}

// A kernel without __syncthreads(): its threads are independent, so each runs to the end in
// turn on this stack, without fibers (the element-wise and pooling kernels of a network).
static void set_block(long long b) {
  blockIdx = {unsigned(b % gridDim.x), unsigned(b / gridDim.x % gridDim.y),
              unsigned(b / ((long long)gridDim.x * gridDim.y))};
}

static const char* run_without_barriers(long long first, long long end) {
  const long long threads = (long long)blockDim.x * blockDim.y * blockDim.z;
  for (long long b = first; b < end; ++b) {
    set_block(b);
    for (long long t = 0; t < threads; ++t) {
      threadIdx = {unsigned(t % blockDim.x), unsigned(t / blockDim.x % blockDim.y),
                   unsigned(t / (blockDim.x * blockDim.y))};
      body();
    }
  }
  return nullptr;
}

// dims: grid x, y, z, block x, y, z, then the blocks to run, [dims[6], dims[7]) in linear order
// (x fastest): a launch may be split over host threads, each running a range of blocks.
static const char* run(const long long* dims, bool barriers) {
  gridDim = {unsigned(dims[0]), unsigned(dims[1]), unsigned(dims[2])};
  blockDim = {unsigned(dims[3]), unsigned(dims[4]), unsigned(dims[5])};
  if (!barriers) return run_without_barriers(dims[6], dims[7]);
  const long long threads = dims[3] * dims[4] * dims[5];
  const size_t stack_bytes = 64 * 1024;
  fibers = static_cast<Fiber*>(calloc(threads, sizeof(Fiber)));
  char* stacks = static_cast<char*>(malloc(threads * stack_bytes));
  const char* error = nullptr;
  for (long long b = dims[6]; b < dims[7] && !error; ++b) {
    set_block(b);
    for (long long t = 0; t < threads; ++t) {
      Fiber& f = fibers[t];
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = stacks + t * stack_bytes;
      f.context.uc_stack.ss_size = stack_bytes;
      f.context.uc_link = &scheduler;
      makecontext(&f.context, trampoline, 0);
      f.done = false;
    }
    for (;;) {
      long long waiting = 0, finished = 0;
      for (long long t = 0; t < threads; ++t) {
        Fiber& f = fibers[t];
        if (f.done) continue;
        f.at_barrier = false;
        current = int(t);
        threadIdx = {unsigned(t % blockDim.x), unsigned(t / blockDim.x % blockDim.y),
                     unsigned(t / (blockDim.x * blockDim.y))};
        swapcontext(&scheduler, &f.context);
      }
      for (long long t = 0; t < threads; ++t) {
        waiting += fibers[t].at_barrier && !fibers[t].done;
        finished += fibers[t].done;
      }
      if (finished == threads) break;
      if (finished > 0 && waiting > 0) {
        snprintf(message, sizeof message,
                 "block (%u, %u, %u): %lld threads wait at __syncthreads() while %lld have "
                 "returned (a divergent barrier)", blockIdx.x, blockIdx.y, blockIdx.z, waiting,
                 finished);
        error = message;
        break;
      }
    }
  }
  free(stacks);
  free(fibers);
  fibers = nullptr;
  return error;
}
}  // namespace tt_emu

static inline void __syncthreads() {
  tt_emu::Fiber& f = tt_emu::fibers[tt_emu::current];
  f.at_barrier = true;
  swapcontext(&f.context, &tt_emu::scheduler);
}
#line 1 "kernel.cu"
)PRELUDE";

std::string emulation_launcher(const CudaKernelSource& kernel) {
  std::string call = kernel.entry + "(";
  for (int i = 0; i < kernel.arg_count; ++i)
    call += (i ? ", tt_emu::any_ptr{tt_args_" : "tt_emu::any_ptr{tt_args_") + kernel.entry + "[" +
            std::to_string(i) + "]}";
  call += ")";
  const std::string& e = kernel.entry;
  return "\nstatic thread_local float* const* tt_args_" + e + ";\nstatic void tt_body_" + e +
         "() { " + call + "; }\nextern \"C\" const char* tt_emulate_" + e +
         "(float* const* args, const long long* dims) {\n  tt_args_" + e +
         " = args;\n  tt_emu::body = tt_body_" + e + ";\n  return tt_emu::run(dims, " +
         (kernel.source.find("__syncthreads") == std::string::npos ? "false" : "true") + ");\n}\n";
}

}  // namespace tensortune::codegen::cuda
