// The CPU model's register budget checked against the code LLVM generates for that CPU: every
// tile a machine kind is offered compiles with no vector register moved to the stack and back;
// the tiles the model holds back from it for their registers (valid, as the template's validity
// does not know the CPU) spill.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "compiler/codegen/llvm/cpu_description.h"
#include "compiler/codegen/llvm/kernel.h"
#include "schedule_space/task.h"
#include "tests/schedule_space/conv2d_register_tile.h"

namespace tt = tensortune;
namespace ss = tensortune::schedule_space;

namespace {

using Tile = tensortune::testing::Conv2dRegisterTile;

Tile tile_of(const ss::ConfigSpace& s, const ss::Config& c, int lanes) {
  return tensortune::testing::conv2d_register_tile(s, c, lanes);
}

// Instructions that move a vector register to the stack or back (LLVM addresses its spill slots
// from %rsp; the kernels keep nothing else there unless they split the reduction).
int stack_vector_moves(const std::string& assembly) {
  static const std::regex move(R"(%[xyz]mm[0-9]+.*\(%rsp\)|\(%rsp\).*%[xyz]mm[0-9]+)");
  int n = 0;
  std::istringstream lines(assembly);
  for (std::string line; std::getline(lines, line);) n += std::regex_search(line, move);
  return n;
}

TEST(RegisterTiles, OfferedTilesKeepTheirVectorsInRegistersAndHeldBackOnesSpill) {
  const ss::Conv2dWorkload w = ss::square_conv2d(64, 28, 64, 1, 1);
  struct Probe {
    const char* cpu;
    int lanes;
  };
  // LLVM 14 knows no Zen 4 or 5: Ice Lake's server part stands for AVX-512, Zen 3 for AVX2.
  for (const Probe& p : {Probe{"znver3", 8}, Probe{"icelake-server", 16}}) {
    const std::string spec = std::string("llvm -keys=cpu -mcpu=") + p.cpu;
    const auto cpu = tt::codegen::cpu_for_target_spec(spec, p.lanes);
    ASSERT_TRUE(cpu.has_value()) << cpu.error().message;
    const auto task = *ss::make_task(ss::kConv2dNCHWc, w, {spec, p.lanes});
    const ss::ConfigSpace space = *ss::make_config_space(task);
    const int registers = ss::cpu_model_of(task.target).vector_registers;
    // One config per register count, the input block and loop order fixed, unsplit.
    std::map<int64_t, ss::Config> by_registers;
    for (int64_t i = 0; i < space.size(); ++i) {
      const ss::Config c = *space.config_at(i);
      if (!space.is_valid(c) || std::get<bool>(space.value(c, "split_reduction")) ||
          std::get<bool>(space.value(c, "oc_inner")) ||
          std::get<std::vector<int64_t>>(space.value(c, "tile_ic")).back() != 16)
        continue;
      by_registers.emplace(tile_of(space, c, p.lanes).registers, c);
    }
    int offered = 0, held_back = 0;
    for (const auto& [held, c] : by_registers) {
      if (!space.is_offered(c) && held <= registers) continue;  // too few accumulators
      const auto assembly = tt::codegen::kernel_assembly(task, space, c, *cpu);
      ASSERT_TRUE(assembly.has_value()) << assembly.error().message;
      const int moves = stack_vector_moves(*assembly);
      if (space.is_offered(c)) {
        ++offered;
        EXPECT_EQ(moves, 0) << p.cpu << " " << space.describe(c);
      } else {
        ++held_back;
        EXPECT_GT(moves, 0) << p.cpu << " " << space.describe(c);
      }
    }
    EXPECT_GT(offered, 3) << p.cpu;
    if (p.lanes == 8) EXPECT_GT(held_back, 3);  // AVX-512's validity cap leaves few beyond 32
  }
}

}  // namespace
