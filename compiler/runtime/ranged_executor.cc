// Implements ranged_executor.h.
#include "compiler/runtime/ranged_executor.h"

#include <algorithm>

namespace tensortune::runtime {

namespace {

std::string range_text(const graph::SequenceRange& r) {
  return std::to_string(r.lo) + ".." + std::to_string(r.hi);
}

}  // namespace

RangedExecutable::RangedExecutable(std::shared_ptr<const RangedArtifact> artifact, int threads,
                                   bool emulate, int gpu)
    : artifact_(std::move(artifact)),
      threads_(threads),
      gpu_(gpu),
      emulate_(emulate),
      loaded_(artifact_->buckets().size()) {}

RangedExecutable::~RangedExecutable() = default;

Expected<std::unique_ptr<RangedExecutable>> RangedExecutable::load(
    std::shared_ptr<const RangedArtifact> artifact, int threads, bool emulate, int gpu) {
  std::unique_ptr<RangedExecutable> exe(
      new RangedExecutable(std::move(artifact), threads, emulate, gpu));
  if (auto first = exe->bucket(0); !first) return first.error();
  return exe;
}

Expected<Executable*> RangedExecutable::bucket(size_t index) {
  if (!loaded_.at(index)) {
    TT_ASSIGN_OR_RETURN(CompiledNetwork net, artifact_->network(index));
    TT_ASSIGN_OR_RETURN(loaded_[index],
                        Executable::load(std::make_shared<const CompiledNetwork>(std::move(net)),
                                         threads_, emulate_, gpu_));
  }
  return loaded_[index].get();
}

Expected<int64_t> RangedExecutable::length_of(
    const std::map<std::string, graph::Tensor>& inputs) const {
  const graph::SequenceRange& range = artifact_->plan().range;
  int64_t length = -1;
  std::string first;
  for (const auto& in : range.inputs) {
    const auto it = inputs.find(in.name);
    if (it == inputs.end())
      return invalid_argument("input '" + in.name + "' is missing (its axis " +
                              std::to_string(in.axis) + " is the sequence, " + range_text(range) +
                              ")");
    const graph::Shape& shape = it->second.shape;
    if (in.axis >= static_cast<int>(shape.size()))
      return invalid_argument("input '" + in.name + "' has shape " + graph::shape_to_string(shape) +
                              ": it has no axis " + std::to_string(in.axis) + ", the sequence's (" +
                              range_text(range) + ")");
    const int64_t n = shape[static_cast<size_t>(in.axis)];
    if (n < range.lo || n > range.hi)
      return invalid_argument("input '" + in.name + "' has shape " + graph::shape_to_string(shape) +
                              ": its sequence length " + std::to_string(n) + " (axis " +
                              std::to_string(in.axis) + ") is outside the range " +
                              range_text(range) + " this artifact was compiled for");
    if (length >= 0 && n != length)
      return invalid_argument("input '" + in.name + "' has sequence length " + std::to_string(n) +
                              " but '" + first + "' has " + std::to_string(length) +
                              ": the sequence inputs take one length");
    length = n;
    first = in.name;
  }
  return length;
}

Expected<Executable*> RangedExecutable::prepare(
    const std::map<std::string, graph::Tensor>& inputs) {
  TT_ASSIGN_OR_RETURN(const int64_t length, length_of(inputs));
  const auto& buckets = artifact_->buckets();
  const size_t index = graph::bucket_index_for_length(buckets, length);
  const int64_t bucket_length = buckets[index];
  TT_ASSIGN_OR_RETURN(Executable * exe, bucket(index));
  const graph::SequenceRange& range = artifact_->plan().range;
  for (const auto& [name, value] : inputs) {
    // Named apart: clang before 16 does not let a lambda capture a structured binding.
    const std::string& input_name = name;
    const auto sequence =
        std::find_if(range.inputs.begin(), range.inputs.end(),
                     [&](const graph::SequenceInput& s) { return s.name == input_name; });
    if (sequence == range.inputs.end()) {  // as it is
      TT_RETURN_IF_ERROR(exe->set_input(name, value));
      continue;
    }
    graph::Shape shape = value.shape;
    shape[static_cast<size_t>(sequence->axis)] = bucket_length;
    TT_RETURN_IF_ERROR(exe->set_input(name, graph::resize_box(value, shape)));
  }
  TT_RETURN_IF_ERROR(
      exe->set_input(graph::kSequenceMaskInput, graph::sequence_mask(bucket_length, length)));
  exe->set_active_rows(length);
  last_ = exe;
  last_length_ = length;
  return exe;
}

std::vector<graph::Tensor> RangedExecutable::outputs() const {
  std::vector<graph::Tensor> out = last_ ? last_->outputs() : std::vector<graph::Tensor>{};
  const auto& axes = artifact_->plan().output_axes;
  for (size_t i = 0; i < out.size() && i < axes.size(); ++i) {
    if (axes[i].empty()) continue;
    graph::Shape shape = out[i].shape;
    for (int axis : axes[i]) shape[static_cast<size_t>(axis)] = last_length_;
    out[i] = graph::resize_box(out[i], shape);
  }
  return out;
}

Expected<std::vector<graph::Tensor>> RangedExecutable::run(
    const std::map<std::string, graph::Tensor>& inputs) {
  TT_ASSIGN_OR_RETURN(Executable * exe, prepare(inputs));
  TT_RETURN_IF_ERROR(exe->run());
  return outputs();
}

}  // namespace tensortune::runtime
