// gpu_bench: tuned CUDA kernels against cuDNN (conv2d) and cuBLAS (dense) on the same GPU in
// one run. ResNet-18's convolutions (conv2d_nchw.cuda, and conv2d_nchw_winograd.cuda where it
// serves: the faster is ours), dense 1x512x1000 / 16x1024x1024 (dense_small_batch.gpu) and
// BERT-base's two attention batch matmuls (batch_matmul.cuda, against cuBLAS's strided batched
// SGEMM) and the attention fused (attention.cuda at 128 and ViT's 197 tokens, against cuBLAS,
// cuDNN's softmax and cuBLAS) are tuned with the XGBoost tuner on --gpu, their best configs timed
// again, then the anchors with the same protocol (CUDA events, median of rounds). Prints why it
// cannot run where there is no GPU and exits 0. Goal: geomean >= 0.9 of cuDNN on the convs. Then
// ResNet-18 end to end: compiled for the GPU with the records just made (`compile --target
// cuda-smXY --records`), timed as `tensortune bench` times it, against ONNX Runtime's CUDA provider
// on the same ONNX model (bench/ort/ort_bench.js) where node and that provider exist. --precision
// tf32|fp16|bf16 runs every layer a tensor-core template serves on it
// (schedule_space::at_precision, as compile
// --precision does) against cuDNN and cuBLAS at the same precision: TF32 math on float32
// buffers, or float16 / bfloat16 operands summed in float32 (the anchors' operands stored in
// 16 bits, as their users store them; ours are float32 buffers rounded as they are staged).
// --precision 3xtf32 is measured against the anchors' float32 (FMA) math, the accuracy it gives.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <vector>

#include "compiler/codegen/cuda/cuda_driver.h"
#include "compiler/driver/compile.h"
#include "compiler/frontend/model_zoo.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/measure/gpu_measurer.h"
#include "compiler/runtime/benchmark.h"
#include "records/record_store.h"
#include "schedule_space/gpu_limits.h"
#include "tuner/measurer.h"
#include "tuner/resnet18_workloads.h"
#include "tuner/tuner_factory.h"
#include "tuner/tuning_loop.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

// Median seconds per call of `fn` over `rounds` rounds of `number` calls, timed with events.
template <typename Fn>
double time_events(Fn fn, int number, int rounds) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  fn();  // warm-up
  cudaDeviceSynchronize();
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    cudaEventRecord(start);
    for (int i = 0; i < number; ++i) fn();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    per_call.push_back(ms / 1000.0 / number);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(per_call.begin(), per_call.end());
  return per_call[per_call.size() / 2];
}

#define CHECK_CUDNN(call)                                               \
  do {                                                                  \
    if (cudnnStatus_t s_ = (call); s_ != CUDNN_STATUS_SUCCESS) {        \
      std::fprintf(stderr, "%s: %s\n", #call, cudnnGetErrorString(s_)); \
      return -1;                                                        \
    }                                                                   \
  } while (0)

// The cuDNN data type of a precision's operands, and its bytes.
cudnnDataType_t cudnn_type(ss::Precision p) {
  return p == ss::Precision::kFloat16    ? CUDNN_DATA_HALF
         : p == ss::Precision::kBFloat16 ? CUDNN_DATA_BFLOAT16
                                         : CUDNN_DATA_FLOAT;
}
int64_t element_bytes(ss::Precision p) {
  return p == ss::Precision::kFloat16 || p == ss::Precision::kBFloat16 ? 2 : 4;
}

// cuDNN's fastest forward algorithm for the workload (cudnnFind) at its precision, timed; -1 on
// failure.
double cudnn_conv_seconds(cudnnHandle_t h, const ss::Conv2dWorkload& w, int number, int rounds,
                          std::string* algo_name) {
  const cudnnDataType_t type = cudnn_type(w.precision);
  const int64_t bytes_each = element_bytes(w.precision);
  if (w.pad_top != w.pad_bottom || w.pad_left != w.pad_right) return -1;  // cuDNN: symmetric
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t c;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
  CHECK_CUDNN(cudnnCreateFilterDescriptor(&f));
  CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&c));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, w.batch, w.in_channels,
                                         w.in_height, w.in_width));
  const int64_t group_channels = w.in_channels / w.groups;
  CHECK_CUDNN(cudnnSetFilter4dDescriptor(f, type, CUDNN_TENSOR_NCHW, w.out_channels, group_channels,
                                         w.kernel_h, w.kernel_w));
  CHECK_CUDNN(cudnnSetConvolution2dDescriptor(c, w.pad_top, w.pad_left, w.stride_h, w.stride_w,
                                              w.dilation_h, w.dilation_w, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CHECK_CUDNN(cudnnSetConvolutionGroupCount(c, static_cast<int>(w.groups)));
  // As our kernels: FP32 FMA (no TF32; also 3xtf32's anchor, the float32 accuracy it matches),
  // TF32 allowed, or tensor-core math on 16-bit operands.
  const bool fp32_accuracy =
      w.precision == ss::Precision::kFloat32 || w.precision == ss::Precision::k3xTf32;
  CHECK_CUDNN(cudnnSetConvolutionMathType(c, fp32_accuracy ? CUDNN_FMA_MATH
                                             : w.precision == ss::Precision::kTf32
                                                 ? CUDNN_DEFAULT_MATH
                                                 : CUDNN_TENSOR_OP_MATH));
  CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, w.batch, w.out_channels,
                                         w.out_height(), w.out_width()));
  void *dx, *df, *dy;
  cudaMalloc(&dx, bytes_each * w.batch * w.in_channels * w.in_height * w.in_width);
  cudaMalloc(&df, bytes_each * w.out_channels * group_channels * w.kernel_h * w.kernel_w);
  cudaMalloc(&dy, bytes_each * w.batch * w.out_channels * w.out_height() * w.out_width());
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(h, x, f, c, y, 8, &found, perf));
  double best = -1;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    void* ws = nullptr;
    if (perf[i].memory) cudaMalloc(&ws, perf[i].memory);
    const float one = 1, zero = 0;
    const auto algo = perf[i].algo;
    const size_t bytes = perf[i].memory;
    const double s = time_events(
        [&] { cudnnConvolutionForward(h, &one, x, dx, f, df, c, algo, ws, bytes, &zero, y, dy); },
        number, rounds);
    if (ws) cudaFree(ws);
    if (best < 0 || s < best) {
      best = s;
      *algo_name = "algo " + std::to_string(static_cast<int>(algo));
    }
    break;  // cudnnFind sorts by time: the first successful one is cuDNN's choice
  }
  cudaFree(dx);
  cudaFree(df);
  cudaFree(dy);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroyFilterDescriptor(f);
  cudnnDestroyConvolutionDescriptor(c);
  return best;
}

// The cuBLAS type of a precision's operands (the output is float32, as ours).
cudaDataType_t cublas_type(ss::Precision p) {
  return p == ss::Precision::kFloat16    ? CUDA_R_16F
         : p == ss::Precision::kBFloat16 ? CUDA_R_16BF
                                         : CUDA_R_32F;
}

// y[M, N] = x[M, K] w[N, K]^T with cuBLAS (column-major: y^T = w x^T): SGEMM, TF32 tensor-op
// SGEMM, or GemmEx of 16-bit operands summed in float32.
double cublas_dense_seconds(cublasHandle_t h, const ss::DenseWorkload& d, int number, int rounds) {
  void *x, *w, *y;
  const int64_t e = element_bytes(d.precision);
  cudaMalloc(&x, e * d.batch * d.in_features);
  cudaMalloc(&w, e * d.out_features * d.in_features);
  cudaMalloc(&y, 4 * d.batch * d.out_features);
  const float one = 1, zero = 0;
  const int M = static_cast<int>(d.batch), N = static_cast<int>(d.out_features),
            K = static_cast<int>(d.in_features);
  cublasSetMathMode(
      h, d.precision == ss::Precision::kTf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  const cudaDataType_t t = cublas_type(d.precision);
  const double s = time_events(
      [&] {
        cublasGemmEx(
            h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w, t, K, x, t, K, &zero, y, CUDA_R_32F, N,
            d.precision == ss::Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT);
      },
      number, rounds);
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return s;
}

// y[b] = x[b] w[b]^T (transpose_b, w as (B, N, K)) or x[b] w[b] (w as (B, K, N)), every entry
// row-major, with cuBLAS's strided batched SGEMM (column-major: y^T = op(w) x^T).
double cublas_batch_matmul_seconds(cublasHandle_t h, const ss::BatchMatmulWorkload& b, int number,
                                   int rounds) {
  void *x, *w, *y;
  const int64_t e = element_bytes(b.precision);
  cudaMalloc(&x, e * b.batch * b.m * b.k);
  cudaMalloc(&w, e * b.batch * b.n * b.k);
  cudaMalloc(&y, 4 * b.batch * b.m * b.n);
  const float one = 1, zero = 0;
  const int M = static_cast<int>(b.m), N = static_cast<int>(b.n), K = static_cast<int>(b.k),
            B = static_cast<int>(b.batch);
  const cudaDataType_t t = cublas_type(b.precision);
  const double s = time_events(
      [&] {
        cublasGemmStridedBatchedEx(
            h, b.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w, t,
            b.transpose_b ? K : N, 1LL * N * K, x, t, K, 1LL * M * K, &zero, y, CUDA_R_32F, N,
            1LL * M * N, B,
            b.precision == ss::Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT);
      },
      number, rounds);
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return s;
}

/// The unfused attention as the libraries run it: cuBLAS's strided batched SGEMM for the scaled
/// scores (alpha = scale), cuDNN's softmax over each row, SGEMM again by v. The mask's add is a
/// fourth kernel the anchor leaves out (time the fused kernel without a mask against it).
double library_attention_seconds(cublasHandle_t h, cudnnHandle_t dnn,
                                 const ss::AttentionWorkload& a, int number, int rounds) {
  float *q, *kt, *v, *scores, *p, *out;
  cudaMalloc(&q, 4 * a.batch * a.m * a.k);
  cudaMalloc(&kt, 4 * a.batch * a.k * a.n);
  cudaMalloc(&v, 4 * a.batch * a.n * a.dv);
  cudaMalloc(&scores, 4 * a.batch * a.m * a.n);
  cudaMalloc(&p, 4 * a.batch * a.m * a.n);
  cudaMalloc(&out, 4 * a.batch * a.m * a.dv);
  cudnnTensorDescriptor_t rows;
  cudnnCreateTensorDescriptor(&rows);
  cudnnSetTensor4dDescriptor(rows, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                             static_cast<int>(a.batch * a.m), static_cast<int>(a.n), 1, 1);
  const float scale = static_cast<float>(a.scale), one = 1, zero = 0;
  const int M = static_cast<int>(a.m), N = static_cast<int>(a.n), K = static_cast<int>(a.k),
            D = static_cast<int>(a.dv), B = static_cast<int>(a.batch);
  const double s = time_events(
      [&] {
        // Row-major [M, K] x [K, N] as column-major N x M = (N x K) (K x M).
        cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &scale, kt, N, 1LL * K * N,
                                  q, K, 1LL * M * K, &zero, scores, N, 1LL * M * N, B);
        cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, rows,
                            scores, &zero, rows, p);
        cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, D, M, N, &one, v, D, 1LL * N * D, p,
                                  N, 1LL * M * N, &zero, out, D, 1LL * M * D, B);
      },
      number, rounds);
  cudnnDestroyTensorDescriptor(rows);
  for (float* b : {q, kt, v, scores, p, out}) cudaFree(b);
  return s;
}

/// ResNet-18 at 224x224 compiled for the GPU with `db`'s records, and ONNX Runtime's CUDA
/// provider on its ONNX export, timed under the same protocol.
void end_to_end(int cc, const std::string& db, const std::string& ort_script,
                ss::Precision precision) {
  auto model = tt::frontend::zoo_model("resnet-18", {1, 3, 224, 224});
  tt::driver::CompileOptions options;
  options.target = "cuda-sm" + std::to_string(cc);
  options.precision = precision;
  options.records = db;
  auto net = model ? tt::driver::compile_network(*model, options)
                   : tt::Expected<tt::runtime::CompiledNetwork>(model.error());
  if (!net) {
    std::printf("resnet-18 end to end: not compiled: %s\n", net.error().message.c_str());
    return;
  }
  auto exe = tt::runtime::Executable::load(
      std::make_shared<tt::runtime::CompiledNetwork>(std::move(*net)), 1);
  if (!exe) {
    std::printf("resnet-18 end to end: not loaded: %s\n", exe.error().message.c_str());
    return;
  }
  tt::graph::Tensor x = tt::graph::Tensor::zeros({1, 3, 224, 224});
  tt::fill_uniform(x, 1);
  tt::runtime::BenchOptions bo;
  bo.repeat = 20;
  auto ours =
      (*exe)->set_input("data", x)
          ? tt::runtime::benchmark(**exe, bo)
          : tt::Expected<tt::runtime::BenchResult>(tt::internal_error("cannot set the input"));
  if (!ours) {
    std::printf("resnet-18 end to end: %s\n", ours.error().message.c_str());
    return;
  }
  std::printf("resnet-18 end to end, batch 1: ours %.3f ms at %s (median of %d rounds)",
              ours->median_ms, ss::precision_name(precision), ours->repeat);
  const std::string onnx = "gpu_bench_resnet18.onnx";
  if (auto w = tt::frontend::export_onnx(*model, onnx); !w) {
    std::printf("; ONNX Runtime not run: %s\n", w.error().message.c_str());
    return;
  }
  const std::string cmd = "node " + ort_script + " " + onnx + " 1 20 100 cuda 2>&1";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) text += buf;
    pclose(p);
  }
  const auto at = text.find("\"median_ms\":");
  if (at == std::string::npos) {
    std::printf("; ONNX Runtime CUDA not run (%s): %s", cmd.c_str(), text.c_str());
    return;
  }
  const double ort_ms = std::atof(text.c_str() + at + 12);
  std::printf("; ONNX Runtime CUDA %.3f ms; ratio %.3f (> 1: ours is faster)\n", ort_ms,
              ort_ms / ours->median_ms);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Tuned CUDA kernels vs cuDNN and cuBLAS on one GPU (ResNet-18 layers, dense, BERT's "
      "attention "
      "batch matmuls, MobileNet-v2 depthwise)"};
  int64_t trials = 300;
  int gpu = 0;
  std::string db = "gpu_bench.db", only;
  app.add_option("--trials", trials, "XGBoost-tuner trials per layer")->capture_default_str();
  app.add_option("--gpu", gpu, "GPU ordinal")->capture_default_str();
  app.add_option("--db", db, "record DB (reruns resume)")->capture_default_str();
  app.add_option("--only", only, "layers whose name contains this");
  int max_convs = 0;
  app.add_option("--max-convs", max_convs,
                 "tune only the first N convolution layers (0: all); the dense shapes always run: "
                 "with --trials, the budget of a short check")
      ->capture_default_str();
  bool end_to_end_too = true;
  app.add_flag("!--no-end-to-end", end_to_end_too,
               "skip ResNet-18 end to end against ONNX Runtime's CUDA provider");
  std::string ort_script = "bench/ort/ort_bench.js";
  app.add_option("--ort-script", ort_script,
                 "ONNX Runtime's runner (node) for the end-to-end anchor")
      ->capture_default_str();
  std::string precision_flag = "fp32";
  app.add_option("--precision", precision_flag,
                 "fp32, or tf32 / fp16 / bf16: the layers a tensor-core template serves at that "
                 "precision, against cuDNN / cuBLAS at it")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto parsed_precision = ss::parse_float_precision(precision_flag);
  if (!parsed_precision) {
    std::fprintf(stderr, "error: %s\n", parsed_precision.error().message.c_str());
    return 2;
  }
  const ss::Precision precision = *parsed_precision;

  auto gpus = tt::codegen::cuda::list_gpus();
  if (!gpus) {
    std::printf("gpu_bench: not run: %s\n", gpus.error().message.c_str());
    return 0;
  }
  if (gpu < 0 || gpu >= static_cast<int>(gpus->size())) {
    std::fprintf(stderr, "error: --gpu %d does not exist (%zu GPUs)\n", gpu, gpus->size());
    return 1;
  }
  const auto& dev = (*gpus)[static_cast<size_t>(gpu)];
  cudaSetDevice(gpu);
  cudnnHandle_t cudnn;
  cublasHandle_t cublas;
  if (cudnnCreate(&cudnn) != CUDNN_STATUS_SUCCESS ||
      cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "error: cannot create the cuDNN / cuBLAS handles\n");
    return 1;
  }
  cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH);  // FP32, no TF32
  auto store = tt::records::RecordStore::open(db);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }
  const ss::Target target{ss::cuda_target_spec(dev.compute_capability), 1};
  std::printf(
      "# tensortune vs cuDNN / cuBLAS, %s, GPU %d %s (sm_%d), xgb tuner, %lld trials "
      "per layer\n",
      ss::precision_name(precision), gpu, dev.name.c_str(), dev.compute_capability,
      static_cast<long long>(trials));
  std::printf("%-26s %12s %12s %7s  %s\n", "layer", "ours (us)", "anchor (us)", "ratio",
              "best config");
  std::vector<tt::tuner::NamedTask> layers = tt::tuner::resnet18_workloads();
  layers.push_back(
      {"dense 16x1024x1024", ss::kDenseSmallBatchGpu, ss::DenseWorkload{16, 1024, 1024}});
  // BERT-base's attention (12 heads, 128 tokens, 64 per head): Q K^T in AutoTVM's layout and
  // the product with V in the exporters': `--only bmm` runs them alone.
  layers.push_back({"bmm qk 12x128x128 k64", ss::kBatchMatmulCuda,
                    ss::BatchMatmulWorkload{12, 128, 128, 64, true}});
  layers.push_back({"bmm pv 12x128x64 k128", ss::kBatchMatmulCuda,
                    ss::BatchMatmulWorkload{12, 128, 64, 128, false}});
  // The same attention fused (attention.cuda, no mask) against the libraries' unfused path:
  // `--only attention`.
  layers.push_back({"attention 12x128x128 d64", ss::kAttentionCuda,
                    ss::AttentionWorkload{12, 128, 128, 64, 64, 0, 0, 0.125}});
  layers.push_back({"attention 12x197x197 d64", ss::kAttentionCuda,
                    ss::AttentionWorkload{12, 197, 197, 64, 64, 0, 0, 0.125}});
  // MobileNet-v2's depthwise layers of each kind (stride 1 and 2, wide and narrow planes):
  // `--only dw` runs them alone.
  for (auto [name, c, hw, s] :
       {std::tuple{"dw 3x3 144 @56", 144, 56, 1}, std::tuple{"dw 3x3/2 144 @56", 144, 56, 2},
        std::tuple{"dw 3x3 384 @14", 384, 14, 1}, std::tuple{"dw 3x3 960 @7", 960, 7, 1}}) {
    auto w = ss::conv2d_workload({1, c, hw, hw}, {c, 1, 3, 3}, {s}, {1}, {1});
    if (w) layers.push_back({name, "", *w});
  }
  double log_sum = 0;
  int convs = 0, convs_run = 0;
  for (const auto& l : layers) {
    if (!only.empty() && l.name.find(only) == std::string::npos) continue;
    const bool conv = std::holds_alternative<ss::Conv2dWorkload>(l.workload);
    if (conv && max_convs > 0 && convs_run++ >= max_convs) continue;
    // At a reduced precision, the layer as compile --precision runs it (depthwise stays FP32).
    const ss::Workload workload = ss::at_precision(l.workload, precision, "cuda");
    const bool reduced = ss::is_reduced_float(ss::precision_of(workload));
    // No tensor-core template serves it (depthwise): the FP32 run measures it.
    if (ss::is_reduced_float(precision) && !reduced) continue;
    // Every template a network could run the layer with (direct, and Winograd for 3x3 stride-1
    // convolutions), each tuned with the full budget; the fastest is ours, as compile's choice.
    std::vector<std::string> names;
    if (conv || reduced) {
      for (const ss::Template* t : ss::templates_for(workload, "cuda"))
        if (t->network_layout() == ss::NetworkLayout::kPlain) names.emplace_back(t->name());
    } else if (std::holds_alternative<ss::BatchMatmulWorkload>(l.workload) ||
               std::holds_alternative<ss::AttentionWorkload>(l.workload)) {
      names.emplace_back(l.template_name);
    } else {
      names.emplace_back(ss::kDenseSmallBatchGpu);
    }
    double mine = 0;
    std::string best_described;
    for (const std::string& name : names) {
      auto task = ss::make_task(name, workload, target);
      auto space = ss::make_config_space(*task);
      tt::measure::MeasureOptions mo;
      mo.gpu = gpu;
      mo.timing.min_repeat_ms = 50;
      auto gm = tt::measure::make_measurer(*task, mo);
      if (!gm) {
        std::printf("%-26s %s: %s\n", l.name.c_str(), name.c_str(), gm.error().message.c_str());
        continue;
      }
      tt::tuner::LocalMeasurerAdapter measurer(std::move(*gm));
      tt::tuner::TunerOptions topt;
      topt.name = "xgb";
      auto tuner = tt::tuner::make_tuner(*task, *space, topt, store->get());
      tt::tuner::TuneOptions to;
      to.trials = trials;
      to.run_id = "gpu-bench-" + l.name + "-" + name;
      auto result = tt::tuner::tune_task(
          *task, *space, **tuner, measurer, store->get(), to,
          [&](const tt::tuner::TuneProgress& p) {
            std::fprintf(stderr, "\r%-26s %s %lld/%lld best %.1f GFLOPS  ", l.name.c_str(),
                         name.c_str(), static_cast<long long>(p.done),
                         static_cast<long long>(p.total), p.best_gflops);
          });
      std::fprintf(stderr, "\n");
      if (!result || !result->best_config) {
        std::printf("%-26s %s: tuning failed%s\n", l.name.c_str(), name.c_str(),
                    result ? "" : (": " + result.error().message).c_str());
        continue;
      }
      std::vector<double> ours;
      for (int round = 0; round < 3; ++round) {
        auto r = measurer.measure(*space, {*result->best_config});
        if (r && (*r)[0].ok()) ours.push_back((*r)[0].mean_cost());
      }
      if (ours.empty()) continue;
      std::sort(ours.begin(), ours.end());
      const double median = ours[ours.size() / 2];
      if (mine == 0 || median < mine) {
        mine = median;
        best_described = name + " " + space->describe(*result->best_config);
      }
    }
    std::string algo = reduced ? "GemmEx" : "SGEMM";
    double anchor = 0;
    if (conv) {
      anchor = cudnn_conv_seconds(cudnn, std::get<ss::Conv2dWorkload>(workload), 20, 5, &algo);
    } else if (const auto* b = std::get_if<ss::BatchMatmulWorkload>(&workload)) {
      algo = reduced ? "GemmStridedBatchedEx" : "SGEMM strided batched";
      anchor = cublas_batch_matmul_seconds(cublas, *b, 20, 5);
    } else if (const auto* a = std::get_if<ss::AttentionWorkload>(&workload)) {
      algo = "SGEMM + cudnnSoftmaxForward + SGEMM";
      anchor = library_attention_seconds(cublas, cudnn, *a, 20, 5);
    } else {
      anchor = cublas_dense_seconds(cublas, std::get<ss::DenseWorkload>(workload), 20, 5);
    }
    if (mine == 0 || anchor <= 0) {
      std::printf("%-26s not measured\n", l.name.c_str());
      continue;
    }
    const double ratio = anchor / mine;  // > 1: ours is faster
    if (conv) {
      log_sum += std::log(ratio);
      ++convs;
    }
    std::printf("%-26s %12.2f %12.2f %7.3f  %s (%s)\n", l.name.c_str(), mine * 1e6, anchor * 1e6,
                ratio, best_described.c_str(), algo.c_str());
  }
  if (convs)
    std::printf("geomean speed vs cuDNN over %d convolutions at %s: %.3f (goal >= %s)\n", convs,
                ss::precision_name(precision), std::exp(log_sum / convs),
                precision == ss::Precision::kFloat32 ? "0.9" : "1.0");
  if (end_to_end_too) end_to_end(dev.compute_capability, db, ort_script, precision);
  cudnnDestroy(cudnn);
  cublasDestroy(cublas);
  return 0;
}
