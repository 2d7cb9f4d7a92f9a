#pragma once
/// \file
/// Where each value of an ONNX graph comes from and who reads it: what the quantizer's
/// rewrites ask of a graph before they change it (indices are the graph's node order).
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_proto.h"

namespace tensortune::frontend {

struct OnnxGraphIndex {
  explicit OnnxGraphIndex(const onnx::GraphProto& g) : g(g) {
    for (int i = 0; i < g.initializer_size(); ++i) initializer[g.initializer(i).name()] = i;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& in : g.node(i).input()) readers[in].push_back(i);
    for (const auto& o : g.output()) readers[o.name()].push_back(-1);
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& out : g.node(i).output()) producer[out] = i;
  }
  /// The initializer a value is, through Identity nodes (exporters route a tensor that several
  /// nodes share through one); "" when it is computed.
  std::string initializer_of(std::string value) const {
    for (int hops = 0; hops < 8 && !initializer.count(value); ++hops) {
      auto p = producer.find(value);
      if (p == producer.end() || g.node(p->second).op_type() != "Identity" ||
          g.node(p->second).input_size() != 1)
        return "";
      value = g.node(p->second).input(0);
    }
    return initializer.count(value) ? value : "";
  }
  /// The nodes that read a value (-1: a graph output); empty when none does.
  const std::vector<int>& readers_of(const std::string& value) const {
    static const std::vector<int> kNone;
    auto r = readers.find(value);
    return r == readers.end() ? kNone : r->second;
  }

  const onnx::GraphProto& g;
  std::map<std::string, int> initializer;           ///< name -> index among the initializers
  std::map<std::string, std::vector<int>> readers;  ///< value -> nodes (-1: a graph output)
  std::map<std::string, int> producer;              ///< value -> the node that computes it
};

}  // namespace tensortune::frontend
