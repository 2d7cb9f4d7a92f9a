// The wire contract agrees with the in-process types: AutoTVM's error numbers are the same on
// both sides, and a measurement survives serialization.
#include <gtest/gtest.h>

#include "proto/tuning.pb.h"
#include "schedule_space/measure.h"

namespace ss = tensortune::schedule_space;

TEST(ProtoContract, ErrorNumbersMatchAutoTvmAndOurEnum) {
  for (int e = 0; e <= 8; ++e) {
    ASSERT_TRUE(tensortune::v1::MeasureErrorNo_IsValid(e));
    EXPECT_EQ(tensortune::v1::MeasureErrorNo_Name(static_cast<tensortune::v1::MeasureErrorNo>(e)),
              ss::measure_error_name(static_cast<ss::MeasureErrorNo>(e)));
  }
  EXPECT_FALSE(tensortune::v1::MeasureErrorNo_IsValid(9));
}

TEST(ProtoContract, MeasureRequestAndResultRoundTrip) {
  tensortune::v1::MeasureRequest req;
  req.mutable_workload()->set_template_name("conv2d_NCHWc.x86");
  auto* c = req.mutable_workload()->mutable_conv2d();
  c->set_batch(1);
  c->set_in_channels(64);
  c->set_pad_top(0);
  c->set_pad_bottom(1);
  auto* cfg = req.add_configs();
  cfg->set_index(626);
  auto* k = cfg->add_entity();
  k->set_name("tile_ic");
  k->mutable_split()->add_sizes(-1);
  k->mutable_split()->add_sizes(8);
  req.mutable_timing()->set_min_repeat_ms(100);
  tensortune::v1::MeasureRequest back;
  ASSERT_TRUE(back.ParseFromString(req.SerializeAsString()));
  EXPECT_EQ(back.workload().conv2d().pad_bottom(), 1);
  EXPECT_EQ(back.configs(0).entity(0).split().sizes(1), 8);

  tensortune::v1::MeasureResult r;
  r.set_error_no(tensortune::v1::WRONG_ANSWER);
  r.add_costs_s(1e9);
  tensortune::v1::MeasureResult rb;
  ASSERT_TRUE(rb.ParseFromString(r.SerializeAsString()));
  EXPECT_EQ(static_cast<ss::MeasureErrorNo>(rb.error_no()), ss::MeasureErrorNo::kWrongAnswer);
}
