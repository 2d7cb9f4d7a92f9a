#include "tuner/resnet18_workloads.h"

namespace tensortune::tuner {

namespace ss = schedule_space;

std::vector<NamedTask> resnet18_workloads() {
  // The CPU backend's first template of each operator: the direct ones.
  const std::string conv_template(ss::find_template_by_op("conv2d", "llvm")->name());
  const std::string dense_template(ss::find_template_by_op("dense", "llvm")->name());
  auto conv = [&](const char* name, int64_t c, int64_t hw, int64_t oc, int64_t k, int64_t s) {
    return NamedTask{name, conv_template, ss::square_conv2d(c, hw, oc, k, s)};
  };
  return {
      conv("conv1 7x7/2 3->64 @224", 3, 224, 64, 7, 2),
      conv("conv 3x3 64->64 @56", 64, 56, 64, 3, 1),
      conv("conv 3x3/2 64->128 @56", 64, 56, 128, 3, 2),
      conv("conv 1x1/2 64->128 @56", 64, 56, 128, 1, 2),
      conv("conv 3x3 128->128 @28", 128, 28, 128, 3, 1),
      conv("conv 3x3/2 128->256 @28", 128, 28, 256, 3, 2),
      conv("conv 1x1/2 128->256 @28", 128, 28, 256, 1, 2),
      conv("conv 3x3 256->256 @14", 256, 14, 256, 3, 1),
      conv("conv 3x3/2 256->512 @14", 256, 14, 512, 3, 2),
      conv("conv 1x1/2 256->512 @14", 256, 14, 512, 1, 2),
      conv("conv 3x3 512->512 @7", 512, 7, 512, 3, 1),
      NamedTask{"dense 1x512 -> 1000", dense_template, ss::DenseWorkload{1, 1000, 512}},
  };
}

}  // namespace tensortune::tuner
