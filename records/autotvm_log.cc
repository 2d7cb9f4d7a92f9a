#include "records/autotvm_log.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "records/detail/entity_json.h"
#include "records/detail/log_line_scanner.h"

namespace tensortune::records {

namespace ss = schedule_space;
using nlohmann::json;

Expected<std::string> to_autotvm_line(const StoredRecord& r) {
  json key, entity;
  try {
    key = json::parse(r.task.workload_key);  // ["template", [args...]]
    entity = json::parse(r.entity_json);
  } catch (const json::exception& e) {
    return data_loss("record of config " + std::to_string(r.config_index) + " of " +
                     r.task.workload_key + ": stored JSON is damaged: " + e.what());
  }
  if (!key.is_array() || key.size() != 2)
    return data_loss("stored workload key " + r.task.workload_key + " is not [task_name, args]");
  json costs = r.result.ok() ? json(r.result.costs) : json::array({ss::kErrorCost});
  json line;
  line["input"] = json::array({r.task.target, key[0], key[1], json::object()});
  line["config"] = json{{"index", r.config_index}, {"code_hash", nullptr}, {"entity", entity}};
  line["result"] = json::array(
      {costs, static_cast<int>(r.result.error_no), r.result.all_cost_s, r.result.timestamp});
  line["version"] = 0.2;
  line["tvm_version"] = "0.13.0";
  return line.dump();
}

namespace {

Error field_error(const std::string& field, const std::string& message) {
  return invalid_argument(field + ": " + message);
}

Expected<std::vector<int64_t>> int_list(const json& v, const std::string& field) {
  std::vector<int64_t> out;
  if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
  if (!v.is_array()) return field_error(field, v.dump() + " is not a list of integers");
  for (const json& x : v) {
    if (!x.is_number_integer()) return field_error(field, x.dump() + " is not an integer");
    out.push_back(x.get<int64_t>());
  }
  return out;
}

// The shape of ["TENSOR", shape, dtype] whose dtype is one of `dtypes`.
Expected<std::vector<int64_t>> tensor_shape(const json& v, const std::string& field,
                                            std::initializer_list<const char*> dtypes = {
                                                "float32"}) {
  if (!v.is_array() || v.size() != 3 || v[0] != "TENSOR")
    return field_error(field, v.dump() + " is not [\"TENSOR\", shape, dtype]");
  bool known = false;
  std::string names;
  for (const char* d : dtypes) {
    known = known || v[2] == d;
    names += (names.empty() ? "" : ", ") + std::string(d);
  }
  if (!known)
    return unimplemented(field + ": dtype " + v[2].dump() + " is not supported (" + names + ")");
  return int_list(v[1], field + " shape");
}

constexpr std::initializer_list<const char*> kFloatDTypes = {"float32", "tf32", "float16",
                                                             "bfloat16", "3xtf32"};

// A float operator's precision: its operands' dtype (both the same), float32 or a reduced one.
Expected<ss::Precision> float_precision(const json& data, const json& weight,
                                        const std::string& field) {
  if (data[2] != weight[2])
    return unimplemented(field + ": data of dtype " + data[2].dump() + " and weight of dtype " +
                         weight[2].dump() + " (one float precision for both)");
  return ss::parse_float_precision(data[2].get<std::string>());
}

Expected<ss::Workload> parse_conv_args(const json& a, ss::ConvArgsLayout layout,
                                       ss::Precision precision) {
  if (!a.is_array() || a.size() < 5)
    return field_error("input[2]", "conv2d args need at least 5 entries");
  // The int8 templates' tasks: uint8 data, int8 kernel (our "int7": weights in [-64, 64]), out
  // dtype "int32".
  const bool int8 = ss::is_quantized(precision);
  TT_ASSIGN_OR_RETURN(auto data, int8 ? tensor_shape(a[0], "input[2][0]", {"uint8"})
                                      : tensor_shape(a[0], "input[2][0]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(auto kernel, int8 ? tensor_shape(a[1], "input[2][1]", {"int8", "int7"})
                                        : tensor_shape(a[1], "input[2][1]", kFloatDTypes));
  if (int8 && a[1][2] == "int7") precision = ss::Precision::kUInt8Int7;
  if (!int8) {
    TT_ASSIGN_OR_RETURN(precision, float_precision(a[0], a[1], "input[2]"));
  }
  if (int8 && layout == ss::ConvArgsLayout::kWithLayouts && a.size() > 7 && a[7] != "int32")
    return unimplemented("input[2][7]: out dtype " + a[7].dump() +
                         " is not supported (int32 only)");
  TT_ASSIGN_OR_RETURN(auto strides, int_list(a[2], "input[2][2] strides"));
  TT_ASSIGN_OR_RETURN(auto pads, int_list(a[3], "input[2][3] padding"));
  TT_ASSIGN_OR_RETURN(auto dil, int_list(a[4], "input[2][4] dilation"));
  if (layout == ss::ConvArgsLayout::kWithLayouts && a.size() > 5 && a[5].is_string() &&
      a[5] != "NCHW")
    return unimplemented("input[2][5]: data layout " + a[5].dump() +
                         " is not supported (NCHW only)");
  // Templates without layouts (ConvArgsLayout::kNoLayouts): (..., dilation, out_dtype)
  if (layout == ss::ConvArgsLayout::kNoLayouts && a.size() > 5 && a[5].is_string() &&
      a[5] != "float32")
    return unimplemented("input[2][5]: out dtype " + a[5].dump() +
                         " is not supported (float32 only)");
  auto w = ss::conv2d_workload(data, kernel, strides, pads, dil);
  if (!w) return w.error().with_context("input[2]");
  w->precision = precision;
  return ss::Workload(*w);
}

Expected<ss::Workload> parse_dense_args(const json& a, ss::Precision precision) {
  if (!a.is_array() || a.size() < 2)
    return field_error("input[2]", "dense args need at least 2 entries");
  const bool int8 = ss::is_quantized(precision);
  TT_ASSIGN_OR_RETURN(auto data, int8 ? tensor_shape(a[0], "input[2][0]", {"uint8"})
                                      : tensor_shape(a[0], "input[2][0]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(auto weight, int8 ? tensor_shape(a[1], "input[2][1]", {"int8", "int7"})
                                        : tensor_shape(a[1], "input[2][1]", kFloatDTypes));
  if (int8 && a[1][2] == "int7") precision = ss::Precision::kUInt8Int7;
  if (!int8) {
    TT_ASSIGN_OR_RETURN(precision, float_precision(a[0], a[1], "input[2]"));
  }
  if (int8 && a.size() > 3 && a[3] != "int32")
    return unimplemented("input[2][3]: out dtype " + a[3].dump() +
                         " is not supported (int32 only)");
  auto d = ss::dense_workload(data, weight);
  if (!d) return d.error().with_context("input[2]");
  d->precision = precision;
  return ss::Workload(*d);
}

// batch_matmul(x, y, out_shape, out_dtype, transpose_a, transpose_b); TVM before 0.8 wrote only
// (x, y) or (x, y, out_shape), with y as [B, N, K].
Expected<ss::Workload> parse_batch_matmul_args(const json& a) {
  if (!a.is_array() || a.size() < 2)
    return field_error("input[2]", "batch_matmul args need at least 2 entries");
  TT_ASSIGN_OR_RETURN(auto x, tensor_shape(a[0], "input[2][0]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(auto y, tensor_shape(a[1], "input[2][1]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(const ss::Precision precision, float_precision(a[0], a[1], "input[2]"));
  if (a.size() > 3 && !a[3].is_null() && a[3] != "float32")
    return unimplemented("input[2][3]: out dtype " + a[3].dump() +
                         " is not supported (float32 only)");
  if (a.size() > 4 && !a[4].is_boolean())
    return field_error("input[2][4]", "transpose_a " + a[4].dump() + " is not true or false");
  if (a.size() > 4 && a[4].get<bool>())
    return unimplemented("input[2][4]: transpose_a = true is not supported");
  if (a.size() > 5 && !a[5].is_boolean())
    return field_error("input[2][5]", "transpose_b " + a[5].dump() + " is not true or false");
  const bool transpose_b = a.size() > 5 ? a[5].get<bool>() : true;
  auto w = ss::batch_matmul_workload(x, y, transpose_b);
  if (!w) return w.error().with_context("input[2]");
  w->precision = precision;
  return ss::Workload(*w);
}

// Our attention's (q, k^T, v, mask or null, scale): AutoTVM has no such task.
Expected<ss::Workload> parse_attention_args(const json& a) {
  if (!a.is_array() || a.size() != 5)
    return field_error("input[2]", "attention args are [q, k, v, mask or null, scale]");
  TT_ASSIGN_OR_RETURN(auto q, tensor_shape(a[0], "input[2][0]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(auto k, tensor_shape(a[1], "input[2][1]", kFloatDTypes));
  TT_ASSIGN_OR_RETURN(auto v, tensor_shape(a[2], "input[2][2]", kFloatDTypes));
  if (q.size() != 3 || k.size() != 3 || v.size() != 3 || q[0] != k[0] || k[0] != v[0] ||
      q[2] != k[1] || k[2] != v[1])
    return field_error("input[2]", "attention q, k, v are not [B, M, K], [B, K, N], [B, N, Dv]");
  ss::AttentionWorkload w{q[0], q[1], k[2], q[2], v[2]};
  if (!a[3].is_null()) {
    TT_ASSIGN_OR_RETURN(auto m, tensor_shape(a[3], "input[2][3]", kFloatDTypes));
    if (m.size() != 3 || m[2] != w.n)
      return field_error("input[2][3]", "attention mask is not [MB, MR, N]");
    w.mask_batch = m[0];
    w.mask_rows = m[1];
  }
  if (!a[4].is_number())
    return field_error("input[2][4]", "scale " + a[4].dump() + " is no number");
  w.scale = a[4].get<double>();
  if (Status s = ss::validate(w); !s) return s.error().with_context("input[2]");
  return ss::Workload(w);
}

Expected<ss::Task> parse_task(const json& name_json, const json& args, const std::string& target,
                              int lanes) {
  if (!name_json.is_string())
    return field_error("input[1]", "task name " + name_json.dump() + " is not a string");
  const std::string name = name_json.get<std::string>();
  const ss::Template* tmpl = ss::find_template(name);
  if (!tmpl) return unimplemented("input[1]: task '" + name + "' is not a template tensortune has");
  // AutoTVM's argument list is the operator's (every conv2d template takes the same one).
  Expected<ss::Workload> workload =
      tmpl->operator_kind() == ss::OperatorKind::kConv2d
          ? parse_conv_args(args, tmpl->autotvm_conv_args(), tmpl->precision())
      : tmpl->operator_kind() == ss::OperatorKind::kBatchMatmul ? parse_batch_matmul_args(args)
      : tmpl->operator_kind() == ss::OperatorKind::kAttention
          ? parse_attention_args(args)
          : parse_dense_args(args, tmpl->precision());
  if (!workload) return workload.error();
  auto task = ss::make_task(name, *workload, ss::Target{target, lanes});
  if (!task) return task.error().with_context("input");
  return task;
}

}  // namespace

Expected<TargetString> parse_target_string(const std::string& spec) {
  TargetString t;
  std::istringstream words(spec);
  std::string word;
  while (words >> word) {
    if (t.kind.empty()) {
      if (word[0] == '-')
        return invalid_argument("target '" + spec +
                                "' does not start with its kind (llvm, cuda...)");
      t.kind = word;
      continue;
    }
    if (word.size() < 2 || word[0] != '-')
      return invalid_argument("target '" + spec + "': '" + word + "' is not -name or -name=value");
    const size_t eq = word.find('=');
    const size_t start = word[1] == '-' ? 2 : 1;  // -mcpu or --mcpu
    const std::string name =
        word.substr(start, eq == std::string::npos ? std::string::npos : eq - start);
    const std::string value = eq == std::string::npos ? "true" : word.substr(eq + 1);
    if (name == "keys") {
      std::istringstream list(value);
      std::string key;
      while (std::getline(list, key, ','))
        if (!key.empty()) t.keys.push_back(key);
    } else {
      t.attrs[name] = value;
    }
  }
  if (t.kind.empty()) return invalid_argument("target is empty");
  return t;
}

std::string device_key_from_target(const TargetString& target) {
  if (auto it = target.attrs.find("model"); it != target.attrs.end() && !it->second.empty())
    return it->second;
  // GPU records are valid for one architecture: the kind's key ("cuda-sm80"), as GPU servers
  // register.
  if (const ss::TargetKind* kind = ss::find_target_kind(target.kind); kind && kind->runs_on_gpu())
    if (auto it = target.attrs.find("arch"); it != target.attrs.end())
      if (auto key = kind->device_key(ss::Target{target.kind + " -arch=" + it->second, 1}))
        return *key;
  if (auto it = target.attrs.find("mcpu"); it != target.attrs.end() && !it->second.empty())
    return it->second;
  return target.kind;
}

Expected<ss::Task> task_from_workload_key(const std::string& workload_key,
                                          const std::string& target, int vector_lanes) {
  json key;
  try {
    key = json::parse(workload_key);
  } catch (const json::exception& e) {
    return invalid_argument(std::string("workload key is not JSON: ") + e.what());
  }
  if (!key.is_array() || key.size() != 2)
    return invalid_argument("workload key is not [task_name, args]: " + workload_key);
  return parse_task(key[0], key[1], target, vector_lanes);
}

Expected<ParsedLogLine> parse_autotvm_line(const std::string& text, int vector_lanes) {
  json j;
  // A key given twice in one object is ambiguous (JSON parsers disagree on which counts):
  // refused, naming it.
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  const json::parser_callback_t check_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() &&
               !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    j = json::parse(text, check_keys);
  } catch (const json::exception& e) {
    return invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!duplicate.empty())
    return invalid_argument("the key '" + duplicate.substr(0, 64) +
                            "' appears twice in one object");
  if (!j.is_object()) return invalid_argument("line is not a JSON object");
  if (j.contains("v") && !j.contains("version"))
    return field_error("v", "log version 0.1 is not supported (AutoTVM skips it too)");
  if (!j.contains("input") || !j["input"].is_array() || j["input"].size() < 3)
    return field_error("input", "missing or not [target, task_name, args, kwargs]");
  const json& input = j["input"];
  if (!input[0].is_string())
    return field_error("input[0]", "target " + input[0].dump() + " is not a string");
  TT_ASSIGN_OR_RETURN(ss::Task task,
                      parse_task(input[1], input[2], input[0].get<std::string>(), vector_lanes));

  if (!j.contains("config") || !j["config"].is_object())
    return field_error("config", "missing or not an object");
  const json& config = j["config"];
  if (!config.contains("entity")) return field_error("config.entity", "missing");
  auto entity = detail::entity_from_json_value(config["entity"]);
  if (!entity) return entity.error().with_context("config.entity");
  ParsedLogLine out{task, ss::template_of(task).entity_from_autotvm(std::move(*entity)), 0, {}};
  if (config.contains("index") && config["index"].is_number_integer())
    out.logged_index = config["index"].get<int64_t>();

  if (!j.contains("result") || !j["result"].is_array() || j["result"].size() < 4)
    return field_error("result", "missing or not [costs, error_no, all_cost, timestamp]");
  const json& r = j["result"];
  if (!r[0].is_array() || r[0].empty())
    return field_error("result[0]", "costs " + r[0].dump() + " is not a non-empty list");
  for (const json& c : r[0]) {
    if (!c.is_number() || c.get<double>() < 0)
      return field_error("result[0]", "cost " + c.dump() + " is not a non-negative number");
    out.result.costs.push_back(c.get<double>());
  }
  if (!r[1].is_number_integer() || r[1].get<int64_t>() < 0 || r[1].get<int64_t>() > 8)
    return field_error("result[1]",
                       "error_no " + r[1].dump() + " is not an AutoTVM MeasureErrorNo (0..8)");
  out.result.error_no = static_cast<ss::MeasureErrorNo>(r[1].get<int>());
  if (!r[2].is_number())
    return field_error("result[2]", "all_cost " + r[2].dump() + " is not a number");
  if (!r[3].is_number())
    return field_error("result[3]", "timestamp " + r[3].dump() + " is not a number");
  out.result.all_cost_s = r[2].get<double>();
  out.result.timestamp = r[3].get<double>();
  return out;
}

Expected<int64_t> export_autotvm_log(RecordStore& store, std::ostream& out) {
  TT_ASSIGN_OR_RETURN(auto records, store.all_records());
  for (const StoredRecord& r : records) {
    TT_ASSIGN_OR_RETURN(std::string line, to_autotvm_line(r));
    out << line << "\n";
  }
  return static_cast<int64_t>(records.size());
}

}  // namespace tensortune::records
