// The wire contract agrees with the in-process types: AutoTVM's error numbers are the same on
// both sides, and tasks, configs and results survive our conversions both ways.
#include <gtest/gtest.h>

#include <tuple>

#include "proto/convert.h"
#include "proto/tuning.pb.h"
#include "schedule_space/measure.h"
#include "schedule_space/task.h"
#include "support/sha256.h"

namespace ss = tensortune::schedule_space;
namespace v1 = tensortune::v1;
namespace wire = tensortune::wire;

TEST(ProtoContract, ErrorNumbersMatchAutoTvmAndOurEnum) {
  for (int e = 0; e <= 8; ++e) {
    ASSERT_TRUE(tensortune::v1::MeasureErrorNo_IsValid(e));
    EXPECT_EQ(tensortune::v1::MeasureErrorNo_Name(static_cast<tensortune::v1::MeasureErrorNo>(e)),
              ss::measure_error_name(static_cast<ss::MeasureErrorNo>(e)));
  }
  EXPECT_FALSE(tensortune::v1::MeasureErrorNo_IsValid(9));
}

// Our conversions, not protobuf's serialization: every registered template's task, every
// config of a small space (by entity, the way a device reads it) and a result survive
// Task -> message -> bytes -> message -> Task.
TEST(ProtoContract, TasksConfigsAndResultsRoundTripThroughTheWire) {
  const ss::Workload conv = ss::square_conv2d(8, 9, 16, 3, 2);
  const ss::Workload conv_stride1 = ss::square_conv2d(8, 9, 16, 3, 1);  // what Winograd serves
  const ss::Workload dense = ss::DenseWorkload{3, 24, 20};
  for (const ss::Template* t : ss::all_templates()) {
    ss::Conv2dWorkload depthwise = ss::square_conv2d(16, 9, 16, 3, 2);
    depthwise.groups = 16;
    ss::Conv2dWorkload quantized = std::get<ss::Conv2dWorkload>(conv);
    quantized.precision = ss::Precision::kUInt8Int8;
    // transpose_b true: not the field's default, so that the round trip shows it was written.
    const ss::Workload w =
        t->operator_kind() == ss::OperatorKind::kBatchMatmul
            ? ss::Workload(ss::BatchMatmulWorkload{3, 8, 12, 16, true, t->precision()})
        : t->operator_kind() == ss::OperatorKind::kAttention
            ? ss::Workload(ss::AttentionWorkload{4, 8, 12, 16, 24, 2, 8, 0.125})
        : t->operator_kind() == ss::OperatorKind::kDense
            ? ss::Workload(ss::DenseWorkload{3, 32, 20, t->precision()})
        : t->precision() == ss::Precision::kUInt8Int8 ? ss::Workload(quantized)
        : t->precision() == ss::Precision::kFloat16   ? ss::Workload([&] {
            ss::Conv2dWorkload half = std::get<ss::Conv2dWorkload>(conv);
            half.precision = ss::Precision::kFloat16;
            return half;
          }())
        : t->accepts(conv)                            ? conv
        : t->accepts(conv_stride1)                    ? conv_stride1
                                                      : ss::Workload(depthwise);
    // A GPU target has no vector lanes (1); a CPU target's are its SIMD width in floats.
    const ss::Target target = t->backend() == "cuda" ? ss::Target{"cuda -arch=sm_80", 1}
                                                     : ss::Target{"llvm -keys=cpu", 8};
    const ss::Task task = *ss::make_task(std::string(t->name()), w, target);
    tensortune::v1::MeasureRequest req;
    tensortune::wire::task_to_proto(task, req.mutable_workload(), req.mutable_target());
    const ss::ConfigSpace space = *ss::make_config_space(task);
    for (int64_t i = 0; i < space.size(); ++i)
      if (space.is_valid_index(i))
        tensortune::wire::config_to_proto(space, *space.config_at(i), req.add_configs());
    tensortune::v1::MeasureRequest back;
    ASSERT_TRUE(back.ParseFromString(req.SerializeAsString()));
    auto task_back = tensortune::wire::task_from_proto(back.workload(), back.target());
    ASSERT_TRUE(task_back) << task_back.error().message;
    EXPECT_EQ(task_back->template_name, task.template_name);
    EXPECT_EQ(task_back->workload, task.workload);
    EXPECT_EQ(task_back->target, task.target);
    int k = 0;
    for (int64_t i = 0; i < space.size(); ++i) {
      if (!space.is_valid_index(i)) continue;
      auto c = tensortune::wire::config_from_proto(space, back.configs(k++));
      ASSERT_TRUE(c) << t->name() << " config " << i << ": " << c.error().message;
      EXPECT_EQ(c->index, i);
    }
    EXPECT_GT(k, 0);
    // The int8 templates' 7-bit-weight tasks travel as themselves.
    if (t->precision() == ss::Precision::kUInt8Int8) {
      ss::Task narrow = task;
      std::visit([](auto& x) { x.precision = ss::Precision::kUInt8Int7; }, narrow.workload);
      tensortune::v1::MeasureRequest n;
      tensortune::wire::task_to_proto(narrow, n.mutable_workload(), n.mutable_target());
      auto narrow_back = tensortune::wire::task_from_proto(n.workload(), n.target());
      ASSERT_TRUE(narrow_back) << narrow_back.error().message;
      EXPECT_EQ(narrow_back->workload, narrow.workload);
    }
  }

  // Lanes that do not fit the target's kind are refused naming the field and the rule.
  for (const auto& [spec, lanes, rule] :
       {std::tuple{"cuda -arch=sm_90", 8, "must be 1 for a cuda target"},
        std::tuple{"llvm -keys=cpu", 1, "must be 4, 8 or 16 for an llvm target"}}) {
    tensortune::v1::Workload w;
    tensortune::v1::Target t;
    const std::string name =
        std::string(spec).starts_with("cuda") ? "dense_small_batch.gpu" : "dense_pack.x86";
    tensortune::wire::task_to_proto(*ss::make_task(name, dense, ss::Target{spec, lanes}), &w, &t);
    auto refused = tensortune::wire::task_from_proto(w, t);
    ASSERT_FALSE(refused) << spec;
    EXPECT_NE(refused.error().message.find("target.vector_lanes = " + std::to_string(lanes) + ", " +
                                           rule),
              std::string::npos)
        << refused.error().message;
  }

  // Fields in range, tensors too large: the tracker refuses them before any device sees them
  // (a 65536x65536 dense weight is 2^32 elements, 16 GiB).
  for (const auto& [d, field] :
       {std::pair{ss::DenseWorkload{1, 65536, 65536}, "workload weight elements = 4.29497e+09"},
        std::pair{ss::DenseWorkload{32768, 32768, 1}, "workload output elements = 1.07374e+09"}}) {
    tensortune::v1::Workload w;
    tensortune::v1::Target t;
    tensortune::wire::task_to_proto(
        *ss::make_task("dense_pack.x86", d, ss::Target{"llvm -keys=cpu", 16}), &w, &t);
    auto refused = tensortune::wire::task_from_proto(w, t);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find(std::string(field) + ", must be in [1, 2.68435e+08]"),
              std::string::npos)
        << refused.error().message;
  }

  ss::MeasureResult r;
  r.config_index = 626;
  r.costs = {1.5e-3, 1.25e-3};
  r.error_no = ss::MeasureErrorNo::kWrongAnswer;
  r.error_msg = "element 3 is 1.0, reference 2.0";
  r.all_cost_s = 0.75;
  r.timestamp = 1.7e9;
  r.threads = 4;
  r.number = 12;
  tensortune::v1::MeasureResult wire_r;
  tensortune::wire::result_to_proto(r, &wire_r);
  tensortune::v1::MeasureResult wire_back;
  ASSERT_TRUE(wire_back.ParseFromString(wire_r.SerializeAsString()));
  auto back = tensortune::wire::result_from_proto(wire_back);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->config_index, r.config_index);
  EXPECT_EQ(back->costs, r.costs);
  EXPECT_EQ(back->error_no, r.error_no);
  EXPECT_EQ(back->error_msg, r.error_msg);
  EXPECT_EQ(back->threads, r.threads);
}

// A layout transform travels on its own (no template): it round-trips, and a malformed one is
// refused naming the field, including by the task path that builds kernels.
TEST(ProtoContract, LayoutTransformsRoundTripAndMalformedOnesAreRefused) {
  namespace ss = tensortune::schedule_space;
  const ss::LayoutTransformWorkload l{2, 48, 7, 5, 16, 3};
  tensortune::v1::Workload w;
  tensortune::wire::layout_transform_to_proto(l, &w);
  tensortune::v1::Workload back;
  ASSERT_TRUE(back.ParseFromString(w.SerializeAsString()));
  auto got = tensortune::wire::layout_transform_from_proto(back);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, l);
  auto as_task = tensortune::wire::task_from_proto(back, tensortune::v1::Target());
  ASSERT_FALSE(as_task);
  EXPECT_NE(as_task.error().message.find("layout_transform"), std::string::npos);

  auto refused = [](tensortune::v1::Workload bad, const std::string& needle) {
    auto r = tensortune::wire::layout_transform_from_proto(bad);
    ASSERT_FALSE(r) << needle;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  tensortune::v1::Workload bad = w;
  bad.mutable_layout_transform()->set_to_block(5);
  refused(bad, "to_block = 5 does not divide channels = 48");
  bad = w;
  bad.mutable_layout_transform()->set_height(-3);
  refused(bad, "height = -3");
  bad = w;
  bad.mutable_layout_transform()->set_batch(1 << 20);
  bad.mutable_layout_transform()->set_width(1 << 20);
  refused(bad, "more than 2^28 elements");
  bad = w;
  bad.set_template_name("conv2d_NCHWc.x86");
  refused(bad, "workload.template_name = 'conv2d_NCHWc.x86'");
  refused(tensortune::v1::Workload(), "layout_transform is not set");
}

TEST(ProtoContract, BuiltKernelsRoundTripAndEveryMalformedFieldIsNamed) {
  ss::KernelBinary b;
  b.format = ss::KernelFormat::kCubin;
  b.arch = "sm_90";
  b.source_sha256 = tensortune::sha256_hex("source");
  b.compiler = "NVRTC 13.0";
  b.code = std::string(
      "\x7f"
      "ELF\0\1binary",
      11);
  b.build_s = 0.25;
  b.built_by = "bob";
  v1::KernelBinary wire_form;
  wire::kernel_binary_to_proto(b, &wire_form);
  EXPECT_EQ(wire_form.sha256(), tensortune::sha256_hex(b.code));
  auto back = wire::kernel_binary_from_proto(wire_form);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->format, b.format);
  EXPECT_EQ(back->arch, b.arch);
  EXPECT_EQ(back->code, b.code);
  EXPECT_EQ(back->source_sha256, b.source_sha256);
  EXPECT_EQ(back->build_s, b.build_s);
  EXPECT_EQ(back->built_by, "bob");

  auto refused = [&](auto&& change, const std::string& named) {
    v1::KernelBinary bad = wire_form;
    change(bad);
    auto r = wire::kernel_binary_from_proto(bad);
    ASSERT_FALSE(r) << named;
    EXPECT_NE(r.error().message.find(named), std::string::npos) << r.error().message;
  };
  refused([](v1::KernelBinary& k) { k.set_format(v1::KernelBinary::FORMAT_UNSPECIFIED); },
          "kernel.format = 0");
  refused([](v1::KernelBinary& k) { k.set_arch(""); }, "kernel.arch");
  refused([](v1::KernelBinary& k) { k.set_compiler(std::string(200, 'x')); }, "kernel.compiler");
  refused([](v1::KernelBinary& k) { k.set_source_sha256("abc"); }, "kernel.source_sha256 = 'abc'");
  refused([](v1::KernelBinary& k) { k.mutable_code()->back() ^= 1; }, "kernel.sha256");
  refused(
      [](v1::KernelBinary& k) {
        k.clear_code();
        k.set_sha256(tensortune::sha256_hex(""));
      },
      "kernel.code has 0 bytes");
  refused([](v1::KernelBinary& k) { k.set_build_s(-1); }, "kernel.build_s");
  refused([](v1::KernelBinary& k) { k.add_features("bad\nname"); }, "kernel.features");
}
