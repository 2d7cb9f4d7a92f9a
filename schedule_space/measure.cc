#include "schedule_space/measure.h"

#include <algorithm>

namespace tensortune::schedule_space {

const char* measure_error_name(MeasureErrorNo e) {
  switch (e) {
    case MeasureErrorNo::kNoError:
      return "NO_ERROR";
    case MeasureErrorNo::kInstantiationError:
      return "INSTANTIATION_ERROR";
    case MeasureErrorNo::kCompileHost:
      return "COMPILE_HOST";
    case MeasureErrorNo::kCompileDevice:
      return "COMPILE_DEVICE";
    case MeasureErrorNo::kRuntimeDevice:
      return "RUNTIME_DEVICE";
    case MeasureErrorNo::kWrongAnswer:
      return "WRONG_ANSWER";
    case MeasureErrorNo::kBuildTimeout:
      return "BUILD_TIMEOUT";
    case MeasureErrorNo::kRunTimeout:
      return "RUN_TIMEOUT";
    case MeasureErrorNo::kUnknownError:
      return "UNKNOWN_ERROR";
  }
  return "UNKNOWN_ERROR";
}

double MeasureResult::timed_seconds(int repeat) const {
  if (!ok() || costs.empty()) return 0;
  return mean_cost() * static_cast<double>(std::max<int64_t>(1, number)) * std::max(1, repeat);
}

double MeasureResult::mean_cost() const {
  if (costs.empty()) return kErrorCost;
  double s = 0;
  for (double c : costs) s += c;
  return s / static_cast<double>(costs.size());
}

}  // namespace tensortune::schedule_space
