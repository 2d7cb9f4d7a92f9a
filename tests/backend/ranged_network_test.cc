// Artifacts for a range of sequence lengths, compiled: each bucket a generated network with its
// padding masked, in one file whose buckets share their weights; every length of the range run
// through it equals the reference interpreter on the graph at that very length (CPU, and the
// CUDA kernels emulated); lengths outside the range and damaged files are refused.
#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/graph/interpreter.h"
#include "compiler/graph/sequence_range.h"
#include "compiler/runtime/artifact.h"
#include "compiler/runtime/ranged_artifact.h"
#include "compiler/runtime/ranged_executor.h"
#include "tests/backend/network_test_util.h"
#include "tests/compiler/tiny_encoder.h"
#ifdef TT_WITH_CUDA
#include "compiler/codegen/cuda/cuda_driver.h"
#endif

namespace tensortune {
namespace {

using driver::CompileOptions;
using graph::Tensor;
using runtime::RangedArtifact;
using runtime::RangedExecutable;
using testing::encoder_inputs;
using testing::relative_error;
using testing::tiny_encoder;

graph::SequenceRange encoder_range(int64_t lo, int64_t hi) {
  return {lo, hi, {{"input_ids", 1}, {"attention_mask", 1}}};
}

/// The ranged artifact's bytes; `separate_bytes` the sum of the buckets' one-network files.
std::string compile_ranged(const graph::SequenceRange& range, const CompileOptions& options,
                           size_t* separate_bytes = nullptr) {
  auto plan = graph::plan_sequence_range(
      range, [](int64_t n) -> Expected<graph::Graph> { return tiny_encoder(n); });
  EXPECT_TRUE(plan) << plan.error().message;
  if (!plan) return "";
  runtime::RangedArtifactWriter writer(*plan);
  if (separate_bytes) *separate_bytes = 0;
  for (int64_t bucket : graph::sequence_buckets(range.lo, range.hi)) {
    auto masked = graph::mask_sequence_padding(tiny_encoder(bucket), *plan, bucket);
    EXPECT_TRUE(masked) << masked.error().message;
    auto net = driver::compile_network(*masked, options);
    EXPECT_TRUE(net) << net.error().message;
    if (!net) return "";
    if (separate_bytes) *separate_bytes += runtime::serialize_network(*net).size();
    writer.add(bucket, *net);
  }
  return writer.finish();
}

std::shared_ptr<const RangedArtifact> parse(const std::string& bytes) {
  auto artifact = RangedArtifact::parse(bytes, "test.tt");
  EXPECT_TRUE(artifact) << artifact.error().message;
  return artifact ? std::make_shared<const RangedArtifact>(std::move(*artifact)) : nullptr;
}

void expect_lengths_match_the_interpreter(RangedExecutable& exe, std::vector<int64_t> lengths) {
  for (int64_t length : lengths) {
    SCOPED_TRACE("length " + std::to_string(length));
    const auto inputs = encoder_inputs(length, length / 4);
    auto want = graph::interpret(tiny_encoder(length), inputs);
    ASSERT_TRUE(want) << want.error().message;
    auto got = exe.run(inputs);
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_EQ((*got)[i].shape, (*want)[i].shape) << "output " << i;
      EXPECT_LE(relative_error((*got)[i], (*want)[i]), 1e-5) << "output " << i;
    }
  }
}

TEST(RangedNetwork, EveryLengthOfTheRangeComputesTheInterpretersOutputs) {
  size_t separate = 0;
  const std::string bytes = compile_ranged(encoder_range(1, 16), {}, &separate);
  auto artifact = parse(bytes);
  ASSERT_TRUE(artifact);
  EXPECT_EQ(artifact->buckets(), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  // The five buckets hold their equal weights once: at least the embedding tables (50 and 64
  // rows of 16 floats) four times fewer than five separate artifacts.
  EXPECT_GE(separate - bytes.size(), 4 * (50 + 64) * 16 * sizeof(float))
      << bytes.size() << " against " << separate;
  // The dense and attention steps walk the tokens' rows: a shorter sequence runs only its row
  // blocks (every length below checks what that computes). The attention is fused (its padding
  // mask added to the model's own).
  auto top = artifact->network(artifact->buckets().size() - 1);
  ASSERT_TRUE(top) << top.error().message;
  int row_steps = 0;
  for (const auto& s : top->steps) row_steps += s.rows_follow_sequence;
  EXPECT_EQ(row_steps, 4) << "q, k and v, the attention: each a step over the tokens";
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    auto exe = RangedExecutable::load(artifact, threads);
    ASSERT_TRUE(exe) << exe.error().message;
    std::vector<int64_t> every;
    for (int64_t n = 1; n <= 16; ++n) every.push_back(n);
    expect_lengths_match_the_interpreter(**exe, every);
    expect_lengths_match_the_interpreter(**exe, {3, 16, 1, 13});  // back to loaded buckets
  }
}

TEST(RangedNetwork, LengthsOutsideTheRangeAndDisagreeingInputsAreRefusedNamingThem) {
  auto artifact = parse(compile_ranged(encoder_range(2, 8), {}));
  ASSERT_TRUE(artifact);
  auto exe = RangedExecutable::load(artifact, 1);
  ASSERT_TRUE(exe) << exe.error().message;
  const auto expect_refused = [&](const std::map<std::string, Tensor>& inputs,
                                  const std::string& words) {
    auto out = (*exe)->run(inputs);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(out.error().message.find(words), std::string::npos) << out.error().message;
  };
  expect_refused(encoder_inputs(9), "sequence length 9 (axis 1) is outside the range 2..8");
  expect_refused(encoder_inputs(1), "is outside the range 2..8");
  auto mixed = encoder_inputs(5);
  mixed["attention_mask"] = encoder_inputs(6)["attention_mask"];
  expect_refused(mixed, "'attention_mask' has sequence length 6 but 'input_ids' has 5");
  auto missing = encoder_inputs(5);
  missing.erase("attention_mask");
  expect_refused(missing, "input 'attention_mask' is missing");
  // Still serves a good length after the refusals.
  expect_lengths_match_the_interpreter(**exe, {5});
}

TEST(RangedNetwork, ADamagedOrTruncatedRangedArtifactIsRefused) {
  const std::string bytes = compile_ranged(encoder_range(1, 4), {});
  ASSERT_FALSE(bytes.empty());
  EXPECT_TRUE(runtime::is_ranged_artifact(bytes));
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x20;
  for (const std::string& bad : {flipped, bytes.substr(0, bytes.size() - 100)}) {
    auto a = RangedArtifact::parse(bad, "bad.tt");
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().code, ErrorCode::kDataLoss) << a.error().message;
  }
  // A one-network reader given a ranged file says what it is not.
  auto as_one = runtime::deserialize_network(bytes, "ranged.tt");
  ASSERT_FALSE(as_one);
  EXPECT_NE(as_one.error().message.find("TTNET"), std::string::npos) << as_one.error().message;
}

// The CUDA kernels of a bucket (batch_matmul.cuda, the softmax row kernel after the mask's add)
// emulated on this CPU: lengths 5..8 in the one bucket of 8.
TEST(RangedNetwork, CudaBucketsEmulatedComputeTheInterpretersOutputs) {
  CompileOptions options;
  options.target = "cuda-sm80";
  auto artifact = parse(compile_ranged(encoder_range(5, 8), options));
  ASSERT_TRUE(artifact);
  ASSERT_EQ(artifact->buckets(), std::vector<int64_t>{8});
  auto exe = RangedExecutable::load(artifact, 1, /*emulate=*/true);
  ASSERT_TRUE(exe) << exe.error().message;
  expect_lengths_match_the_interpreter(**exe, {5, 8});
}

// The same on a real GPU (gpu-check step b runs GpuDevice.*): each bucket's kernels as the
// hardware runs them, the padded keys' -infinity through its softmax row kernel.
TEST(GpuDevice, RangedEncoderRunsOnTheGpuAtEveryLength) {
#ifdef TT_WITH_CUDA
  auto gpus = codegen::cuda::list_gpus();
  if (!gpus) GTEST_SKIP() << "no GPU: " << gpus.error().message;
  CompileOptions options;
  options.target = "cuda-sm" + std::to_string(gpus->front().compute_capability);
  auto artifact = parse(compile_ranged(encoder_range(1, 16), options));
  ASSERT_TRUE(artifact);
  auto exe = RangedExecutable::load(artifact, 1);
  ASSERT_TRUE(exe) << exe.error().message;
  expect_lengths_match_the_interpreter(**exe, {1, 3, 8, 11, 16});
#else
  GTEST_SKIP() << "built without the CUDA Toolkit";
#endif
}

}  // namespace
}  // namespace tensortune
