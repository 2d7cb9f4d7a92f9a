#include "schedule_space/attention_template.h"

#include <algorithm>

#include "schedule_space/task.h"
#include "schedule_space/template_util.h"

namespace tensortune::schedule_space {
namespace {

using util::ceil_div;
using util::log_feature;
using util::split_sizes;

constexpr int64_t kMaxKeysPerBlock = 512;

/// Vector registers of the scores tile and of the output tile.
int64_t score_accumulators(const AttentionSchedule& s, int64_t lanes) {
  return s.yi * ceil_div(s.xi, lanes);
}
int64_t output_accumulators(const AttentionWorkload& w, const AttentionSchedule& s, int64_t lanes) {
  return s.yi * ceil_div(w.dv, lanes);
}

const AttentionWorkload& workload(const Task& task) {
  return std::get<AttentionWorkload>(task.workload);
}

}  // namespace

AttentionOperandOffsets attention_operand_offsets(const AttentionWorkload& w) {
  const int64_t v = w.batch * w.k * w.n;
  return {0, v, v + w.batch * w.n * w.dv};
}

ConfigSpace attention_space(const AttentionWorkload& w, int vector_lanes) {
  std::vector<Knob> knobs;
  // Tails allowed (a ViT's 197 tokens are prime): the last tile has fewer rows, the last block
  // fewer keys. Rows also take every count up to 8: the output tile (rows x Dv / lanes
  // accumulators) is what bounds them, and 7 rows of 64 values fill 28 registers.
  Knob rows = make_split_knob("tile_y", w.m, 2, SplitPolicy::kVerbose);
  for (int64_t y = std::min<int64_t>(w.m, 8); y >= 1; --y) {
    const KnobValue v = std::vector<int64_t>{-1, y};
    if (std::find(rows.options.begin(), rows.options.end(), v) == rows.options.end())
      rows.options.push_back(v);
  }
  std::sort(rows.options.begin(), rows.options.end(), [](const KnobValue& a, const KnobValue& b) {
    return split_sizes(a).back() < split_sizes(b).back();
  });
  knobs.push_back(std::move(rows));
  knobs.push_back(make_split_knob("tile_x", w.n, 2, SplitPolicy::kVerbose));
  std::vector<Knob> captured = knobs;
  const int64_t lanes = vector_lanes;
  auto valid = [captured, lanes, w](const std::vector<int32_t>& d) {
    const AttentionSchedule s{split_sizes(captured[0].options[d[0]]).back(),
                              split_sizes(captured[1].options[d[1]]).back()};
    return score_accumulators(s, lanes) <= kMaxAccumulators &&
           output_accumulators(w, s, lanes) <= kMaxAccumulators && s.xi <= kMaxKeysPerBlock;
  };
  return ConfigSpace(kAttentionX86, std::move(knobs), valid);
}

AttentionSchedule attention_schedule(const ConfigSpace& space, const Config& config) {
  return {split_sizes(space.value(config, "tile_y")).back(),
          split_sizes(space.value(config, "tile_x")).back()};
}

Config attention_default(const ConfigSpace& space, const AttentionWorkload& w) {
  // The largest tile within 4 rows by 64 keys that fits the registers (on 8 lanes 4 x 64 does
  // not: 4 x 32), more keys first.
  const int64_t rows = std::min<int64_t>(w.m, 4), keys = std::min<int64_t>(w.n, 64);
  return util::best_ranked_valid(space, [&](const Config& c) {
    const AttentionSchedule s = attention_schedule(space, c);
    if (s.yi > rows || s.xi > keys) return -1.0;
    return double(s.yi * s.xi) + double(s.xi) / (keys + 1);
  });
}

namespace {

class AttentionTemplate final : public Template {
 public:
  std::string_view name() const override { return kAttentionX86; }
  OperatorKind operator_kind() const override { return OperatorKind::kAttention; }

  ConfigSpace config_space(const Task& task) const override {
    const int64_t lanes = task.target.vector_lanes;
    return util::offer_tiles_for(
        attention_space(workload(task), task.target.vector_lanes), task.target,
        util::TileBound::kMemory, [lanes](const ConfigSpace& space, const Config& c) {
          const AttentionSchedule s = attention_schedule(space, c);
          return util::tile_with(score_accumulators(s, lanes), ceil_div(s.xi, lanes), s.yi);
        });
  }
  Config default_config(const Task& task, const ConfigSpace& space) const override {
    return attention_default(space, workload(task));
  }
  int extra_inputs(const Task& task) const override { return workload(task).has_mask() ? 2 : 1; }

  const std::vector<std::string>& feature_names() const override {
    static const std::vector<std::string> names{
        "yi",           "xi",       "score_accumulators", "output_accumulators",
        "full_vectors", "parallel", "key_blocks",         "operand_bytes",
        "mask"};
    return names;
  }

  std::vector<float> features(const Task& task, const ConfigSpace& space,
                              const Config& config) const override {
    const int64_t lanes = task.target.vector_lanes;
    const AttentionWorkload& w = workload(task);
    const AttentionSchedule s = attention_schedule(space, config);
    return {log_feature(s.yi),
            log_feature(s.xi),
            static_cast<float>(score_accumulators(s, lanes)),
            static_cast<float>(output_accumulators(w, s, lanes)),
            s.xi % lanes == 0 ? 1.0f : 0.0f,
            log_feature(double(w.batch) * ceil_div(w.m, s.yi)),
            log_feature(ceil_div(w.n, s.xi)),
            log_feature(4.0 * w.batch * (w.m * w.k + w.n * (w.k + w.dv))),
            w.has_mask() ? 1.0f : 0.0f};
  }

  KernelSignature signature(const Task& task, const ConfigSpace& space,
                            const Config& config) const override {
    const AttentionWorkload& w = workload(task);
    const AttentionSchedule s = attention_schedule(space, config);
    const OperandShapes shapes = operand_shapes(w);
    KernelSignature sig;
    sig.data_shape = shapes.data;
    sig.weight_shape = shapes.weight;
    sig.out_shape = shapes.out;
    const int64_t tiles = ceil_div(w.m, s.yi);
    sig.parallel_extent = w.batch * tiles;
    // The emitter's fused index: batch entries, then row tiles (the last perhaps shorter).
    sig.rows_per_block = s.yi;
    sig.row_blocks = tiles;
    sig.row_inner = 1;
    return sig;
  }
};

}  // namespace

const Template& attention_template() {
  static const AttentionTemplate instance;
  return instance;
}

}  // namespace tensortune::schedule_space
