// cuda: NVIDIA GPUs of one compute capability, kernels in CUDA C built by NVRTC for it
// (AutoTVM's "cuda -arch=sm_XY").
#include "schedule_space/gpu_limits.h"
#include "schedule_space/target_kind.h"
#include "schedule_space/task.h"

namespace tensortune::schedule_space {
namespace {

class CudaTargetKind final : public TargetKind {
 public:
  std::string_view name() const override { return "cuda"; }
  DeviceClass device_class() const override { return DeviceClass::kGpu; }
  std::string_view flag_forms() const override { return "cuda, cuda-smXY or 'cuda -arch=sm_XY'"; }
  std::optional<Expected<std::string>> spec_from_flag(std::string_view text) const override {
    if (text == "cuda")
      return Expected<std::string>(cuda_target_spec(kDefaultCudaComputeCapability));
    std::string spec(text);
    if (text.starts_with("cuda-sm")) spec = "cuda -arch=sm_" + std::string(text.substr(7));
    if (!spec.starts_with("cuda ")) return std::nullopt;
    auto cc = cuda_compute_capability(spec);
    if (!cc)
      return Expected<std::string>(
          invalid_argument("--target = '" + std::string(text) + "': " + cc.error().message));
    return Expected<std::string>(cuda_target_spec(*cc));
  }
  Status check_vector_lanes(int lanes) const override {
    if (lanes == 1) return ok_status();
    return invalid_argument("target.vector_lanes = " + std::to_string(lanes) +
                            ", must be 1 for a cuda target");
  }
  std::optional<std::string> device_key(const Target& target) const override {
    auto cc = cuda_compute_capability(target.spec);
    if (!cc) return std::nullopt;
    return "cuda-sm" + std::to_string(*cc);
  }
};

}  // namespace

const TargetKind& cuda_target_kind() {
  static const CudaTargetKind kind;
  return kind;
}

}  // namespace tensortune::schedule_space
