// conv2d_NCHWc_int8.x86: its space has AutoTVM's knobs, filters and index order (derived by
// hand from topi/x86/conv2d_int8.py's definitions), its fallback is AutoTVM's, and its kernels
// equal a plain int32 convolution bit for bit on odd shapes, asymmetric pads, strides, dilation
// and batches, through the operator runner and through the measurer's own correctness check.
#include <gtest/gtest.h>

#include <array>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/measure/local_measurer.h"
#include "compiler/measure/op_runner.h"
#include "compiler/measure/reference_ops.h"
#include "records/autotvm_log.h"
#include "schedule_space/conv2d_nchwc_int8_template.h"
#include "schedule_space/task.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;
using tt::Tensor;

namespace {

ss::Conv2dWorkload quantized(std::vector<int64_t> data, std::vector<int64_t> kernel,
                             std::vector<int64_t> strides, std::vector<int64_t> pads,
                             std::vector<int64_t> dilation) {
  auto w = ss::conv2d_workload(data, kernel, strides, pads, dilation);
  EXPECT_TRUE(w.has_value()) << w.error().message;
  w->precision = ss::Precision::kUInt8Int8;
  return *w;
}

ss::Task int8_task(const ss::Conv2dWorkload& w) {
  auto task = ss::make_task(ss::kConv2dNCHWcInt8, w, tt::codegen::host_target());
  EXPECT_TRUE(task.has_value()) << task.error().message;
  return *task;
}

// Every value of the dtype's range appears: products of 255 and -128 included.
Tensor integers(tt::DType dtype, const tt::Shape& shape, int64_t lo, int64_t hi, int64_t seed) {
  Tensor t = Tensor::zeros(dtype, shape);
  for (size_t i = 0; i < t.i64.size(); ++i)
    t.i64[i] = lo + static_cast<int64_t>((i * 7919 + static_cast<size_t>(seed) * 104729) %
                                         static_cast<size_t>(hi - lo + 1));
  return t;
}

// Every valid config of the task's space equals `want` (int32), element for element; at least
// four configs are checked.
void expect_every_valid_config_exact(const ss::Task& task, const ss::ConfigSpace& space,
                                     const tt::measure::OperatorInputs& in, const Tensor& want) {
  const auto& w = std::get<ss::Conv2dWorkload>(task.workload);
  int checked = 0;
  for (int64_t i = 0; i < space.size(); ++i) {
    const ss::Config c = *space.config_at(i);
    if (!space.is_valid(c)) continue;
    auto got = tt::measure::run_operator(task, space, c, in, 2);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->dtype, tt::DType::kInt32);
    ASSERT_EQ(got->shape, want.shape);
    for (size_t j = 0; j < want.i64.size(); ++j)
      ASSERT_EQ(got->i64[j], want.i64[j])
          << ss::describe_workload(w) << " " << space.describe(c) << " element " << j;
    ++checked;
  }
  EXPECT_GE(checked, 4) << ss::describe_workload(w);
}

// Every valid config of w's task equals the int32 convolution on full-range operands drawn
// with the two seeds.
void expect_full_range_exact(const ss::Conv2dWorkload& w, int64_t data_seed, int64_t weight_seed) {
  const ss::Task task = int8_task(w);
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  const ss::OperandShapes s = ss::operand_shapes(w);
  tt::measure::OperatorInputs in{integers(tt::DType::kUInt8, s.data, 0, 255, data_seed),
                                 integers(tt::DType::kInt8, s.weight, -128, 127, weight_seed),
                                 {}};
  const Tensor want = tt::measure::conv2d_nchw_reference(in.data, in.weight, nullptr, w);
  ASSERT_EQ(want.dtype, tt::DType::kInt32);
  ASSERT_NO_FATAL_FAILURE(expect_every_valid_config_exact(task, *space, in, want));
}

}  // namespace

TEST(Int8Conv, SpaceHasAutoTvmsKnobsFiltersAndIndexOrder) {
  // IC 8: tile_ic inner in {4, 8}; OC 32: tile_oc inner in {16, 32}; OW 6: {1, 2, 3, 6};
  // unroll_kw {true, false}: 2 * 2 * 4 * 2 = 32 configs, tile_ic the least significant digit.
  const ss::Task task = int8_task(quantized({1, 8, 6, 6}, {32, 8, 3, 3}, {1}, {1}, {1}));
  auto space = ss::make_config_space(task);
  ASSERT_TRUE(space.has_value());
  ASSERT_EQ(space->knobs().size(), 4u);
  EXPECT_EQ(space->knobs()[0].name, "tile_ic");
  EXPECT_EQ(space->knobs()[1].name, "tile_oc");
  EXPECT_EQ(space->knobs()[2].name, "tile_ow");
  EXPECT_EQ(space->knobs()[3].name, "unroll_kw");
  EXPECT_EQ(space->size(), 32);
  // ic 8 (1) + 2 * (oc 16 (0) + 2 * (ow 3 (2) + 4 * unroll_kw false (1))) = 25.
  const ss::Config c = *space->config_at(25);
  EXPECT_EQ(space->describe(c), "tile_ic=[-1, 8] tile_oc=[-1, 16] tile_ow=[-1, 3] unroll_kw=false");
  // 1x1 kernels have tile_oh instead, [1] alone when the output has one row.
  auto one_row =
      ss::make_config_space(int8_task(quantized({1, 4, 1, 5}, {16, 4, 1, 1}, {1}, {0}, {1})));
  ASSERT_TRUE(one_row.has_value());
  EXPECT_EQ(one_row->knobs()[3].name, "tile_oh");
  EXPECT_EQ(one_row->knobs()[3].options.size(), 1u);
  EXPECT_EQ(one_row->size(), 1 * 1 * 2 * 1);
  // Output channels that are not a multiple of 16 (24) take blocks of 8: {8, 24}.
  auto narrow =
      ss::make_config_space(int8_task(quantized({1, 8, 6, 6}, {24, 8, 1, 1}, {1}, {0}, {1})));
  ASSERT_TRUE(narrow.has_value());
  ASSERT_EQ(narrow->knobs()[1].options.size(), 2u);
  EXPECT_NE(narrow->describe(*narrow->config_at(0)).find("tile_oc=[-1, 8]"), std::string::npos)
      << narrow->describe(*narrow->config_at(0));
  EXPECT_NE(narrow->describe(*narrow->config_at(2)).find("tile_oc=[-1, 24]"), std::string::npos)
      << narrow->describe(*narrow->config_at(2));
  // The workload key is AutoTVM's: uint8 data, int8 kernel, NCHW layouts, int32 output.
  EXPECT_EQ(ss::workload_key(task),
            "[\"conv2d_NCHWc_int8.x86\", [[\"TENSOR\", [1, 8, 6, 6], \"uint8\"], [\"TENSOR\", "
            "[32, 8, 3, 3], \"int8\"], [1, 1], [1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", "
            "\"int32\"]]");
}

TEST(Int8Conv, OnlyQuantizedWorkloadsOfWholeChannelBlocksAreAccepted) {
  auto w = quantized({1, 8, 6, 6}, {32, 8, 3, 3}, {1}, {1}, {1});
  w.precision = ss::Precision::kFloat32;
  auto float_task = ss::make_task(ss::kConv2dNCHWcInt8, w, tt::codegen::host_target());
  ASSERT_FALSE(float_task.has_value());
  EXPECT_NE(float_task.error().message.find("float32"), std::string::npos);
  w.precision = ss::Precision::kUInt8Int8;
  // And the float templates refuse the quantized workload.
  auto direct = ss::make_task(ss::kConv2dNCHWc, w, tt::codegen::host_target());
  ASSERT_FALSE(direct.has_value());
  EXPECT_NE(direct.error().message.find("uint8 x int8 -> int32"), std::string::npos);
  auto odd =
      ss::make_task(ss::kConv2dNCHWcInt8, quantized({1, 6, 6, 6}, {32, 6, 3, 3}, {1}, {1}, {1}),
                    tt::codegen::host_target());
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.error().message.find("divisible by 4"), std::string::npos);
  auto twenty =
      ss::make_task(ss::kConv2dNCHWcInt8, quantized({1, 8, 6, 6}, {20, 8, 3, 3}, {1}, {1}, {1}),
                    tt::codegen::host_target());
  ASSERT_FALSE(twenty.has_value());
  EXPECT_NE(twenty.error().message.find("output channels by 8"), std::string::npos);
  const auto templates = ss::templates_for(w, "llvm");
  ASSERT_EQ(templates.size(), 1u);
  EXPECT_EQ(templates[0]->name(), ss::kConv2dNCHWcInt8);
}

TEST(Int8Conv, FallbackIsAutoTvms) {
  // 3x3: oc_bn 16, ic_bn the first of 16, 12, 8, 4 dividing IC (24 -> 12), reg_n the largest
  // divisor of OW <= 31 (28 -> 28, shrunk to the register budget: 28 * 2 * 16 / 8 > 28).
  const ss::Task t3 = int8_task(quantized({1, 24, 28, 28}, {32, 24, 3, 3}, {1}, {1}, {1}));
  auto s3 = ss::make_config_space(t3);
  const ss::Conv2dInt8Schedule d3 =
      ss::conv2d_nchwc_int8_schedule(*s3, ss::default_config(t3, *s3));
  EXPECT_EQ(d3.oc_bn, 16);
  EXPECT_EQ(d3.ic_bn, 12);
  EXPECT_FALSE(d3.unroll_kw);
  EXPECT_TRUE(s3->is_valid(ss::default_config(t3, *s3)));
  EXPECT_LE(d3.reg_n, 28);
  EXPECT_EQ(28 % d3.reg_n, 0);
  // 1x1, OW = OH = 14: reg_n 14 and two rows (14 * 2 < 32), as AutoTVM, within the budget.
  const ss::Task t1 = int8_task(quantized({1, 16, 14, 14}, {16, 16, 1, 1}, {1}, {0}, {1}));
  auto s1 = ss::make_config_space(t1);
  const ss::Conv2dInt8Schedule d1 =
      ss::conv2d_nchwc_int8_schedule(*s1, ss::default_config(t1, *s1));
  EXPECT_EQ(d1.ic_bn, 16);
  const int64_t lanes = t1.target.vector_lanes;
  const int64_t per_position = 2 * ((16 + lanes - 1) / lanes);
  EXPECT_LE(d1.reg_n * d1.reg_h * per_position, ss::kMaxAccumulators);
  if (per_position * 28 <= ss::kMaxAccumulators) {  // AutoTVM's choice fits: it is kept
    EXPECT_EQ(d1.reg_n, 14);
    EXPECT_EQ(d1.reg_h, 2);
  }
}

TEST(Int8Conv, KernelsEqualAnInt32ConvolutionBitForBit) {
  // 2 images, 12 -> 32 channels, a 3x2 kernel, stride (2, 1), dilation (1, 2), pads t1 l0 b2
  // r1; and a 1x1 with an odd output height (the row tail of tile_oh = 2).
  const ss::Conv2dWorkload shapes[] = {
      quantized({2, 12, 9, 11}, {32, 12, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}),
      quantized({1, 8, 7, 5}, {48, 8, 1, 1}, {1}, {0}, {1}),
      quantized({1, 16, 6, 6}, {16, 16, 3, 3}, {1}, {1}, {1}),
      quantized({1, 12, 5, 7}, {24, 12, 3, 3}, {1}, {1}, {1}),  // blocks of 8 channels
  };
  for (const ss::Conv2dWorkload& w : shapes)
    ASSERT_NO_FATAL_FAILURE(expect_full_range_exact(w, 1, 2));
}

// Weights in [-64, 64] (Precision::kUInt8Int7): on AVX2 the kernel multiplies the bytes with
// `vpmaddubsw`, whose int16 pair sums the extremes (255 * 64 * 2, 255 * -64 * 2) just fit; every
// config equals the int32 convolution, and a weight outside the range is refused, not summed
// wrongly.
TEST(Int8Conv, SevenBitWeightsAreExactInEveryConfig) {
  const ss::Conv2dWorkload shapes[] = {
      quantized({2, 12, 9, 11}, {32, 12, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}),
      quantized({1, 8, 7, 5}, {48, 8, 1, 1}, {1}, {0}, {1}),
      quantized({1, 16, 5, 6}, {40, 16, 1, 1}, {1}, {0}, {1}),  // blocks of 8 channels
  };
  for (ss::Conv2dWorkload w : shapes) {
    w.precision = ss::Precision::kUInt8Int7;
    const ss::Task task = int8_task(w);
    auto space = ss::make_config_space(task);
    ASSERT_TRUE(space.has_value());
    const ss::OperandShapes s = ss::operand_shapes(w);
    // The extremes in adjacent pairs too: 255 everywhere in one image row, +-64 runs.
    tt::measure::OperatorInputs in{integers(tt::DType::kUInt8, s.data, 0, 255, 7),
                                   integers(tt::DType::kInt8, s.weight, -64, 64, 8),
                                   {}};
    for (size_t i = 0; i < in.data.i64.size() / 4; ++i) in.data.i64[i] = 255;
    for (size_t i = 0; i < in.weight.i64.size() / 4; ++i)
      in.weight.i64[i] = i < in.weight.i64.size() / 8 ? 64 : -64;
    const Tensor want = tt::measure::conv2d_nchw_reference(in.data, in.weight, nullptr, w);
    ASSERT_NO_FATAL_FAILURE(expect_every_valid_config_exact(task, *space, in, want));

    in.weight.i64[5] = 65;
    auto refused = tt::measure::run_operator(task, *space, ss::default_config(task, *space), in, 1);
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message.find("weight[5] = 65 is outside [-64, 64]"),
              std::string::npos)
        << refused.error().message;
  }
}

// An int7 task is its own: its key names the weight "int7", the key reads back as int7, and
// the same shape with int8 weights is another task; the measurer draws its weights in range.
TEST(Int8Conv, SevenBitWeightsAreTheirOwnTask) {
  ss::Conv2dWorkload w = quantized({1, 8, 6, 6}, {32, 8, 3, 3}, {1}, {1}, {1});
  const std::string int8_key = ss::workload_key(int8_task(w));
  w.precision = ss::Precision::kUInt8Int7;
  const ss::Task task = int8_task(w);
  const std::string key = ss::workload_key(task);
  EXPECT_NE(key, int8_key);
  EXPECT_NE(key.find(R"(["TENSOR", [32, 8, 3, 3], "int7"])"), std::string::npos) << key;
  auto back = tt::records::task_from_workload_key(key, task.target.spec, task.target.vector_lanes);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(std::get<ss::Conv2dWorkload>(back->workload).precision, ss::Precision::kUInt8Int7);
  EXPECT_EQ(ss::describe_workload(w).substr(ss::describe_workload(w).size() - 5), " u8i7");

  tt::measure::MeasureOptions options;
  options.check_correctness = true;
  options.timing.repeat = 1;
  options.timing.number = 1;
  auto space = ss::make_config_space(task);
  auto measurer = tt::measure::LocalMeasurer::create(task, options);
  ASSERT_TRUE(measurer.has_value()) << measurer.error().message;
  const auto results = (*measurer)->measure(*space, {ss::default_config(task, *space)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error_no, ss::MeasureErrorNo::kNoError) << results[0].error_msg;
}

TEST(Int8Conv, ThePortableFormIsExactToo) {
  // The kernel's form follows the host (VNNI, AVX2 pairs, widened products); the widened one
  // runs on CPUs with neither, and here when asked for.
  setenv("TT_INT8_DOT", "widened", 1);
  const ss::Conv2dWorkload w = quantized({1, 8, 7, 9}, {32, 8, 3, 3}, {1, 2}, {2, 1, 0, 1}, {1});
  const ss::Task task = int8_task(w);
  auto space = ss::make_config_space(task);
  const ss::OperandShapes s = ss::operand_shapes(w);
  tt::measure::OperatorInputs in{integers(tt::DType::kUInt8, s.data, 0, 255, 3),
                                 integers(tt::DType::kInt8, s.weight, -128, 127, 4),
                                 {}};
  const Tensor want = tt::measure::conv2d_nchw_reference(in.data, in.weight, nullptr, w);
  for (int64_t i = 0; i < space->size(); i += 3) {
    const ss::Config c = *space->config_at(i);
    if (!space->is_valid(c)) continue;
    auto got = tt::measure::run_operator(task, *space, c, in, 1);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    ASSERT_EQ(got->i64, want.i64) << space->describe(c);
  }
  unsetenv("TT_INT8_DOT");
}

// On a CPU with AMX the kernels run on its tiles (int8_amx_tile.h): every valid config, of
// input blocks below, at and above the 64 channels of one tile step (with and without a rest),
// register tiles wider than the 16 pixels of one A tile, two rows (as one run of pixels where
// the kernel is 1x1), strides and padded borders, equals the int32 convolution; and so does the
// vector form the same configs take elsewhere.
TEST(Int8Conv, AmxTilesAreExactInEveryConfig) {
  if (!tt::codegen::host_has_amx_int8())
    GTEST_SKIP() << "this CPU has no AMX int8 tiles (or Linux did not grant their state)";
  const ss::Conv2dWorkload shapes[] = {
      quantized({1, 96, 5, 20}, {32, 96, 3, 3}, {1}, {1}, {1}),
      quantized({1, 128, 4, 18}, {32, 128, 1, 1}, {1}, {0}, {1}),
      quantized({2, 64, 9, 35}, {16, 64, 3, 3}, {2}, {1, 2, 0, 1}, {1}),
      // Two rows of 7 read as one run of 14 pixels, and a tail row.
      quantized({1, 80, 5, 7}, {32, 80, 1, 1}, {1}, {0}, {1}),
      // Rows shorter than an A tile: the padded form, its planes cut by the pool's two slices
      // (3 x 5 row tiles), dilation and uneven padding.
      quantized({1, 64, 5, 7}, {48, 64, 3, 3}, {1}, {1}, {1}),
      quantized({2, 32, 6, 9}, {16, 32, 3, 3}, {1}, {2, 1, 0, 2}, {2}),
  };
  for (const char* form : {"amx", "vnni"}) {
    if (std::string(form) == "vnni") setenv("TT_INT8_DOT", "vnni", 1);
    SCOPED_TRACE(form);
    for (const ss::Conv2dWorkload& w : shapes)
      ASSERT_NO_FATAL_FAILURE(expect_full_range_exact(w, 5, 6));
    unsetenv("TT_INT8_DOT");
  }
}

TEST(Int8Conv, TheMeasurerChecksAndTimesInt8Kernels) {
  const ss::Task task = int8_task(quantized({1, 16, 10, 10}, {32, 16, 3, 3}, {1}, {1}, {1}));
  auto space = ss::make_config_space(task);
  tt::measure::MeasureOptions options;
  options.check_correctness = true;
  options.timing.repeat = 1;
  options.timing.number = 1;
  auto measurer = tt::measure::LocalMeasurer::create(task, options);
  ASSERT_TRUE(measurer.has_value()) << measurer.error().message;
  const auto results = (*measurer)->measure(*space, {ss::default_config(task, *space)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error_no, ss::MeasureErrorNo::kNoError) << results[0].error_msg;
  EXPECT_GT(results[0].mean_cost(), 0);
}

TEST(Int8Conv, AnAutoTvmInt8RecordImportsAtItsIndex) {
  // A record as AutoTVM writes one for this task: config index 25 of the space above.
  const std::string line =
      R"({"input": ["llvm -keys=cpu -mcpu=cascadelake", "conv2d_NCHWc_int8.x86", )"
      R"([["TENSOR", [1, 8, 6, 6], "uint8"], ["TENSOR", [32, 8, 3, 3], "int8"], [1, 1], )"
      R"([1, 1, 1, 1], [1, 1], "NCHW", "NCHW", "int32"], {}], "config": {"index": 25, )"
      R"("code_hash": null, "entity": [["tile_ic", "sp", [-1, 8]], ["tile_oc", "sp", [-1, 16]], )"
      R"(["tile_ow", "sp", [-1, 3]], ["unroll_kw", "ot", false]]}, "result": [[0.0001], 0, )"
      R"(0.5, 1700000000.0], "version": 0.2, "tvm_version": "0.10.0"})";
  auto record = tt::records::parse_autotvm_line(line, 16);
  ASSERT_TRUE(record.has_value()) << record.error().message;
  EXPECT_EQ(record->logged_index, 25);
  const auto& w = std::get<ss::Conv2dWorkload>(record->task.workload);
  EXPECT_EQ(w.precision, ss::Precision::kUInt8Int8);
  auto space = ss::make_config_space(record->task);
  ASSERT_TRUE(space.has_value());
  auto config =
      space->config_from_entity(ss::template_of(record->task).entity_from_autotvm(record->entity));
  ASSERT_TRUE(config.has_value()) << config.error().message;
  EXPECT_EQ(config->index, 25);
  // A float kernel dtype in an int8 task is refused naming the field.
  std::string wrong = line;
  wrong.replace(wrong.find("\"int8\"]"), 6, "\"float32\"");
  auto refused = tt::records::parse_autotvm_line(wrong, 16);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("input[2][1]"), std::string::npos)
      << refused.error().message;
}

TEST(Int8Dense, SpaceKeyAndLayoutAreAutoTvms) {
  ss::DenseWorkload w{12, 32, 20, ss::Precision::kUInt8Int8};
  auto task = ss::make_task(ss::kDenseInt8, w, tt::codegen::host_target());
  ASSERT_TRUE(task.has_value()) << task.error().message;
  auto space = ss::make_config_space(*task);
  ASSERT_EQ(space->knobs().size(), 1u);
  EXPECT_EQ(space->knobs()[0].name, "tile_y");
  EXPECT_EQ(space->size(), 6);  // divisors of 12
  EXPECT_EQ(space->describe(*space->config_at(3)), "tile_y=[-1, 4]");
  EXPECT_EQ(ss::workload_key(*task),
            "[\"dense_int8.x86\", [[\"TENSOR\", [12, 20], \"uint8\"], [\"TENSOR\", [32, 20], "
            "\"int8\"], null, \"int32\"]]");
  // NC16n4c: unit n, k at ((n / 16) * (K / 4) + k / 4) * 64 + (n % 16) * 4 + k % 4.
  Tensor weight = Tensor::zeros(tt::DType::kInt8, {32, 20});
  weight.i64[17 * 20 + 6] = 5;  // n = 17, k = 6
  const ss::Template& t = ss::template_of(*task);
  const ss::KernelSignature sig = t.signature(*task, *space, *space->config_at(0));
  EXPECT_EQ(sig.weight_shape, (std::vector<int64_t>{2, 5, 16, 4}));
  const Tensor packed = t.pack_weight(sig, weight);
  EXPECT_EQ(packed.i64[(1 * 5 + 1) * 64 + 1 * 4 + 2], 5);
  // N not a multiple of 16 packs NC8n4c: unit 17, k 6 in block 2 of 8.
  auto eights =
      ss::make_task(ss::kDenseInt8, ss::DenseWorkload{12, 24, 20, ss::Precision::kUInt8Int8},
                    tt::codegen::host_target());
  ASSERT_TRUE(eights.has_value()) << eights.error().message;
  auto eights_space = ss::make_config_space(*eights);
  const ss::KernelSignature sig8 = t.signature(*eights, *eights_space, *eights_space->config_at(0));
  EXPECT_EQ(sig8.weight_shape, (std::vector<int64_t>{3, 5, 8, 4}));
  Tensor weight24 = Tensor::zeros(tt::DType::kInt8, {24, 20});
  weight24.i64[17 * 20 + 6] = 5;
  EXPECT_EQ(t.pack_weight(sig8, weight24).i64[(2 * 5 + 1) * 32 + 1 * 4 + 2], 5);
  // K must be a multiple of 4 and N of 8; a float dense is another template's.
  auto odd = ss::make_task(ss::kDenseInt8, ss::DenseWorkload{12, 20, 20, ss::Precision::kUInt8Int8},
                           tt::codegen::host_target());
  ASSERT_FALSE(odd.has_value());
  EXPECT_NE(odd.error().message.find("out_features by 8"), std::string::npos);
  EXPECT_FALSE(
      ss::make_task(ss::kDenseInt8, ss::DenseWorkload{12, 32, 20}, tt::codegen::host_target())
          .has_value());
}

TEST(Int8Dense, KernelsEqualAnInt32MatrixProductBitForBit) {
  for (const ss::DenseWorkload& w : {ss::DenseWorkload{1, 48, 36, ss::Precision::kUInt8Int8},
                                     ss::DenseWorkload{7, 32, 260, ss::Precision::kUInt8Int8},
                                     ss::DenseWorkload{30, 16, 4, ss::Precision::kUInt8Int8},
                                     ss::DenseWorkload{7, 32, 260, ss::Precision::kUInt8Int7},
                                     ss::DenseWorkload{3, 40, 36, ss::Precision::kUInt8Int8},
                                     ss::DenseWorkload{3, 40, 36, ss::Precision::kUInt8Int7}}) {
    const ss::IntRange range = ss::weight_range(w.precision);
    auto task = ss::make_task(ss::kDenseInt8, w, tt::codegen::host_target());
    ASSERT_TRUE(task.has_value()) << task.error().message;
    auto space = ss::make_config_space(*task);
    tt::measure::OperatorInputs in{
        integers(tt::DType::kUInt8, {w.batch, w.in_features}, 0, 255, 5),
        integers(tt::DType::kInt8, {w.out_features, w.in_features}, range.lo, range.hi, 6),
        {}};
    const Tensor want = tt::measure::dense_reference(in.data, in.weight, nullptr, w);
    int checked = 0;
    for (int64_t i = 0; i < space->size(); ++i) {
      const ss::Config c = *space->config_at(i);
      if (!space->is_valid(c)) continue;
      auto got = tt::measure::run_operator(*task, *space, c, in, 2);
      ASSERT_TRUE(got.has_value()) << got.error().message;
      ASSERT_EQ(got->shape, want.shape);
      ASSERT_EQ(got->i64, want.i64) << ss::describe_workload(w) << " " << space->describe(c);
      ++checked;
    }
    EXPECT_GE(checked, 1);
  }
}
