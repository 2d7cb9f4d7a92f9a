#include "compiler/graph/op.h"

#include <sstream>

namespace tensortune::graph {

namespace {

enum class Category { Anchor, Unary, Binary, Other };

Category category(OpKind op) {
  switch (op) {
#define TT_OP(kind, name, attrs, cat) \
  case OpKind::kind:                  \
    return Category::cat;
#include "compiler/graph/ops.def"
  }
  return Category::Other;
}

}  // namespace

const std::vector<OpKind>& all_ops() {
  static const std::vector<OpKind> ops = {
#define TT_OP(kind, name, attrs, category) OpKind::kind,
#include "compiler/graph/ops.def"
  };
  return ops;
}

const char* op_name(OpKind op) {
  switch (op) {
#define TT_OP(kind, name, attrs, category) \
  case OpKind::kind:                       \
    return name;
#include "compiler/graph/ops.def"
  }
  return "?";
}

std::optional<OpKind> op_from_name(std::string_view name) {
  for (OpKind op : all_ops())
    if (name == op_name(op)) return op;
  return std::nullopt;
}

bool is_unary_elementwise(OpKind op) { return category(op) == Category::Unary; }
bool is_binary_elementwise(OpKind op) { return category(op) == Category::Binary; }
bool is_anchor(OpKind op) { return category(op) == Category::Anchor; }

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  return fallback;
}

double Attrs::get_float(const std::string& name, double fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return fallback;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return fallback;
}

std::string Attrs::get_string(const std::string& name, std::string fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::string attrs_string(const Attrs& attrs) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : attrs.items()) {
    if (!first) os << " ";
    first = false;
    os << name << "=";
    if (auto* i = std::get_if<int64_t>(&value)) {
      os << *i;
    } else if (auto* d = std::get_if<double>(&value)) {
      os << *d;
    } else if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
      os << "[";
      for (size_t k = 0; k < v->size(); ++k) os << (k ? "," : "") << (*v)[k];
      os << "]";
    } else {
      os << '"' << std::get<std::string>(value) << '"';
    }
  }
  return os.str();
}

}  // namespace tensortune::graph
