#pragma once
/// \file
/// Random moves in a config space, shared by the model-based and genetic tuners: uniform
/// sampling of the configs the space offers (valid, and suited to the machine:
/// ConfigSpace::is_offered), and AutoTVM's random walk (one knob changed to another candidate).

#include <cstdint>
#include <functional>
#include <optional>
#include <random>

#include "schedule_space/config_space.h"

namespace tensortune::tuner {

/// A uniformly random offered index accepted by `wanted`; nullopt when none was found in
/// `attempts` tries and a scan from a random start finds none either.
std::optional<int64_t> random_offered_index(const schedule_space::ConfigSpace& space,
                                            std::mt19937_64& rng,
                                            const std::function<bool(int64_t)>& wanted,
                                            int attempts = 64);

/// The index of an offered config that differs from `index` in exactly one knob; nullopt when 20
/// tries found none.
std::optional<int64_t> random_walk(const schedule_space::ConfigSpace& space, int64_t index,
                                   std::mt19937_64& rng);

}  // namespace tensortune::tuner
