#pragma once
/// \file
/// Kinds of target (TVM's TargetKind): what the layers above need to tell one kind of target from
/// another, asked of the kind instead of comparing the first word of a target string. A kind
/// owns its target strings (`--target` forms and specs), where its kernels run, which vector
/// lanes its tasks carry and its device keys; the layers that build, time and run kernels ask
/// it where their work differs by kind.
///
/// Adding a kind (rocm, aarch64): one file implementing TargetKind and one line in the list
/// (target_kinds.cc); then its templates (Template::backend() is the kind's name), their
/// emitters, and whatever DeviceClass it runs on needs of the layers above.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.h"

namespace tensortune::schedule_space {

struct Target;

/// Where a kind's kernels run: on the host's CPU (built by LLVM, called in the process) or on a
/// GPU (built for it, loaded by its driver; emulated on the CPU where there is none).
enum class DeviceClass { kHostCpu, kGpu };

class TargetKind {
 public:
  virtual ~TargetKind() = default;
  /// The first word of its target specs and its templates' backend(): "llvm", "cuda".
  virtual std::string_view name() const = 0;
  virtual DeviceClass device_class() const = 0;
  bool runs_on_gpu() const { return device_class() == DeviceClass::kGpu; }
  /// The `--target` forms it takes, for help and errors ("cuda, cuda-smXY or 'cuda -arch=sm_XY'").
  virtual std::string_view flag_forms() const = 0;
  /// The target spec that a `--target` text names: nothing when the text is not of this kind,
  /// an error naming the text when it is but is malformed. A host CPU kind's spec is its name:
  /// the host's own target (its -mcpu and vector lanes) is filled in by the code generator.
  virtual std::optional<Expected<std::string>> spec_from_flag(std::string_view text) const = 0;
  /// OK when a task of this kind may carry `lanes` float32 vector lanes; the message names the
  /// field and what it must be.
  virtual Status check_vector_lanes(int lanes) const = 0;
  /// The device key of a target of this kind ("cuda-sm90"); nothing for the host CPU, whose key
  /// the code generator reads off the host (codegen::host_device_key).
  virtual std::optional<std::string> device_key(const Target& target) const = 0;
};

/// Every kind, in a stable order (the list: target_kinds.cc); the first is the default.
const std::vector<const TargetKind*>& all_target_kinds();
/// nullptr when no kind has that name.
const TargetKind* find_target_kind(std::string_view name);
/// The kind of a target spec (its first word); an error naming the spec and the kinds.
Expected<const TargetKind*> target_kind_of_spec(std::string_view spec);
const TargetKind& target_kind_of(const Target& target);

/// A `--target` text, parsed by the kind it belongs to.
struct TargetFlag {
  const TargetKind* kind = nullptr;
  std::string spec;  ///< a host CPU kind's: its name (the host fills in the rest)
};
/// "" (the default kind), or a form one of the kinds takes; an error listing every kind's forms.
Expected<TargetFlag> parse_target_flag(std::string_view text);

}  // namespace tensortune::schedule_space
