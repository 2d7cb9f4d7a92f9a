// Implements ranged_artifact.h.
#include "compiler/runtime/ranged_artifact.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "compiler/runtime/artifact_codec.h"

namespace tensortune::runtime {

using nlohmann::json;

namespace {

constexpr char kRangedMagic[8] = {'T', 'T', 'R', 'N', 'G', '0', '0', '1'};
constexpr int kRangedFormat = 1;

json encode_plan(const graph::SequencePlan& plan) {
  json inputs = json::array(), masks = json::array();
  for (const auto& in : plan.range.inputs) inputs.push_back({{"name", in.name}, {"axis", in.axis}});
  for (const auto& m : plan.masks) masks.push_back({{"node", m.node}, {"axis", m.axis}});
  return {{"lo", plan.range.lo},
          {"hi", plan.range.hi},
          {"inputs", inputs},
          {"masks", masks},
          {"output_axes", plan.output_axes}};
}

Expected<graph::SequencePlan> decode_plan(const json& j) {
  graph::SequencePlan plan;
  plan.range.lo = j.at("lo").get<int64_t>();
  plan.range.hi = j.at("hi").get<int64_t>();
  if (plan.range.lo < 1 || plan.range.hi <= plan.range.lo)
    return invalid_argument("its range " + std::to_string(plan.range.lo) + ".." +
                            std::to_string(plan.range.hi) + " is not one");
  for (const auto& in : j.at("inputs"))
    plan.range.inputs.push_back({in.at("name").get<std::string>(), in.at("axis").get<int>()});
  for (const auto& m : j.at("masks"))
    plan.masks.push_back({m.at("node").get<std::string>(), m.at("axis").get<int>()});
  plan.output_axes = j.at("output_axes").get<std::vector<std::vector<int>>>();
  return plan;
}

}  // namespace

namespace {

/// Marks `net`'s kernel steps whose rows are `length` where the same output (by name) has
/// `other_length` rows in `other`: rows that follow the sequence.
void mark_sequence_rows(CompiledNetwork& net, int64_t length, const CompiledNetwork& other,
                        int64_t other_length) {
  std::map<std::string, int64_t> rows_there;
  for (const Step& s : other.steps)
    if (s.rows_per_block > 0)
      rows_there[other.graph.value(s.output).name] = s.rows_per_block * s.row_blocks;
  for (Step& s : net.steps) {
    if (s.rows_per_block <= 0 || s.rows_per_block * s.row_blocks != length) continue;
    const auto it = rows_there.find(net.graph.value(s.output).name);
    s.rows_follow_sequence = it != rows_there.end() && it->second == other_length;
  }
}

}  // namespace

struct RangedArtifactWriter::State {
  graph::SequencePlan plan;
  BlobWriter blobs;
  json buckets = json::array();
  std::string model;
  std::optional<std::pair<int64_t, CompiledNetwork>> pending;  ///< added, not yet encoded
  bool first = true;

  void encode(int64_t bucket, const CompiledNetwork& network) {
    model = network.model;
    buckets.push_back({{"length", bucket}, {"network", encode_network(network, blobs)}});
  }
};

RangedArtifactWriter::RangedArtifactWriter(graph::SequencePlan plan)
    : state_(std::make_unique<State>()) {
  state_->plan = std::move(plan);
  state_->blobs.dedupe = true;
}

RangedArtifactWriter::~RangedArtifactWriter() = default;

void RangedArtifactWriter::add(int64_t bucket, CompiledNetwork network) {
  State& s = *state_;
  if (s.pending) {
    auto& [before, previous] = *s.pending;
    if (s.first) mark_sequence_rows(previous, before, network, bucket);
    mark_sequence_rows(network, bucket, previous, before);
    s.encode(before, previous);
    s.first = false;
  }
  s.pending.emplace(bucket, std::move(network));
}

std::string RangedArtifactWriter::finish() {
  if (state_->pending) {
    state_->encode(state_->pending->first, state_->pending->second);
    state_->pending.reset();
  }
  const json header = {{"format", kRangedFormat},
                       {"model", state_->model},
                       {"plan", encode_plan(state_->plan)},
                       {"buckets", state_->buckets}};
  return frame(kRangedMagic, header, state_->blobs);
}

bool is_ranged_artifact(const std::string& bytes) {
  return bytes.size() >= 5 && std::memcmp(bytes.data(), kRangedMagic, 5) == 0;
}

Expected<RangedArtifact> RangedArtifact::parse(const std::string& bytes, const std::string& what) {
  TT_ASSIGN_OR_RETURN(Framed f, unframe(bytes, kRangedMagic, what));
  RangedArtifact a;
  a.what_ = what;
  try {
    const json header = json::parse(f.header);
    if (header.at("format").get<int>() != kRangedFormat)
      return corrupted(what, "its ranged format is not " + std::to_string(kRangedFormat));
    a.model_ = header.at("model").get<std::string>();
    auto plan = decode_plan(header.at("plan"));
    if (!plan) return corrupted(what, plan.error().message);
    a.plan_ = std::move(*plan);
    for (const auto& b : header.at("buckets")) {
      const int64_t length = b.at("length").get<int64_t>();
      if (length < a.plan_.range.lo)
        return corrupted(what, "bucket " + std::to_string(length) + " is below its range");
      if (length > a.plan_.range.hi || (!a.buckets_.empty() && length <= a.buckets_.back()))
        return corrupted(what, "its buckets are not ascending lengths inside its range");
      if (a.buckets_.empty()) a.threads_ = std::max(1, b.at("network").value("threads", 1));
      a.buckets_.push_back(length);
      a.headers_.push_back(b.at("network").dump());
    }
    if (a.buckets_.empty() || a.buckets_.back() != a.plan_.range.hi)
      return corrupted(what, "its buckets do not reach its range's end");
  } catch (const json::exception& e) {
    return corrupted(what, std::string("its header does not parse: ") + e.what());
  }
  a.plan_.range.buckets = a.buckets_;
  a.blobs_ = std::make_shared<const std::vector<std::string>>(std::move(f.blobs));
  return a;
}

Expected<CompiledNetwork> RangedArtifact::network(size_t index) const {
  if (index >= headers_.size())
    return invalid_argument("bucket " + std::to_string(index) + " does not exist");
  try {
    auto net = decode_network(json::parse(headers_[index]), *blobs_);
    if (!net)
      return corrupted(what_,
                       "bucket " + std::to_string(buckets_[index]) + ": " + net.error().message);
    return net;
  } catch (const json::exception& e) {
    return corrupted(what_, "bucket " + std::to_string(buckets_[index]) + ": " + e.what());
  }
}

}  // namespace tensortune::runtime
