#pragma once
/// \file
/// A template's config space: the product of its knobs, with a deterministic flat index.
/// Index <-> config is mixed radix over the knobs in definition order, first knob fastest
/// varying (AutoTVM's order): digit_j = (index / prod_{i<j} dims_i) mod dims_j.
/// A template may declare some points invalid (for example register tiles that cannot fit);
/// invalid points keep their index but tuners never propose them. Among the valid points, a
/// template may also say which suit the machine (offer_register_tiles): tuners propose only
/// those, while records of the others still decode, compile and run.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "schedule_space/knob.h"
#include "support/error.h"

namespace tensortune::schedule_space {

/// Vector accumulators a template's register tile may hold (x86-64 with AVX-512 has 32 vector
/// registers; one holds the broadcast input and some hold the weights). Larger tiles spill.
inline constexpr int kMaxAccumulators = 28;

/// A point of a space: its flat index and one digit (candidate position) per knob.
struct Config {
  int64_t index = 0;
  std::vector<int32_t> digits;
  friend bool operator==(const Config&, const Config&) = default;
};

/// A config as (knob name, value) pairs: AutoTVM's "entity", independent of candidate order.
using Entity = std::vector<std::pair<std::string, KnobValue>>;

class ConfigSpace {
 public:
  using Validity = std::function<bool(const std::vector<int32_t>& digits)>;

  ConfigSpace() = default;
  ConfigSpace(std::string template_name, std::vector<Knob> knobs, Validity valid = nullptr);

  const std::string& template_name() const { return template_name_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// Number of points, valid or not (AutoTVM's range_length).
  int64_t size() const { return size_; }

  /// Fails with kOutOfRange naming the index and the size when index is not in [0, size).
  Expected<Config> config_at(int64_t index) const;
  /// Fails when a digit is out of its knob's range.
  Expected<Config> config_from_digits(const std::vector<int32_t>& digits) const;
  /// Maps names to digits, in any order; knobs the entity omits take candidate 0. A split may
  /// spell out its outermost factor (older AutoTVM logs) instead of -1 (canonical_split).
  /// Fails on an unknown knob name, a split that does not split its axis, or a value that is
  /// not one of the knob's candidates.
  Expected<Config> config_from_entity(const Entity& entity) const;
  Entity entity_of(const Config& config) const;

  bool is_valid(const Config& config) const { return !valid_ || valid_(config.digits); }
  bool is_valid_index(int64_t index) const;
  /// Points that are valid: counted once per space (copies share the count), by a scan that
  /// takes seconds for the largest GPU spaces (10^8 points).
  int64_t valid_count() const;

  /// A config's register tile: its vector accumulators, and every vector register its inner
  /// loop holds at once (the accumulators, the weight vectors beside them, the broadcast input).
  struct RegisterTile {
    int64_t accumulators = 0;
    int64_t registers = 0;
  };
  using TileOf = std::function<RegisterTile(const std::vector<int32_t>& digits)>;
  /// Which valid points suit the machine: tiles that hold at most `registers` vector registers
  /// (more spill) and at least `accumulators` accumulators (fewer leave the FMA pipes waiting
  /// on their latency). Each bound gives way where the workload has no valid tile within it (the
  /// floor drops to the most accumulators a fitting tile has; the ceiling rises to the fewest
  /// registers a tile holds), so a space with valid points always offers some. Indices and
  /// validity do not change. The bounds are settled by one scan of the space, on first use.
  void offer_register_tiles(TileOf tile, int64_t registers, int64_t accumulators);
  /// Valid, and within the register-tile bounds where the template set them: what tuners
  /// propose.
  bool is_offered(const Config& config) const;
  bool is_offered_index(int64_t index) const;
  /// Points offered (valid_count() where no bounds are set); counted by the same scan.
  int64_t offered_count() const;
  /// The same space offering every valid point (`tune --whole-space`, and comparisons).
  ConfigSpace whole() const {
    ConfigSpace copy = *this;
    copy.offer_.reset();
    return copy;
  }

  /// The value of knob `name` in `config`; TT_CHECKs that the knob exists.
  const KnobValue& value(const Config& config, const std::string& name) const;
  int knob_position(const std::string& name) const;  ///< -1 when absent

  /// "tile_ic=[-1, 8] tile_oc=[-1, 16] ..." for logs and tables.
  std::string describe(const Config& config) const;

 private:
  std::string template_name_;
  std::vector<Knob> knobs_;
  Validity valid_;
  int64_t size_ = 0;
  struct ValidCount {
    std::once_flag once;
    int64_t count = 0;
  };
  std::shared_ptr<ValidCount> valid_count_ = std::make_shared<ValidCount>();
  struct RegisterTileOffer {
    TileOf tile;
    int64_t wanted_registers = 0, wanted_accumulators = 0;
    std::once_flag once;
    int64_t registers = 0, accumulators = 0, count = 0;  // settled bounds
  };
  std::shared_ptr<RegisterTileOffer> offer_;
  const RegisterTileOffer& settled_offer() const;
};

}  // namespace tensortune::schedule_space
