#pragma once
/// \file
/// Where measurements happen, as the tuning loop sees it: on this machine (LocalMeasurer) or,
/// in the farm, through the tracker. One MeasureResult per config, in order.

#include <memory>
#include <string>
#include <vector>

#include "compiler/measure/measurer.h"
#include "schedule_space/config_space.h"
#include "schedule_space/measure.h"

namespace tensortune::tuner {

class Measurer {
 public:
  virtual ~Measurer() = default;
  /// One result per config, in order. An error means the measurements could not be made at
  /// all (a tracker that stays unreachable), not that a config failed: that is a result.
  virtual Expected<std::vector<schedule_space::MeasureResult>> measure(
      const schedule_space::ConfigSpace& space,
      const std::vector<schedule_space::Config>& configs) = 0;
  virtual std::string device_key() const = 0;
  /// The thread count its results are measured (and recorded) on: the tuning loop takes only
  /// the DB's results of that count as the run's history, since a config's speed on one thread
  /// says little of its speed on two. 0: results are not told apart by threads (a GPU's).
  virtual int threads() const { return 0; }
};

/// Measures in this process: measure::LocalMeasurer on the CPU, GpuMeasurer on a GPU.
class LocalMeasurerAdapter final : public Measurer {
 public:
  explicit LocalMeasurerAdapter(std::unique_ptr<measure::Measurer> m) : m_(std::move(m)) {}
  Expected<std::vector<schedule_space::MeasureResult>> measure(
      const schedule_space::ConfigSpace& space,
      const std::vector<schedule_space::Config>& configs) override {
    return m_->measure(space, configs);
  }
  std::string device_key() const override { return m_->device_key(); }
  int threads() const override { return m_->threads(); }

 private:
  std::unique_ptr<measure::Measurer> m_;
};

}  // namespace tensortune::tuner
