#include "compiler/measure/measurer.h"

#ifdef TT_WITH_CUDA
#include "compiler/measure/gpu_measurer.h"
#endif

namespace tensortune::measure {

Expected<std::unique_ptr<Measurer>> make_measurer(const schedule_space::Task& task,
                                                  const MeasureOptions& options) {
  if (schedule_space::template_of(task).target_kind().runs_on_gpu()) {
#ifdef TT_WITH_CUDA
    TT_ASSIGN_OR_RETURN(auto m, GpuMeasurer::create(task, options));
    return std::unique_ptr<Measurer>(std::move(m));
#else
    return unavailable(task.template_name +
                       " needs a GPU: this build has no CUDA support (built without the CUDA "
                       "Toolkit)");
#endif
  }
  TT_ASSIGN_OR_RETURN(auto m, LocalMeasurer::create(task, options));
  return std::unique_ptr<Measurer>(std::move(m));
}

}  // namespace tensortune::measure
