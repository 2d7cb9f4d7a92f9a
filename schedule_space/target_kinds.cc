// The list of target kinds, and what is asked of all of them.
#include "schedule_space/target_kind.h"
#include "schedule_space/task.h"

namespace tensortune::schedule_space {

const TargetKind& llvm_target_kind();
const TargetKind& cuda_target_kind();

const std::vector<const TargetKind*>& all_target_kinds() {
  static const std::vector<const TargetKind*> kinds{
      &llvm_target_kind(),
      &cuda_target_kind(),
  };
  return kinds;
}

const TargetKind* find_target_kind(std::string_view name) {
  for (const TargetKind* k : all_target_kinds())
    if (k->name() == name) return k;
  return nullptr;
}

namespace {

std::string kind_names() {
  std::string names;
  for (const TargetKind* k : all_target_kinds())
    names += (names.empty() ? "" : ", ") + std::string(k->name());
  return names;
}

}  // namespace

Expected<const TargetKind*> target_kind_of_spec(std::string_view spec) {
  const std::string_view first = spec.substr(0, spec.find(' '));
  if (const TargetKind* k = find_target_kind(first)) return k;
  return invalid_argument("target '" + std::string(spec) + "' is of no kind tensortune knows (" +
                          kind_names() + ")");
}

const TargetKind& target_kind_of(const Target& target) {
  auto kind = target_kind_of_spec(target.spec);
  // make_task validated the spec against its template's kind; a Target built by hand that names
  // no kind is our bug.
  TT_CHECK(kind.has_value()) << kind.error().message;
  return **kind;
}

Expected<TargetFlag> parse_target_flag(std::string_view text) {
  if (text.empty()) {
    const TargetKind* first = all_target_kinds().front();
    return TargetFlag{first, std::string(first->name())};
  }
  std::string forms;
  for (const TargetKind* k : all_target_kinds()) {
    if (auto spec = k->spec_from_flag(text)) {
      if (!*spec) return spec->error();
      return TargetFlag{k, std::move(**spec)};
    }
    forms += (forms.empty() ? "" : ", ") + std::string(k->flag_forms());
  }
  return invalid_argument("--target = '" + std::string(text) + "' is not " + forms);
}

}  // namespace tensortune::schedule_space
