#include "compiler/graph/printer.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace tensortune::graph {

std::string graph_summary(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node& n : graph.nodes()) ++counts[op_name(n.op)];
  int64_t params = 0;
  for (const Value& v : graph.values())
    if (v.constant) params += num_elements(v.type.shape);
  std::ostringstream os;
  os << graph.nodes().size() << " nodes:";
  bool first = true;
  for (const auto& [name, count] : counts) {
    os << (first ? " " : ", ") << name << " " << count;
    first = false;
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "; %.2f M parameters (%.1f MB)", params / 1e6, params * 4.0 / 1e6);
  os << buf;
  return os.str();
}

std::string print_graph(const Graph& graph) {
  std::ostringstream os;
  os << "graph " << graph.name() << " {\n";
  for (ValueId id : graph.inputs())
    os << "  input %" << graph.value(id).name << ": " << type_string(graph.type(id)) << "\n";
  for (const Node& n : graph.nodes()) {
    os << "  %" << graph.value(n.output).name << " = " << op_name(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& v = graph.value(n.inputs[i]);
      os << (i ? ", " : "");
      if (v.constant) {
        os << "@" << v.name << ":" << type_string(v.type);
        if (v.type.shape.empty() || num_elements(v.type.shape) == 1)
          os << "{" << v.constant->at(0) << "}";
      } else {
        os << "%" << v.name;
      }
    }
    os << ")";
    const std::string attrs = attrs_string(n.attrs);
    if (!attrs.empty()) os << " " << attrs;
    os << " -> " << type_string(graph.type(n.output));
    if (n.fusion_group >= 0) os << "  # group " << n.fusion_group;
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    os << (i ? ", %" : " %") << graph.value(graph.outputs()[i]).name;
  os << "\n}\n" << graph_summary(graph) << "\n";
  return os.str();
}

std::string graph_fingerprint(const Graph& graph) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : print_graph(graph)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace tensortune::graph
