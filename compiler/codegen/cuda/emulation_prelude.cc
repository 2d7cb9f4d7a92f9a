#include "compiler/codegen/cuda/emulation_prelude.h"

namespace tensortune::codegen::cuda {

// Fibers: every thread of a block gets a stack and a context; the scheduler resumes each
// unfinished thread in turn until it reaches __syncthreads() or returns. A round in which some
// threads wait at a barrier while others have returned is a divergent barrier (undefined on a
// GPU): reported, never waited on. Everything is thread_local so that kernels emulated on
// several OS threads at once do not share state; a block's fibers share one OS thread, so
// `__shared__` (static thread_local) is shared by exactly the threads of the running block.
//
// On x86-64 a context is a stack pointer, and a switch saves only what the System V ABI has a
// callee keep (rbx, rbp, r12-r15, MXCSR and the x87 control word): glibc's swapcontext also
// saves the signal mask, a system call at every barrier and mma.sync of every emulated thread,
// a fifth of an emulated ResNet-50's time. Elsewhere the contexts are ucontexts.
const char kEmulationPrelude[] = R"PRELUDE(
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

struct tt_uint3 { unsigned x, y, z; };
static thread_local tt_uint3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local
// A kernel's dynamic shared memory: its size is known when the kernel is written, so a static
// array of it (the GPU form is extern __shared__, sized at launch).
#define TT_DYNAMIC_SHARED(type, name, count) static thread_local type name[count]
#define __ldg(p) (*(p))
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };

namespace tt_emu {
#if defined(__x86_64__)
struct Context {
  void* sp;
};
extern "C" __attribute__((visibility("hidden"))) void tt_emu_switch(void** save_sp, void* load_sp);
// Pushes the callee-saved registers and the two control words on the running stack, stores its
// pointer through rdi, loads rsi's stack and pops the same from it; `ret` resumes that context
// where it switched away (or, the first time, at its entry: see make_context).
asm(R"ASM(
  .text
  .p2align 4
  .globl tt_emu_switch
  .hidden tt_emu_switch
  .type tt_emu_switch, @function
tt_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tt_emu_switch, .-tt_emu_switch
)ASM");
static inline void switch_context(Context* from, Context* to) { tt_emu_switch(&from->sp, to->sp); }
// A stack that tt_emu_switch pops into a call of entry: the frame it restores (zero registers,
// this thread's control words), entry as the return address, and a null return address for entry
// itself (which never returns) that leaves the stack as a call would (rsp + 8 a multiple of 16).
static inline void make_context(Context* c, char* stack, size_t bytes, void (*entry)()) {
  void** sp = reinterpret_cast<void**>(reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15));
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(entry);
  for (int r = 0; r < 6; ++r) *--sp = nullptr;
  unsigned mxcsr;
  unsigned short x87;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87));
  --sp;
  memcpy(sp, &mxcsr, 4);
  memcpy(reinterpret_cast<char*>(sp) + 4, &x87, 2);
  c->sp = sp;
}
#else
struct Context {
  ucontext_t uc;
};
static inline void switch_context(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
static inline void make_context(Context* c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = bytes;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, entry, 0);
}
#endif

// A launcher argument: the buffer as whichever pointer type the kernel declares (float, or the
// bytes a quantizing epilogue stores).
struct any_ptr {
  float* p;
  template <class T>
  operator T*() const { return reinterpret_cast<T*>(p); }
};
// Where a fiber waits: a block's barrier, or a warp-collective instruction (mma.sync), which
// its warp's 32 lanes enter together as the PTX ISA requires (.aligned).
enum Wait { kBarrier = 1, kWarpCollective = 2 };
// A cp.async a thread issued and has not waited for: the copy happens at the wait that
// completes its group (reading the destination before then sees what was there, as a kernel
// that forgets the wait may on a GPU).
struct PendingCopy {
  void* dst;
  const void* src;
  int bytes, valid;
  long long group;
};
struct Fiber {
  Context context;
  bool done, at_barrier;
  int wait;
  long long collectives;  // warp-collective instructions entered: the exchange slot's parity
  PendingCopy* pending;   // cp.async copies not yet waited for
  int pending_count, pending_capacity;
  long long committed;  // cp.async groups committed
};
// What a warp's lanes hand a collective: mma.sync's A and B fragment registers. Two slots by
// parity, so that lanes entering the next collective never overwrite the registers others are
// still reading from this one (every lane reads them in the round after all have written).
struct WarpExchange {
  unsigned a[32][4], b[32][2];
};
static thread_local WarpExchange (*exchange)[2];
static thread_local Fiber* fibers;
static thread_local int current;
static thread_local Context scheduler;
static thread_local void (*body)();
static thread_local char message[160];

// A fiber's entry: it is never resumed once done, so it never returns.
static void trampoline() {
  body();
  fibers[current].done = true;
  switch_context(&fibers[current].context, &scheduler);
  abort();
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
  exchange = static_cast<WarpExchange(*)[2]>(calloc((threads + 31) / 32, sizeof(WarpExchange[2])));
  const char* error = nullptr;
  for (long long b = dims[6]; b < dims[7] && !error; ++b) {
    set_block(b);
    for (long long t = 0; t < threads; ++t) {
      Fiber& f = fibers[t];
      make_context(&f.context, stacks + t * stack_bytes, stack_bytes, trampoline);
      f.done = false;
      f.collectives = 0;
      f.pending_count = 0;
      f.committed = 0;
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
        switch_context(&scheduler, &f.context);
      }
      int kinds = 0;
      for (long long t = 0; t < threads; ++t) {
        waiting += fibers[t].at_barrier && !fibers[t].done;
        finished += fibers[t].done;
        if (fibers[t].at_barrier && !fibers[t].done) kinds |= fibers[t].wait;
      }
      if (finished == threads) break;
      if (kinds == (kBarrier | kWarpCollective)) {
        snprintf(message, sizeof message,
                 "block (%u, %u, %u): some threads wait at __syncthreads() while others enter a "
                 "warp-collective mma.sync (divergent control flow)", blockIdx.x, blockIdx.y,
                 blockIdx.z);
        error = message;
        break;
      }
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
  for (long long t = 0; t < threads; ++t) free(fibers[t].pending);
  free(fibers);
  free(exchange);
  fibers = nullptr;
  exchange = nullptr;
  return error;
}

static inline void wait_for(Wait kind) {
  Fiber& f = fibers[current];
  f.at_barrier = true;
  f.wait = kind;
  switch_context(&f.context, &scheduler);
}

// The calling lane's slot of its warp's exchange for its next collective, after all the warp's
// lanes have filled theirs (a lane's registers are copied in before it waits).
static inline const WarpExchange& exchange_fragments(const unsigned* a, int a_regs,
                                                     const unsigned* b) {
  const int lane = current % 32;
  Fiber& f = fibers[current];
  WarpExchange& x = exchange[current / 32][f.collectives++ & 1];
  for (int i = 0; i < a_regs; ++i) x.a[lane][i] = a[i];
  x.b[lane][0] = b[0];
  x.b[lane][1] = b[1];
  wait_for(kWarpCollective);
  return x;
}

static inline float from_bits(unsigned b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static inline unsigned to_bits(float f) {
  unsigned b;
  memcpy(&b, &f, 4);
  return b;
}

// An IEEE half's bits as a float (exact: every half is a float). Bit moves, not ldexpf: an
// emulated m16n8k16 converts 128 halves per lane.
static inline float half_value(unsigned h) {
  const unsigned sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    const float v = float(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (e == 31) return from_bits(sign | 0x7F800000u | (m << 13));  // infinity or NaN
  return from_bits(sign | ((e + 112) << 23) | (m << 13));         // rebias 15 -> 127
}
static inline float bf16_value(unsigned h) { return from_bits((h & 0xFFFF) << 16); }
// What the tensor cores read of a .tf32 register: the sign, exponent and upper 10 mantissa bits
// (the low 13 bits are not part of the format and are ignored).
static inline float tf32_value(unsigned b) { return from_bits(b & 0xFFFFE000u); }

// D = A B + C of one m16n8k16 (float16 or bfloat16 inputs) for the calling lane's four C
// elements, from the fragments the PTX ISA assigns each lane (g = lane / 4, t = lane % 4):
// A's register r holds rows g (r even) or g + 8 (r odd) at columns 2t, 2t + 1 (r < 2) or
// 2t + 8, 2t + 9, low half first; B's register r holds rows 2t, 2t + 1 (+ 8 for r = 1) of
// column g; C's element i is row g + 8 (i / 2), column 2t + i % 2. Products are exact in
// float; they are summed into C in order of k in float.
template <float (*value)(unsigned)>
static inline void mma_m16n8k16(float* d, const unsigned* a, const unsigned* b) {
  const WarpExchange& x = exchange_fragments(a, 4, b);
  const int lane = current % 32, g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 16; ++k) {
      const int kk = k % 8;
      const unsigned areg = x.a[(row % 8) * 4 + kk / 2][(row >= 8) + 2 * (k >= 8)];
      const unsigned breg = x.b[col * 4 + kk / 2][k / 8];
      acc += value((areg >> (16 * (k & 1))) & 0xFFFF) * value((breg >> (16 * (k & 1))) & 0xFFFF);
    }
    d[i] = acc;
  }
}
}  // namespace tt_emu

static inline void __syncthreads() { tt_emu::wait_for(tt_emu::kBarrier); }

// cp.async (PTX 9.7.9.25.3): `Bytes` copied from global to shared memory, the bytes past
// `valid` zero; the copy is deferred to the cp.async.wait_group that completes its group.
template <int Bytes>
static inline void tt_cp_async(void* dst, const void* src, int valid) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  tt_emu::Fiber& f = tt_emu::fibers[tt_emu::current];
  if (f.pending_count == f.pending_capacity) {
    f.pending_capacity = f.pending_capacity ? 2 * f.pending_capacity : 64;
    f.pending = static_cast<tt_emu::PendingCopy*>(
        realloc(f.pending, f.pending_capacity * sizeof(tt_emu::PendingCopy)));
  }
  f.pending[f.pending_count++] = {dst, src, Bytes, valid, f.committed};
}
// cp.async.commit_group: the copies issued since the last commit form a group.
static inline void tt_cp_async_commit() { ++tt_emu::fibers[tt_emu::current].committed; }
// cp.async.wait_group N: every group but the N most recent complete (the thread's own copies;
// other threads see them after a barrier, as on a GPU).
template <int N>
static inline void tt_cp_async_wait() {
  tt_emu::Fiber& f = tt_emu::fibers[tt_emu::current];
  int kept = 0;
  for (int i = 0; i < f.pending_count; ++i) {
    tt_emu::PendingCopy& c = f.pending[i];
    if (c.group < f.committed - N) {
      memcpy(c.dst, c.src, c.valid);
      memset(static_cast<char*>(c.dst) + c.valid, 0, c.bytes - c.valid);
    } else {
      f.pending[kept++] = c;
    }
  }
  f.pending_count = kept;
}

// CUDA's bit reinterpretation intrinsic (3xtf32's split reads a TF32 register as a float).
static inline float __uint_as_float(unsigned b) { return tt_emu::from_bits(b); }
// The kernels' tensor-core helpers (their GPU forms are inline PTX behind __CUDA_ARCH__).
// cvt.rna.tf32.f32: half a TF32 ulp added to a finite value's bits, the low 13 cleared.
static inline unsigned tt_to_tf32(float x) {
  unsigned b = tt_emu::to_bits(x);
  if (isfinite(x)) b += 0x1000;
  return b & 0xFFFFE000u;
}
// cvt.rn.f16.f32: to nearest even, past 65504 + half an ulp to infinity, subnormals kept.
static inline unsigned short tt_to_f16(float f) {
  const unsigned x = tt_emu::to_bits(f), sign = (x >> 16) & 0x8000, a = x & 0x7FFFFFFF;
  if (a >= 0x7F800000) return sign | (a > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (a >= 0x477FF000) return sign | 0x7C00;  // 65520 and above
  if (a < 0x38800000)  // below 2^-14: multiples of 2^-24 (exact scaling, ties to even)
    return sign | unsigned(nearbyintf(tt_emu::from_bits(a) * 16777216.0f));
  unsigned h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3FF);
  const unsigned rest = a & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves to the exponent
  return sign | h;
}
// cvt.rn.bf16.f32: to nearest even; NaN stays a (quiet) NaN.
static inline unsigned short tt_to_bf16(float f) {
  const unsigned x = tt_emu::to_bits(f);
  if (isnan(f)) return ((x >> 16) | 0x40) & 0xFFFF;
  return (x + 0x7FFF + ((x >> 16) & 1)) >> 16;
}
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for the calling lane: A's register r holds
// row g (r even) or g + 8 (r odd) at column t (r < 2) or t + 4; B's register r holds row t
// (+ 4 for r = 1) of column g; C as m16n8k16's.
static inline void tt_mma_m16n8k8_tf32(float* d, const unsigned* a, const unsigned* b) {
  using namespace tt_emu;
  const WarpExchange& x = exchange_fragments(a, 4, b);
  const int lane = current % 32, g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 8; ++k)
      acc += tf32_value(x.a[(row % 8) * 4 + k % 4][(row >= 8) + 2 * (k >= 4)]) *
             tf32_value(x.b[col * 4 + k % 4][k / 4]);
    d[i] = acc;
  }
}
static inline void tt_mma_m16n8k16_f16(float* d, const unsigned* a, const unsigned* b) {
  tt_emu::mma_m16n8k16<tt_emu::half_value>(d, a, b);
}
static inline void tt_mma_m16n8k16_bf16(float* d, const unsigned* a, const unsigned* b) {
  tt_emu::mma_m16n8k16<tt_emu::bf16_value>(d, a, b);
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
         (kernel.source.find("__syncthreads") == std::string::npos &&
                  kernel.source.find("tt_mma_") == std::string::npos
              ? "false"
              : "true") +
         ");\n}\n";
}

}  // namespace tensortune::codegen::cuda
