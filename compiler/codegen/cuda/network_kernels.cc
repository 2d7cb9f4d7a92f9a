// Implements network_kernels.h: element-wise, pooling and depthwise kernels of compiled networks.
#include "compiler/codegen/cuda/network_kernels.h"

#include <algorithm>
#include <limits>

#include "compiler/codegen/cuda/emitters.h"
#include "compiler/codegen/cuda/source_writer.h"

namespace tensortune::codegen::cuda {
namespace {

constexpr int64_t kThreads = kNetworkKernelThreads;
/// Enough blocks to fill any GPU; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = 4096;

/// A kernel of `total` output elements: the launch shape and the head of its loop over `i`.
CudaKernelSource grid_stride_kernel(const std::string& entry, const std::string& params,
                                    int64_t total, SourceWriter& src) {
  CudaKernelSource k;
  k.entry = entry;
  const int64_t threads = std::clamp<int64_t>(total, 1, kThreads);
  k.block = {threads, 1, 1};
  k.grid = {std::clamp<int64_t>((total + threads - 1) / threads, 1, kMaxBlocks), 1, 1};
  src.open("extern \"C\" __global__ void __launch_bounds__(" + num(threads) + ") " + entry +
           params + " {");
  src.open("for (long long i = (long long)blockIdx.x * " + num(threads) + " + threadIdx.x; i < " +
           num(total) + "LL; i += (long long)gridDim.x * " + num(threads) + ") {");
  return k;
}

/// Closes the loop and the kernel and stores the text.
void finish(CudaKernelSource& k, SourceWriter& src) {
  src.close().close();
  k.source = src.text();
}

/// `const long long name = r % extent; r /= extent;` for the axes of `shape` from the last to
/// the first, starting from r = i: the coordinates of element i. Names are prefix + axis.
void decompose(SourceWriter& src, const std::vector<int64_t>& shape, const std::string& prefix) {
  src.line("long long r = i;");
  for (size_t d = shape.size(); d-- > 0;) {
    const std::string c = prefix + num(static_cast<int64_t>(d));
    if (d == 0) {
      src.line("const long long " + c + " = r;");
    } else {
      src.line("const long long " + c + " = r % " + num(shape[d]) + "LL; r /= " + num(shape[d]) +
               "LL;");
    }
  }
}

std::string operand_name(int k) {
  std::string name = "a";  // appended, not "a" + ...: GCC 12 warns falsely (-Wrestrict) there
  name += std::to_string(k);
  return name;
}

std::string instruction(const ElementwiseInstr& in, const std::string& a, const std::string& b) {
  using Op = ElementwiseInstr::Op;
  switch (in.op) {
    case Op::kRelu:
      return "(" + a + " > 0.0f ? " + a + " : 0.0f)";
    case Op::kClip:
      return "fminf(fmaxf(" + a + ", " + float_literal(in.p0) + "), " + float_literal(in.p1) + ")";
    case Op::kSigmoid:  // in double, as the CPU kernel computes it
      return "(float)(1.0 / (1.0 + exp(-(double)" + a + ")))";
    case Op::kHardSigmoid:
      return "fmaxf(0.0f, fminf(1.0f, " + float_literal(in.p0) + " * " + a + " + " +
             float_literal(in.p1) + "))";
    case Op::kHardSwish:
      return a + " * fmaxf(0.0f, fminf(1.0f, " + a + " / 6.0f + 0.5f))";
    case Op::kIdentity:
      return a;
    case Op::kAdd:
      return a + " + " + b;
    case Op::kSubtract:
      return a + " - " + b;
    case Op::kMultiply:
      return a + " * " + b;
    case Op::kDivide:
      return a + " / " + b;
    // The transcendental ones in double, as the CPU kernel and the interpreter compute them.
    case Op::kExp:
      return "(float)exp((double)" + a + ")";
    case Op::kLog:
      return "(float)log((double)" + a + ")";
    case Op::kSqrt:
      return "sqrtf(" + a + ")";
    case Op::kErf:
      return "(float)erf((double)" + a + ")";
    case Op::kTanh:
      return "(float)tanh((double)" + a + ")";
    case Op::kNeg:
      return "(-" + a + ")";
    case Op::kAbs:
      return "fabsf(" + a + ")";
    case Op::kFloor:
      return "floorf(" + a + ")";
    case Op::kCeil:
      return "ceilf(" + a + ")";
    case Op::kRound:
      return "rintf(" + a + ")";  // the default rounding mode: half to even
    case Op::kReciprocal:
      return "(1.0f / " + a + ")";
    case Op::kSoftplus:
      return "(float)((double)" + a + " > 30.0 ? (double)" + a + " : log1p(exp((double)" + a +
             ")))";
    case Op::kMish:
      return "(float)((double)" + a + " * tanh((double)" + a + " > 30.0 ? (double)" + a +
             " : log1p(exp((double)" + a + "))))";
    case Op::kLeakyRelu:
      return "(" + a + " < 0.0f ? " + float_literal(in.p0) + " * " + a + " : " + a + ")";
    case Op::kElu:
      return "(" + a + " < 0.0f ? (float)((double)" + float_literal(in.p0) + " * expm1((double)" +
             a + ")) : " + a + ")";
    case Op::kSelu:
      return "(float)((double)" + float_literal(in.p1) + " * (" + a + " <= 0.0f ? (double)" +
             float_literal(in.p0) + " * expm1((double)" + a + ") : (double)" + a + "))";
    case Op::kGelu:
      if (in.p0 != 0)
        return "(float)(0.5 * (double)" + a + " * (1.0 + tanh(0.7978845608028654 * ((double)" + a +
               " + 0.044715 * (double)" + a + " * (double)" + a + " * (double)" + a + "))))";
      return "(float)(0.5 * (double)" + a + " * (1.0 + erf((double)" + a +
             " * 0.7071067811865476)))";
  }
  return a;
}

}  // namespace

CudaKernelSource emit_elementwise_kernel(const ElementwiseKernelSpec& spec,
                                         const std::string& entry) {
  const int operands = static_cast<int>(spec.operand_strides.size());
  std::string params = "(float* __restrict__ out";
  for (int k = 0; k < operands; ++k) params += ", const float* __restrict__ " + operand_name(k);
  params += ")";
  int64_t total = 1;
  for (int64_t d : spec.out_shape) total *= d;
  const std::vector<int64_t> contiguous = [&] {
    std::vector<int64_t> s(spec.out_shape.size(), 1);
    for (size_t d = s.size(); d-- > 1;) s[d - 1] = s[d] * spec.out_shape[d];
    return s;
  }();

  SourceWriter src;
  src.line("// element-wise chain of " + num(static_cast<int64_t>(spec.program.size())) +
           " ops over " + num(total) + " elements");
  CudaKernelSource k = grid_stride_kernel(entry, params, total, src);
  bool broadcast = false;
  for (const auto& strides : spec.operand_strides) {
    std::vector<int64_t> s = strides;
    for (size_t d = 0; d < s.size(); ++d)  // an axis of extent 1 has no stride that matters
      if (spec.out_shape[d] == 1) s[d] = contiguous[d];
    broadcast |= s != contiguous;
  }
  if (broadcast) decompose(src, spec.out_shape, "c");
  for (int op = 0; op < operands; ++op) {
    const auto& strides = spec.operand_strides[static_cast<size_t>(op)];
    std::string offset;
    bool same = true;
    for (size_t d = 0; d < strides.size(); ++d) {
      same &= spec.out_shape[d] == 1 || strides[d] == contiguous[d];
      if (strides[d] == 0 || spec.out_shape[d] == 1) continue;
      offset += (offset.empty() ? "" : " + ") + std::string("c") + num(static_cast<int64_t>(d)) +
                " * " + num(strides[d]) + "LL";
    }
    if (same) offset = "i";
    if (offset.empty()) offset = "0";
    src.line("const float " + operand_name(op) + "_v = " + operand_name(op) + "[" + offset + "];");
  }
  auto ref = [&](int r) {
    return r >= 0 ? operand_name(r) + "_v" : "r" + num(static_cast<int64_t>(-1 - r));
  };
  for (size_t j = 0; j < spec.program.size(); ++j) {
    const ElementwiseInstr& in = spec.program[j];
    src.line("const float r" + num(static_cast<int64_t>(j)) + " = " +
             instruction(in, ref(in.a), ref(in.b)) + ";");
  }
  const std::string result = "r" + num(static_cast<int64_t>(spec.program.size()) - 1);
  if (spec.out_dtype == DType::kFloat32) {
    src.line("out[i] = " + result + ";");
  } else {
    // A quantizing cast, as the graph's Cast: NaN gives 0, toward zero saturated to int64, then
    // wrapped to the byte (the type's own truncation).
    const std::string byte = spec.out_dtype == DType::kUInt8 ? "unsigned char" : "signed char";
    const std::string& r = result;
    src.line(
        "reinterpret_cast<" + byte + "*>(out)[i] = static_cast<" + byte + ">(" + r + " != " + r +
        " ? 0LL : " + r + " >= 9223372036854775807.0f ? 9223372036854775807LL : " + r +
        " <= -9223372036854775808.0f ? (-9223372036854775807LL - 1) : static_cast<long long>(" + r +
        "));");
  }
  finish(k, src);
  k.arg_count = 1 + operands;
  return k;
}

CudaKernelSource emit_max_pool_kernel(const MaxPoolKernelSpec& p, const std::string& entry) {
  const int64_t N = p.in_shape[0], CB = p.in_shape[1], H = p.in_shape[2], W = p.in_shape[3],
                B = p.in_shape[4];
  SourceWriter src;
  src.line(std::string(p.average ? "// average pool " : "// max pool ") + num(p.kernel_h) + "x" +
           num(p.kernel_w) + " over (" + num(N) + ", " + num(CB) + ", " + num(H) + ", " + num(W) +
           ", " + num(B) + ")");
  CudaKernelSource k =
      grid_stride_kernel(entry, "(float* __restrict__ out, const float* __restrict__ data)",
                         N * CB * p.out_h * p.out_w * B, src);
  decompose(src, {N * CB, p.out_h, p.out_w, B}, "c");  // plane, oh, ow, b
  src.line("float best = " + float_literal(-std::numeric_limits<float>::infinity()) + ";");
  src.line("double sum = 0.0;");  // average: in double, as the CPU sums
  src.line("long long count = 0;");
  src.open_for("kh", p.kernel_h);
  src.line("const long long ih = c1 * " + num(p.stride_h) + " + kh * " + num(p.dilation_h) + " - " +
           num(p.pad_top) + ";");
  src.open_for("kw", p.kernel_w);
  src.line("const long long iw = c2 * " + num(p.stride_w) + " + kw * " + num(p.dilation_w) + " - " +
           num(p.pad_left) + ";");
  if (p.average && p.count_include_pad)
    src.line("if (ih < " + num(H + p.pad_bottom) + " && iw < " + num(W + p.pad_right) +
             ") ++count;");
  src.line("if (ih < 0 || ih >= " + num(H) + " || iw < 0 || iw >= " + num(W) + ") continue;");
  src.line("const float v = data[((c0 * " + num(H) + " + ih) * " + num(W) + " + iw) * " + num(B) +
           " + c3];");
  if (p.average) {
    src.line("sum += v;");
    if (!p.count_include_pad) src.line("++count;");
  } else {
    src.line("best = best < v ? v : best;");
  }
  src.close().close();
  src.line(p.average ? "out[i] = (float)(sum / (double)(count > 1 ? count : 1));"
                     : "out[i] = best;");
  finish(k, src);
  k.arg_count = 2;
  return k;
}

CudaKernelSource emit_global_avg_pool_kernel(const std::vector<int64_t>& in_shape,
                                             const std::string& entry) {
  const int64_t NC = in_shape[0] * in_shape[1], HW = in_shape[2] * in_shape[3];
  const int64_t B = in_shape.size() == 5 ? in_shape[4] : 1;
  SourceWriter src;
  src.line("// global average pool over " + num(NC) + " planes of " + num(HW) + " x " + num(B));
  CudaKernelSource k = grid_stride_kernel(
      entry, "(float* __restrict__ out, const float* __restrict__ data)", NC * B, src);
  src.line("const long long b = i % " + num(B) + ", nc = i / " + num(B) + ";");
  src.line("double sum = 0.0;");  // in double, as the CPU sums
  src.open_for("j", HW);
  src.line("sum += data[(nc * " + num(HW) + " + j) * " + num(B) + " + b];");
  src.close();
  src.line("out[i] = (float)(sum / " + num(HW) + ".0);");
  finish(k, src);
  k.arg_count = 2;
  return k;
}

CudaKernelSource emit_layout_transform_kernel(const std::vector<int64_t>& in_shape,
                                              int64_t from_block, int64_t to_block,
                                              const std::string& entry) {
  // Element (n, c, h, w) of a tensor in blocks of b lies at ((n * C/b + c/b) * HW + hw) * b + c%b.
  const int64_t fb = std::max<int64_t>(from_block, 1), tb = std::max<int64_t>(to_block, 1);
  const int64_t N = in_shape[0], C = in_shape[1] * (from_block ? from_block : 1),
                HW = in_shape[2] * in_shape[3];
  SourceWriter src;
  src.line("// layout transform of " + num(N) + "x" + num(C) + "x" + num(HW) + " from blocks of " +
           num(fb) + " to blocks of " + num(tb));
  CudaKernelSource k = grid_stride_kernel(
      entry, "(float* __restrict__ out, const float* __restrict__ data)", N * C * HW, src);
  decompose(src, {N, C / tb, HW, tb}, "c");  // n, chunk, hw, lane: the output's order
  src.line("const long long c = c1 * " + num(tb) + " + c3;");
  src.line("out[i] = data[((c0 * " + num(C / fb) + " + c / " + num(fb) + ") * " + num(HW) +
           " + c2) * " + num(fb) + " + c % " + num(fb) + "];");
  finish(k, src);
  k.arg_count = 2;
  return k;
}

CudaKernelSource emit_strided_copy_kernel(const std::vector<int64_t>& out_shape,
                                          const std::vector<int64_t>& in_strides, int64_t base,
                                          const std::string& entry) {
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  SourceWriter src;
  src.line("// strided copy into " + num(total) + " elements");
  CudaKernelSource k = grid_stride_kernel(
      entry, "(float* __restrict__ out, const float* __restrict__ data)", total, src);
  decompose(src, out_shape, "c");
  std::string at = num(base) + "LL";
  for (size_t d = 0; d < out_shape.size(); ++d)
    if (in_strides[d] != 0)
      at += " + c" + num(static_cast<int64_t>(d)) + " * " + num(in_strides[d]) + "LL";
  src.line("out[i] = data[" + at + "];");
  finish(k, src);
  k.arg_count = 2;
  return k;
}

CudaKernelSource emit_depthwise_conv_kernel(const DepthwiseKernelSpec& spec,
                                            const std::string& entry) {
  const auto& w = spec.workload;
  const int64_t B = spec.block, CB = w.out_channels / B;
  const int64_t OH = w.out_height(), OW = w.out_width();
  CudaKernelOptions options;
  options.epilogue = spec.epilogue;
  SourceWriter src;
  src.line("// depthwise conv2d " + schedule_space::describe_workload(w) + ", block " + num(B));
  CudaKernelSource k =
      grid_stride_kernel(entry, kernel_params(options), w.batch * CB * OH * OW * B, src);
  decompose(src, {w.batch, CB, OH, OW, B}, "c");  // n, cb, oh, ow, b
  src.line("float acc = 0.0f;");
  src.open_for("kh", w.kernel_h);
  src.line("const long long ih = c2 * " + num(w.stride_h) + " + kh * " + num(w.dilation_h) + " - " +
           num(w.pad_top) + ";");
  src.line("if (ih < 0 || ih >= " + num(w.in_height) + ") continue;");
  src.open_for("kw", w.kernel_w);
  src.line("const long long iw = c3 * " + num(w.stride_w) + " + kw * " + num(w.dilation_w) + " - " +
           num(w.pad_left) + ";");
  src.line("if (iw < 0 || iw >= " + num(w.in_width) + ") continue;");
  src.line("acc += data[(((c0 * " + num(CB) + " + c1) * " + num(w.in_height) + " + ih) * " +
           num(w.in_width) + " + iw) * " + num(B) + " + c4] * weight[((c1 * " + num(w.kernel_h) +
           " + kh) * " + num(w.kernel_w) + " + kw) * " + num(B) + " + c4];");
  src.close().close();
  src.line("out[i] = " + epilogue("acc", "(c1 * " + num(B) + " + c4)", "i", options) + ";");
  finish(k, src);
  k.epilogue_operands = options.operand_count();
  k.arg_count = 3 + k.epilogue_operands;
  return k;
}

}  // namespace tensortune::codegen::cuda
