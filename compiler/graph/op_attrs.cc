#include "compiler/graph/op_attrs.h"

#include <string>

namespace tensortune::graph {
namespace {

enum class FieldType { kInt, kFloat, kInts };

struct Field {
  const char* name;
  FieldType type;
};

FieldType type_of(const int64_t&) { return FieldType::kInt; }
FieldType type_of(const std::optional<int64_t>&) { return FieldType::kInt; }
FieldType type_of(const double&) { return FieldType::kFloat; }
FieldType type_of(const Ints&) { return FieldType::kInts; }

template <class T>
std::vector<Field> fields_of() {
  std::vector<Field> out;
  T t;
  t.fields([&](const char* name, auto& field) { out.push_back({name, type_of(field)}); });
  return out;
}

const std::vector<Field>& op_fields(OpKind op) {
  switch (op) {
#define TT_OP(kind, name, attrs, category)                       \
  case OpKind::kind: {                                           \
    static const std::vector<Field> fields = fields_of<attrs>(); \
    return fields;                                               \
  }
#include "compiler/graph/ops.def"
  }
  static const std::vector<Field> none;
  return none;
}

bool fits(FieldType type, const AttrValue& value) {
  switch (type) {
    case FieldType::kInt:
      return std::holds_alternative<int64_t>(value);
    case FieldType::kFloat:
      return std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value);
    case FieldType::kInts:
      return std::holds_alternative<Ints>(value);
  }
  return false;
}

const char* type_name(FieldType type) {
  switch (type) {
    case FieldType::kInt:
      return "an integer";
    case FieldType::kFloat:
      return "a number";
    case FieldType::kInts:
      return "a list of integers";
  }
  return "?";
}

const char* value_type_name(const AttrValue& value) {
  if (std::holds_alternative<int64_t>(value)) return "an integer";
  if (std::holds_alternative<double>(value)) return "a float";
  if (std::holds_alternative<Ints>(value)) return "a list of integers";
  return "a string";
}

}  // namespace

Status validate_attrs(OpKind op, const Attrs& attrs) {
  const auto& fields = op_fields(op);
  for (const auto& [name, value] : attrs.items()) {
    const Field* field = nullptr;
    for (const Field& f : fields)
      if (name == f.name) field = &f;
    if (!field) {
      std::string takes;
      for (const Field& f : fields) takes += (takes.empty() ? "" : ", ") + std::string(f.name);
      return invalid_argument("unknown attribute '" + name + "' (" + op_name(op) +
                              (takes.empty() ? " takes none" : " takes " + takes) + ")");
    }
    if (!fits(field->type, value))
      return invalid_argument("attribute '" + name + "' must be " + type_name(field->type) +
                              ", got " + value_type_name(value));
  }
  return ok_status();
}

}  // namespace tensortune::graph
