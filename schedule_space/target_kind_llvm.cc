// llvm: the host's CPU, kernels built by LLVM and called in the process (AutoTVM's "llvm").
#include "schedule_space/target_kind.h"

namespace tensortune::schedule_space {
namespace {

class LlvmTargetKind final : public TargetKind {
 public:
  std::string_view name() const override { return "llvm"; }
  DeviceClass device_class() const override { return DeviceClass::kHostCpu; }
  std::string_view flag_forms() const override { return "llvm"; }
  std::optional<Expected<std::string>> spec_from_flag(std::string_view text) const override {
    if (text != "llvm") return std::nullopt;
    return Expected<std::string>(std::string(name()));
  }
  Status check_vector_lanes(int lanes) const override {
    if (lanes == 4 || lanes == 8 || lanes == 16) return ok_status();
    return invalid_argument("target.vector_lanes = " + std::to_string(lanes) +
                            ", must be 4, 8 or 16 for an llvm target");
  }
  std::optional<std::string> device_key(const Target&) const override { return std::nullopt; }
};

}  // namespace

const TargetKind& llvm_target_kind() {
  static const LlvmTargetKind kind;
  return kind;
}

}  // namespace tensortune::schedule_space
