// Output sizes and SAME padding against hand-computed values (DESIGN.md's formulas), and every
// bad workload field named in its error.
#include <gtest/gtest.h>

#include "schedule_space/task.h"

namespace ss = tensortune::schedule_space;

namespace {

ss::Conv2dWorkload base() { return ss::square_conv2d(64, 56, 64, 3, 1); }

TEST(Workload, OutputSizes) {
  auto w = base();
  EXPECT_EQ(w.out_height(), 56);
  w.stride_h = w.stride_w = 2;
  EXPECT_EQ(w.out_height(), 28);  // floor((56 + 2 - 3) / 2) + 1
  // Asymmetric: (224 + 2 + 3 - 7) / 2 + 1 = 112; dilation 2 with k=3: span 5.
  ss::Conv2dWorkload a = base();
  a.in_height = 224;
  a.kernel_h = 7;
  a.stride_h = 2;
  a.pad_top = 2;
  a.pad_bottom = 3;
  EXPECT_EQ(a.out_height(), 112);
  ss::Conv2dWorkload d = base();
  d.dilation_w = 2;
  d.pad_left = 0;
  d.pad_right = 1;
  EXPECT_EQ(d.out_width(), (56 + 1 - 5) / 1 + 1);
  EXPECT_DOUBLE_EQ(base().flop(), 2.0 * 64 * 56 * 56 * 64 * 9);
}

TEST(Workload, SamePaddingUpperAndLower) {
  // in=224, k=7, s=2: out=112, total = (112-1)*2 + 7 - 224 = 5 -> upper (2, 3), lower (3, 2).
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 224, 7, 2, 1), (ss::PadPair{2, 3}));
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameLower, 224, 7, 2, 1), (ss::PadPair{3, 2}));
  // in=56, k=3, s=2: out=28, total = 27*2 + 3 - 56 = 1 -> upper (0, 1), lower (1, 0).
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 56, 3, 2, 1), (ss::PadPair{0, 1}));
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameLower, 56, 3, 2, 1), (ss::PadPair{1, 0}));
  // in=57, k=3, s=2: out=29, total = 28*2 + 3 - 57 = 2 -> (1, 1) both ways.
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 57, 3, 2, 1), (ss::PadPair{1, 1}));
  // stride 1, dilation 2, k=3: total = 4 -> (2, 2); k=2 d=1 total 1 -> upper (0, 1).
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 10, 3, 1, 2), (ss::PadPair{2, 2}));
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 10, 2, 1, 1), (ss::PadPair{0, 1}));
  // Large stride: in=5, k=1, s=4: out=2, total = max(4 + 1 - 5, 0) = 0.
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kSameUpper, 5, 1, 4, 1), (ss::PadPair{0, 0}));
  EXPECT_EQ(ss::auto_pad(ss::AutoPad::kValid, 224, 7, 2, 1), (ss::PadPair{0, 0}));
  // SAME keeps out = ceil(in / stride).
  for (int64_t in = 5; in < 40; ++in)
    for (int64_t s = 1; s <= 3; ++s) {
      auto p = ss::auto_pad(ss::AutoPad::kSameUpper, in, 3, s, 1);
      EXPECT_EQ((in + p.begin + p.end - 3) / s + 1, (in + s - 1) / s) << in << " " << s;
    }
}

void expect_error(const ss::Conv2dWorkload& w, const std::string& fragment) {
  auto st = ss::validate(w);
  ASSERT_FALSE(st.has_value()) << fragment;
  EXPECT_NE(st.error().message.find(fragment), std::string::npos) << st.error().message;
}

TEST(Workload, BadFieldsAreNamed) {
  auto w = base();
  w.in_channels = 0;
  expect_error(w, "in_channels = 0, must be > 0");
  w = base();
  w.in_height = -3;
  expect_error(w, "in_height = -3, must be > 0");
  w = base();
  w.stride_w = 0;
  expect_error(w, "stride_w = 0, must be > 0");
  w = base();
  w.pad_left = -1;
  expect_error(w, "pad_left = -1, must be >= 0");
  w = base();
  w.kernel_h = 60;
  expect_error(w, "dilated kernel height 60 is larger than the padded input height 58");
  // Sizes near 2^63 (a fuzzed log's) are refused without their sums or products overflowing.
  w = base();
  w.in_width = 188888888888888884;
  expect_error(w, "a size above 2^31: 188888888888888884");
  w = base();
  w.kernel_h = int64_t{1} << 62;
  w.dilation_h = 8;
  expect_error(w, "dilated kernel height 36893488147419103225 is larger than the padded input");
  w = base();
  w.dilation_w = 0;
  expect_error(w, "dilation_w = 0");
  auto d = ss::validate(ss::DenseWorkload{1, 0, 10});
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message.find("out_features = 0"), std::string::npos);
}

TEST(Task, TemplateMustFitWorkloadAndKeyIsAutoTvmShaped) {
  auto bad = ss::make_task("conv2d_NCHWc.x86", ss::DenseWorkload{1, 10, 10}, {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("does not take a dense workload"), std::string::npos);
  auto unknown = ss::make_task("winograd", base(), {});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("unknown template 'winograd'"), std::string::npos);
  auto t = *ss::make_task(ss::kConv2dNCHWc, base(), {});
  EXPECT_EQ(ss::workload_key(t),
            "[\"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 64, 56, 56], \"float32\"], [\"TENSOR\", "
            "[64, 64, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], \"NCHW\", \"NCHW\", "
            "\"float32\"]]");
}

}  // namespace
