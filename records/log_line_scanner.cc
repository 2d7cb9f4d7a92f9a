#include "records/detail/log_line_scanner.h"

#include <simdjson.h>

#include <algorithm>
#include <vector>

namespace tensortune::records::detail {

namespace ss = schedule_space;
using simdjson::dom::element;
using simdjson::dom::element_type;

namespace {

// Integers as the validating parser (nlohmann's is_number_integer) takes them.
std::optional<int64_t> integer(element e) {
  int64_t v = 0;
  if (e.type() == element_type::INT64 && !e.get_int64().get(v)) return v;
  uint64_t u = 0;
  if (e.type() == element_type::UINT64 && !e.get_uint64().get(u) &&
      u <= static_cast<uint64_t>(INT64_MAX))
    return static_cast<int64_t>(u);
  return std::nullopt;
}

std::optional<double> number(element e) {
  double v = 0;
  if (e.is_number() && !e.get_double().get(v)) return v;
  return std::nullopt;
}

std::optional<ss::Entity> entity_of(element list) {
  simdjson::dom::array items;
  if (list.get_array().get(items)) return std::nullopt;
  ss::Entity entity;
  for (element item : items) {
    simdjson::dom::array parts;
    if (item.get_array().get(parts) || parts.size() != 3) return std::nullopt;
    std::string_view name, kind;
    if (parts.at(0).get_string().get(name) || parts.at(1).get_string().get(kind))
      return std::nullopt;
    const element value = parts.at(2).value_unsafe();
    if (kind == "sp") {
      simdjson::dom::array sizes;
      if (value.get_array().get(sizes)) return std::nullopt;
      std::vector<int64_t> out;
      for (element s : sizes) {
        const auto v = integer(s);
        if (!v) return std::nullopt;
        out.push_back(*v);
      }
      entity.emplace_back(std::string(name), std::move(out));
    } else if (kind == "ot") {
      bool b = false;
      if (!value.get_bool().get(b)) {
        entity.emplace_back(std::string(name), b);
      } else if (const auto v = integer(value)) {
        entity.emplace_back(std::string(name), *v);
      } else {
        return std::nullopt;
      }
    } else if (kind == "an") {
      std::string_view text;
      if (value.get_string().get(text)) return std::nullopt;
      entity.emplace_back(std::string(name), std::string(text));
    } else {
      return std::nullopt;
    }
  }
  return entity;
}

// Whether an object anywhere in `e` names a key twice. JSON leaves the meaning of that open
// (simdjson's at_key finds the first, nlohmann keeps the last): such a line is the validating
// parser's to refuse, by name. Found by fuzz_autotvm_log.
bool has_duplicate_key(element e) {
  simdjson::dom::object object;
  simdjson::dom::array array;
  if (!e.get_object().get(object)) {
    std::vector<std::string_view> keys;
    for (auto field : object) {
      if (std::find(keys.begin(), keys.end(), field.key) != keys.end()) return true;
      keys.push_back(field.key);
      if (has_duplicate_key(field.value)) return true;
    }
  } else if (!e.get_array().get(array)) {
    for (element v : array)
      if (has_duplicate_key(v)) return true;
  }
  return false;
}

}  // namespace

struct LogLineScanner::Parser {
  simdjson::dom::parser dom;
};

LogLineScanner::LogLineScanner() : parser_(std::make_unique<Parser>()) {}
LogLineScanner::~LogLineScanner() = default;

std::optional<ScannedLine> LogLineScanner::scan(const std::string& line) {
  element document;
  simdjson::dom::object root;
  if (parser_->dom.parse(line).get(document) || document.get_object().get(root) ||
      has_duplicate_key(document))
    return std::nullopt;
  // Version 0.1 lines ("v") are refused by the validating parser, with its reason.
  element ignored;
  if (!root.at_key("v").get(ignored) && root.at_key("version").get(ignored)) return std::nullopt;

  simdjson::dom::array input;
  if (root.at_key("input").get_array().get(input) || input.size() < 3 ||
      !input.at(0).value_unsafe().is_string())
    return std::nullopt;
  ScannedLine out;
  out.input_key = simdjson::minify(input);

  simdjson::dom::object config;
  element entity;
  if (root.at_key("config").get_object().get(config) || config.at_key("entity").get(entity))
    return std::nullopt;
  auto parsed_entity = entity_of(entity);
  if (!parsed_entity) return std::nullopt;
  out.entity = std::move(*parsed_entity);
  element index;
  if (!config.at_key("index").get(index))
    if (const auto v = integer(index)) out.logged_index = *v;

  simdjson::dom::array result;
  if (root.at_key("result").get_array().get(result) || result.size() < 4) return std::nullopt;
  simdjson::dom::array costs;
  if (result.at(0).get_array().get(costs) || costs.size() == 0) return std::nullopt;
  for (element c : costs) {
    const auto v = number(c);
    if (!v || *v < 0) return std::nullopt;
    out.result.costs.push_back(*v);
  }
  const auto error_no = integer(result.at(1).value_unsafe());
  if (!error_no || *error_no < 0 || *error_no > 8) return std::nullopt;
  out.result.error_no = static_cast<ss::MeasureErrorNo>(*error_no);
  const auto all_cost = number(result.at(2).value_unsafe());
  const auto timestamp = number(result.at(3).value_unsafe());
  if (!all_cost || !timestamp) return std::nullopt;
  out.result.all_cost_s = *all_cost;
  out.result.timestamp = *timestamp;
  return out;
}

}  // namespace tensortune::records::detail
