// The CPU kernel model: what the table says of each machine kind, and what it changes in the
// spaces (the register tiles tuners propose) and what it must not (indices, validity, records).
#include "schedule_space/cpu_model.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "schedule_space/conv2d_nchwc_int8_template.h"
#include "schedule_space/task.h"
#include "schedule_space/workload.h"
#include "tests/schedule_space/conv2d_register_tile.h"

namespace ss = tensortune::schedule_space;

namespace {

struct Kind {
  const char* cpu;
  int lanes;
  int registers;
  int fma_chains;
};

// From the vendors' manuals: 32 zmm or 16 ymm registers; latency x full-width pipes.
const Kind kKinds[] = {
    {"znver5", 16, 32, 8},          // two 512-bit pipes, 4 cycles
    {"znver4", 16, 32, 4},          // 512-bit FMAs through two 256-bit pipes
    {"znver3", 8, 16, 8},           // AVX2: two 256-bit pipes
    {"icelake-server", 16, 32, 8},  // two 512-bit pipes
    {"rocketlake", 16, 32, 4},      // one 512-bit pipe
};

ss::Target target_of(const Kind& k) {
  return {std::string("llvm -keys=cpu -mcpu=") + k.cpu, k.lanes};
}

TEST(CpuModel, TheTableKnowsEachMachineKind) {
  for (const Kind& k : kKinds) {
    const ss::CpuModel m = ss::cpu_model_of(target_of(k));
    EXPECT_EQ(m.cpu, k.cpu);
    EXPECT_EQ(m.vector_registers, k.registers) << k.cpu;
    EXPECT_EQ(m.fma_chains, k.fma_chains) << k.cpu;
    EXPECT_EQ(m.source, "table");
  }
  // A name the table does not know: the width's common case.
  const ss::CpuModel unknown = ss::cpu_model_for("futurelake", 16);
  EXPECT_EQ(unknown.vector_registers, 32);
  EXPECT_EQ(unknown.fma_chains, 8);
  EXPECT_EQ(ss::cpu_model_for("", 8).vector_registers, 16);
}

TEST(CpuModel, AMeasuredModelSpeaksForItsTargetAndTheSameTargetStaysEqual) {
  ss::Target t{"llvm -keys=cpu -mcpu=icelake-client", 16};
  ss::CpuModel measured = ss::cpu_model_for("icelake-client", 16);
  measured.fma_chains = 8;  // a server part LLVM names after a client one
  measured.source = "measured";
  ss::Target host = t;
  host.measured_cpu = measured;
  EXPECT_EQ(ss::cpu_model_of(t).fma_chains, 4);
  EXPECT_EQ(ss::cpu_model_of(host).fma_chains, 8);
  EXPECT_EQ(host, t);  // what is known of a CPU does not make it another target
  EXPECT_NE(ss::describe_cpu_model(measured).find("(measured)"), std::string::npos);
}

using Tile = tensortune::testing::Conv2dRegisterTile;

Tile tile_of(const ss::ConfigSpace& s, const ss::Config& c, int lanes) {
  return tensortune::testing::conv2d_register_tile(s, c, lanes);
}

// resnet-50's convolutions, and shapes at the edges: a 1x1 spatial convolution (squeeze and
// excitation), whose tiles can hold few accumulators.
std::vector<ss::Conv2dWorkload> workloads() {
  return {ss::square_conv2d(3, 224, 64, 7, 2),   ss::square_conv2d(64, 56, 256, 1, 1),
          ss::square_conv2d(64, 56, 64, 3, 1),   ss::square_conv2d(256, 56, 512, 1, 2),
          ss::square_conv2d(128, 28, 128, 3, 1), ss::square_conv2d(1024, 14, 256, 1, 1),
          ss::square_conv2d(512, 7, 512, 3, 1),  ss::square_conv2d(2048, 7, 512, 1, 1),
          ss::square_conv2d(96, 1, 24, 1, 1)};
}

// Brute force over each space: a config is offered exactly when it is valid, its tile fits the
// CPU's registers and has at least its FMA chains in accumulators; the floor gives way only where
// the workload has no fitting tile that large.
TEST(CpuModel, EachKindIsOfferedTheTilesItsRegistersAndPipesSuit) {
  for (const Kind& k : kKinds) {
    for (const ss::Conv2dWorkload& w : workloads()) {
      const auto task = ss::make_task(ss::kConv2dNCHWc, w, target_of(k));
      ASSERT_TRUE(task.has_value()) << task.error().message;
      const ss::ConfigSpace space = *ss::make_config_space(*task);
      int64_t largest_fitting = 0;
      for (int64_t i = 0; i < space.size(); ++i) {
        const ss::Config c = *space.config_at(i);
        const Tile t = tile_of(space, c, k.lanes);
        if (space.is_valid(c) && t.registers <= k.registers)
          largest_fitting = std::max(largest_fitting, t.accumulators);
      }
      ASSERT_GT(largest_fitting, 0);
      const int64_t floor = std::min<int64_t>(k.fma_chains, largest_fitting);
      int64_t offered = 0;
      for (int64_t i = 0; i < space.size(); ++i) {
        const ss::Config c = *space.config_at(i);
        const Tile t = tile_of(space, c, k.lanes);
        const bool expected =
            space.is_valid(c) && t.accumulators >= floor && t.registers <= k.registers;
        ASSERT_EQ(space.is_offered(c), expected)
            << k.cpu << " " << ss::describe_workload(w) << " " << space.describe(c);
        offered += expected;
      }
      EXPECT_EQ(space.offered_count(), offered);
      EXPECT_GT(offered, 0) << k.cpu << " " << ss::describe_workload(w);
    }
  }
}

// What the model must not change: the knobs, the index of every entity, validity at the same
// width. Records and AutoTVM logs mean the same on every machine; a config the model does not
// offer (a narrow tile) still decodes and is valid.
TEST(CpuModel, IndicesAndValidityAreTheTemplatesAlone) {
  const ss::Conv2dWorkload w = ss::square_conv2d(64, 56, 64, 3, 1);
  const auto generic = *ss::make_config_space(*ss::make_task(ss::kConv2dNCHWc, w, {"llvm", 16}));
  for (const Kind& k : kKinds) {
    const auto space = *ss::make_config_space(*ss::make_task(ss::kConv2dNCHWc, w, target_of(k)));
    ASSERT_EQ(space.size(), generic.size());
    for (int64_t i = 0; i < space.size(); i += 7) {
      const ss::Config c = *space.config_at(i);
      EXPECT_EQ(space.entity_of(c), generic.entity_of(c));
      if (k.lanes == 16) EXPECT_EQ(space.is_valid(c), generic.is_valid(c));
    }
  }
  // An AutoTVM-style entity with a two-accumulator tile: valid everywhere, offered nowhere a
  // wider tile keeps the pipes busier.
  const ss::Entity narrow{{"tile_ic", std::vector<int64_t>{-1, 16}},
                          {"tile_oc", std::vector<int64_t>{-1, 16}},
                          {"tile_ow", std::vector<int64_t>{-1, 2}},
                          {"unroll_kw", true},
                          {"tile_oh", int64_t{1}}};
  for (const Kind& k : kKinds) {
    const auto space = *ss::make_config_space(*ss::make_task(ss::kConv2dNCHWc, w, target_of(k)));
    const auto c = space.config_from_entity(narrow);
    ASSERT_TRUE(c.has_value()) << c.error().message;
    EXPECT_EQ(c->index, generic.config_from_entity(narrow)->index);
    EXPECT_TRUE(space.is_valid(*c));
    EXPECT_FALSE(space.is_offered(*c)) << k.cpu;
  }
}

// The AVX2 kind is offered no tile its sixteen registers cannot hold, though the space (the same
// knobs as on AVX-512) has valid ones; Zen 4, whose pipes need fewer chains, is offered every
// tile Zen 5 is, and more.
TEST(CpuModel, NarrowerRegistersAndFewerPipesWidenOrNarrowTheOffer) {
  const ss::Conv2dWorkload w = ss::square_conv2d(128, 28, 128, 3, 1);
  auto space_on = [&](const char* cpu, int lanes) {
    return *ss::make_config_space(
        *ss::make_task(ss::kConv2dNCHWc, w, {std::string("llvm -keys=cpu -mcpu=") + cpu, lanes}));
  };
  const auto zen3 = space_on("znver3", 8), zen4 = space_on("znver4", 16),
             zen5 = space_on("znver5", 16);
  int64_t spilling_valid = 0;
  for (int64_t i = 0; i < zen3.size(); ++i) {
    const ss::Config c = *zen3.config_at(i);
    if (tile_of(zen3, c, 8).registers > 16) {
      spilling_valid += zen3.is_valid(c);
      EXPECT_FALSE(zen3.is_offered(c));
    }
  }
  EXPECT_GT(spilling_valid, 0);
  int64_t only_zen4 = 0;
  for (int64_t i = 0; i < zen5.size(); ++i) {
    const ss::Config c = *zen5.config_at(i);
    if (zen5.is_offered(c)) EXPECT_TRUE(zen4.is_offered(c));
    only_zen4 += zen4.is_offered(c) && !zen5.is_offered(c);
  }
  EXPECT_GT(only_zen4, 0);
}

// The fallback config (what an untuned layer runs): the widest row of its output block's vectors
// (two where they divide the channels) within 28 accumulators with 32 registers, within 12 with
// AVX2's 16, where AutoTVM's row spills.
TEST(CpuModel, TheFallbackRowFitsTheRegisters) {
  for (const ss::Conv2dWorkload& w : workloads()) {
    for (const Kind& k : kKinds) {
      const auto task = *ss::make_task(ss::kConv2dNCHWc, w, target_of(k));
      const auto space = *ss::make_config_space(task);
      const ss::Config c = ss::default_config(task, space);
      ASSERT_TRUE(space.is_valid(c));
      const int64_t reg_n = std::get<std::vector<int64_t>>(space.value(c, "tile_ow")).back();
      const int64_t oc_bn = std::get<std::vector<int64_t>>(space.value(c, "tile_oc")).back();
      const int64_t vectors = (oc_bn + k.lanes - 1) / k.lanes;
      int64_t widest = 1;  // the largest divisor of OW within the cap
      for (int64_t n = 1; n * vectors <= (k.registers == 32 ? 28 : 12) && n <= w.out_width(); ++n)
        if (w.out_width() % n == 0) widest = n;
      EXPECT_EQ(reg_n, widest) << k.cpu << " " << ss::describe_workload(w);
    }
  }
}

}  // namespace

// A CPU with AMX (the table's Sapphire Rapids and later) runs int8 convolutions on its tiles:
// the int8 template's fallback takes a tile's shape there (input blocks of up to 256 channels in
// multiples of 16, rows of up to 16 pixels), AutoTVM's elsewhere; the offer holds the configs
// that run on the tiles, with input blocks of a multiple of 64 channels and, wider than 1x1,
// rows of 8 pixels or more; indices and validity stay the template's.
TEST(CpuModel, AmxCpusRunInt8ConvolutionsOnTilesOfTheirShape) {
  EXPECT_TRUE(ss::cpu_model_for("sapphirerapids", 16).amx_int8);
  EXPECT_TRUE(ss::cpu_model_for("graniterapids", 16).amx_int8);
  EXPECT_FALSE(ss::cpu_model_for("icelake-server", 16).amx_int8);
  EXPECT_NE(ss::describe_cpu_model(ss::cpu_model_for("sapphirerapids", 16)).find("AMX int8"),
            std::string::npos);
  const ss::Target amx{"llvm -keys=cpu -mcpu=sapphirerapids", 16};
  const ss::Target vnni{"llvm -keys=cpu -mcpu=icelake-server", 16};
  struct Case {
    ss::Conv2dWorkload w;
    int64_t ic_bn, reg_n, reg_h;
  };
  const Case cases[] = {
      {ss::square_conv2d(1024, 14, 256, 1, 1), 256, 14, 1},
      {ss::square_conv2d(256, 14, 256, 3, 1), 256, 14, 1},
      {ss::square_conv2d(2048, 7, 512, 1, 1), 256, 7, 2},  // two rows of 7: one tile of 14
      {ss::square_conv2d(96, 28, 32, 3, 1), 96, 14, 1},
      {ss::square_conv2d(24, 28, 32, 3, 1), 12, 0, 0},  // no multiple of 16: AutoTVM's
  };
  for (Case c : cases) {
    c.w.precision = ss::Precision::kUInt8Int8;
    const auto on_amx = ss::make_task(ss::kConv2dNCHWcInt8, c.w, amx);
    const auto on_vnni = ss::make_task(ss::kConv2dNCHWcInt8, c.w, vnni);
    ASSERT_TRUE(on_amx.has_value() && on_vnni.has_value());
    const ss::ConfigSpace a = *ss::make_config_space(*on_amx);
    const ss::ConfigSpace v = *ss::make_config_space(*on_vnni);
    const auto d = ss::conv2d_nchwc_int8_schedule(a, ss::default_config(*on_amx, a));
    const auto autotvm = ss::conv2d_nchwc_int8_schedule(v, ss::default_config(*on_vnni, v));
    EXPECT_EQ(d.ic_bn, c.ic_bn) << ss::describe_workload(c.w);
    if (c.reg_n > 0) {
      EXPECT_EQ(d.oc_bn, 16);
      EXPECT_EQ(d.reg_n, c.reg_n) << ss::describe_workload(c.w);
      EXPECT_EQ(d.reg_h, c.reg_h) << ss::describe_workload(c.w);
      EXPECT_TRUE(ss::runs_on_amx_tiles(d));
      EXPECT_LE(autotvm.ic_bn, 16);  // AutoTVM's blocks are a quarter of a tile step at most
    } else {
      EXPECT_EQ(d.ic_bn, autotvm.ic_bn);
      EXPECT_EQ(d.reg_n, autotvm.reg_n);
    }
    ASSERT_EQ(a.size(), v.size());
    int64_t offered = 0;
    for (int64_t i = 0; i < a.size(); ++i) {
      const ss::Config cfg = *a.config_at(i);
      ASSERT_EQ(a.is_valid(cfg), v.is_valid(cfg));
      ASSERT_EQ(a.entity_of(cfg), v.entity_of(cfg));
      const auto s = ss::conv2d_nchwc_int8_schedule(a, cfg);
      const bool one_by_one = c.w.kernel_h == 1 && c.w.kernel_w == 1;
      const bool expected = a.is_valid(cfg) && ss::runs_on_amx_tiles(s) && s.ic_bn % 64 == 0 &&
                            (one_by_one || s.reg_h * s.reg_n >= 8);
      if (c.w.in_channels % 64 == 0) EXPECT_EQ(a.is_offered(cfg), expected) << a.describe(cfg);
      if (a.is_offered(cfg)) {
        ++offered;
        EXPECT_TRUE(ss::runs_on_amx_tiles(s)) << a.describe(cfg);
      }
    }
    EXPECT_GT(offered, 0) << ss::describe_workload(c.w);
  }
}
