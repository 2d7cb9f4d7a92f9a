#include "schedule_space/config_space.h"

#include <algorithm>

namespace tensortune::schedule_space {

ConfigSpace::ConfigSpace(std::string template_name, std::vector<Knob> knobs, Validity valid)
    : template_name_(std::move(template_name)), knobs_(std::move(knobs)), valid_(std::move(valid)) {
  size_ = 1;
  for (const Knob& k : knobs_) {
    TT_CHECK(!k.options.empty()) << "knob " << k.name << " has no candidates";
    size_ *= static_cast<int64_t>(k.options.size());
  }
}

Expected<Config> ConfigSpace::config_at(int64_t index) const {
  if (index < 0 || index >= size_)
    return Error{ErrorCode::kOutOfRange, template_name_ + ": config index " +
                                             std::to_string(index) + " is outside the space [0, " +
                                             std::to_string(size_) + ")"};
  Config c;
  c.index = index;
  int64_t rest = index;
  for (const Knob& k : knobs_) {
    const int64_t dim = static_cast<int64_t>(k.options.size());
    c.digits.push_back(static_cast<int32_t>(rest % dim));
    rest /= dim;
  }
  return c;
}

Expected<Config> ConfigSpace::config_from_digits(const std::vector<int32_t>& digits) const {
  if (digits.size() != knobs_.size())
    return invalid_argument(template_name_ + ": config has " + std::to_string(digits.size()) +
                            " digits, the space has " + std::to_string(knobs_.size()) + " knobs");
  Config c;
  c.digits = digits;
  int64_t stride = 1;
  for (size_t j = 0; j < knobs_.size(); ++j) {
    const int64_t dim = static_cast<int64_t>(knobs_[j].options.size());
    if (digits[j] < 0 || digits[j] >= dim)
      return invalid_argument(template_name_ + ": knob " + knobs_[j].name + " digit " +
                              std::to_string(digits[j]) + " is outside [0, " + std::to_string(dim) +
                              ")");
    c.index += digits[j] * stride;
    stride *= dim;
  }
  return c;
}

Expected<Config> ConfigSpace::config_from_entity(const Entity& entity) const {
  std::vector<int32_t> digits(knobs_.size(), 0);
  for (const auto& [name, value] : entity) {
    const int pos = knob_position(name);
    if (pos < 0) {
      std::string known;
      for (const Knob& k : knobs_) known += (known.empty() ? "" : ", ") + k.name;
      return invalid_argument(template_name_ + ": unknown knob '" + name + "' (knobs: " + known +
                              ")");
    }
    const Knob& k = knobs_[pos];
    KnobValue wanted = value;
    if (const auto* sizes = std::get_if<std::vector<int64_t>>(&value)) {
      auto canonical = canonical_split(k, *sizes);
      if (!canonical) return canonical.error().with_context(template_name_);
      wanted = std::move(canonical).value();
    }
    int found = -1;
    for (size_t i = 0; i < k.options.size(); ++i) {
      if (k.options[i] == wanted) {
        found = static_cast<int>(i);
        break;
      }
    }
    if (found < 0)
      return invalid_argument(template_name_ + ": knob " + name + " value " +
                              knob_value_to_string(value) + " is not one of its " +
                              std::to_string(k.options.size()) + " candidates");
    digits[pos] = found;
  }
  return config_from_digits(digits);
}

Entity ConfigSpace::entity_of(const Config& config) const {
  Entity e;
  for (size_t j = 0; j < knobs_.size(); ++j)
    e.emplace_back(knobs_[j].name, knobs_[j].options[config.digits[j]]);
  return e;
}

int64_t ConfigSpace::valid_count() const {
  std::call_once(valid_count_->once, [this] {
    int64_t n = 0;
    if (!valid_) {
      n = size_;
    } else {
      for (int64_t i = 0; i < size_; ++i) n += is_valid_index(i);
    }
    valid_count_->count = n;
  });
  return valid_count_->count;
}

void ConfigSpace::offer_register_tiles(TileOf tile, int64_t registers, int64_t accumulators) {
  offer_ = std::make_shared<RegisterTileOffer>();
  offer_->tile = std::move(tile);
  offer_->wanted_registers = registers;
  offer_->wanted_accumulators = accumulators;
}

const ConfigSpace::RegisterTileOffer& ConfigSpace::settled_offer() const {
  RegisterTileOffer& o = *offer_;
  std::call_once(o.once, [this, &o] {
    std::vector<RegisterTile> tiles;  // one per valid point
    for (int64_t i = 0; i < size_; ++i) {
      const Config c = *config_at(i);
      if (is_valid(c)) tiles.push_back(o.tile(c.digits));
    }
    if (tiles.empty()) return;
    o.registers = o.wanted_registers;
    int64_t fewest_registers = tiles.front().registers;
    bool any_fits = false;
    for (const RegisterTile& t : tiles) {
      fewest_registers = std::min(fewest_registers, t.registers);
      any_fits = any_fits || t.registers <= o.wanted_registers;
    }
    if (!any_fits) o.registers = fewest_registers;
    int64_t most_accumulators = 0;
    for (const RegisterTile& t : tiles)
      if (t.registers <= o.registers)
        most_accumulators = std::max(most_accumulators, t.accumulators);
    o.accumulators = std::min(o.wanted_accumulators, most_accumulators);
    for (const RegisterTile& t : tiles)
      o.count += t.registers <= o.registers && t.accumulators >= o.accumulators;
  });
  return o;
}

bool ConfigSpace::is_offered(const Config& config) const {
  if (!is_valid(config)) return false;
  if (!offer_) return true;
  const RegisterTileOffer& o = settled_offer();
  const RegisterTile t = o.tile(config.digits);
  return t.registers <= o.registers && t.accumulators >= o.accumulators;
}

bool ConfigSpace::is_offered_index(int64_t index) const {
  auto c = config_at(index);
  return c.has_value() && is_offered(*c);
}

int64_t ConfigSpace::offered_count() const {
  return offer_ ? settled_offer().count : valid_count();
}

bool ConfigSpace::is_valid_index(int64_t index) const {
  auto c = config_at(index);
  return c.has_value() && is_valid(*c);
}

int ConfigSpace::knob_position(const std::string& name) const {
  for (size_t j = 0; j < knobs_.size(); ++j)
    if (knobs_[j].name == name) return static_cast<int>(j);
  return -1;
}

const KnobValue& ConfigSpace::value(const Config& config, const std::string& name) const {
  const int pos = knob_position(name);
  TT_CHECK(pos >= 0) << "no knob " << name << " in " << template_name_;
  return knobs_[pos].options[config.digits[pos]];
}

std::string ConfigSpace::describe(const Config& config) const {
  std::string s;
  for (size_t j = 0; j < knobs_.size(); ++j) {
    if (j) s += " ";
    s += knobs_[j].name + "=" + knob_value_to_string(knobs_[j].options[config.digits[j]]);
  }
  return s;
}

}  // namespace tensortune::schedule_space
