// Implements artifact.h.
#include "compiler/runtime/artifact.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/runtime/artifact_codec.h"
#include "schedule_space/target_kind.h"
#include "support/sha256.h"

namespace tensortune::runtime {

using graph::DType;
using graph::Graph;
using graph::OpKind;
using graph::Tensor;
using graph::ValueId;
using nlohmann::json;

namespace {

constexpr char kMagic[8] = {'T', 'T', 'N', 'E', 'T', '0', '0', '1'};
constexpr int kFormat = 1;
constexpr size_t kDigestBytes = 32;

void put_u64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

json encode_attrs(const graph::Attrs& attrs) {
  json out = json::object();
  for (const auto& [name, value] : attrs.items()) {
    if (const auto* i = std::get_if<int64_t>(&value)) out[name] = {{"int", *i}};
    // JSON has no infinity (clip's default bounds): non-finite floats travel as text.
    else if (const auto* f = std::get_if<double>(&value))
      out[name] = std::isfinite(*f) ? json{{"float", *f}} : json{{"float", std::to_string(*f)}};
    else if (const auto* v = std::get_if<std::vector<int64_t>>(&value))
      out[name] = {{"ints", *v}};
    else
      out[name] = {{"string", std::get<std::string>(value)}};
  }
  return out;
}

json encode_tensor_ref(const Tensor& t, BlobWriter& blobs) {
  return {{"dtype", graph::dtype_name(t.dtype)}, {"shape", t.shape}, {"blob", blobs.add(t)}};
}

json encode_graph(const Graph& g, BlobWriter& blobs) {
  json values = json::array();
  for (const auto& v : g.values()) {
    json e = {{"name", v.name},
              {"dtype", graph::dtype_name(v.type.dtype)},
              {"shape", v.type.shape},
              {"producer", v.producer}};
    if (v.constant) e["constant_blob"] = blobs.add(*v.constant);
    values.push_back(std::move(e));
  }
  json nodes = json::array();
  for (const auto& n : g.nodes())
    nodes.push_back({{"op", graph::op_name(n.op)},
                     {"name", n.name},
                     {"inputs", n.inputs},
                     {"output", n.output},
                     {"group", n.fusion_group},
                     {"attrs", encode_attrs(n.attrs)}});
  std::vector<std::string> output_names;
  for (size_t i = 0; i < g.outputs().size(); ++i) output_names.push_back(g.output_name(i));
  return {{"name", g.name()},     {"values", values},       {"nodes", nodes},
          {"inputs", g.inputs()}, {"outputs", g.outputs()}, {"output_names", output_names}};
}

}  // namespace

int BlobWriter::add(std::string bytes) {
  if (dedupe) {
    std::string digest = sha256(bytes);
    if (auto it = by_digest.find(digest); it != by_digest.end()) return it->second;
    by_digest.emplace(std::move(digest), static_cast<int>(blobs.size()));
  }
  blobs.push_back(std::move(bytes));
  return static_cast<int>(blobs.size() - 1);
}

int BlobWriter::add(const Tensor& t) {
  std::string bytes(static_cast<size_t>(t.size() * graph::buffer_element_size(t.dtype)), '\0');
  graph::write_buffer(t, bytes.data());
  return add(std::move(bytes));
}

json encode_network(const CompiledNetwork& net, BlobWriter& blobs) {
  json header;
  header["format"] = kFormat;
  header["model"] = net.model;
  header["opt_level"] = net.opt_level;
  header["threads"] = net.threads;
  header["cpu"] = {{"triple", net.cpu.triple},
                   {"cpu", net.cpu.cpu},
                   {"features", net.cpu.features},
                   {"vector_lanes", net.cpu.vector_lanes}};
  header["records_source"] = net.records_source;
  json schedules = json::array();
  for (const auto& s : net.schedules)
    schedules.push_back({{"workload", s.workload},
                         {"schedule", s.schedule},
                         {"tuned", s.tuned},
                         {"borrowed_from", s.borrowed_from}});
  header["schedules"] = schedules;
  header["graph"] = encode_graph(net.graph, blobs);
  json params = json::array();
  for (const auto& p : net.params) params.push_back(encode_tensor_ref(p, blobs));
  header["params"] = params;
  json steps = json::array();
  for (const auto& s : net.steps) {
    json args = json::array();
    for (const auto& a : s.args)
      args.push_back({a.kind == ArgRef::Kind::kValue ? "value" : "param", a.index});
    steps.push_back({{"kind", step_kind_name(s.kind)},
                     {"label", s.label},
                     {"nodes", s.nodes},
                     {"output", s.output},
                     {"symbol", s.symbol},
                     {"extent", s.extent},
                     {"args", args},
                     {"flop", s.flop}});
    if (s.rows_per_block > 0)
      steps.back()["rows"] = {s.rows_per_block, s.row_blocks, s.row_inner,
                              s.rows_follow_sequence ? 1 : 0};
  }
  header["steps"] = steps;
  header["object_blob"] = blobs.add(net.object_code);
  if (net.target == TargetKind::kCuda) {
    header["target"] = "cuda";
    header["compute_capability"] = net.compute_capability;
    json kernels = json::array();
    for (const auto& k : net.gpu_kernels)
      kernels.push_back({{"entry", k.entry},
                         {"grid", {k.grid.x, k.grid.y, k.grid.z}},
                         {"block", {k.block.x, k.block.y, k.block.z}},
                         {"shared_bytes", k.shared_bytes},
                         {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                         {"epilogue_operands", k.epilogue_operands},
                         {"arg_count", k.arg_count},
                         {"source_blob", blobs.add(k.source)}});
    header["gpu_kernels"] = kernels;
    header["gpu_source_blob"] = blobs.add(net.gpu_source);
    header["gpu_ptx_blob"] = blobs.add(net.gpu_ptx);
  }
  return header;
}

std::string frame(const char (&magic)[8], const json& header, const BlobWriter& blobs) {
  std::string out(magic, sizeof magic);
  const std::string text = header.dump();
  put_u64(out, text.size());
  out += text;
  put_u64(out, blobs.blobs.size());
  for (const auto& b : blobs.blobs) {
    put_u64(out, b.size());
    out += b;
  }
  out += sha256(out);
  return out;
}

std::string serialize_network(const CompiledNetwork& net) {
  BlobWriter blobs;
  const json header = encode_network(net, blobs);
  return frame(kMagic, header, blobs);
}

namespace {

/// Reads the container; every length is checked against what is left.
class Reader {
 public:
  Reader(const std::string& bytes, size_t end) : bytes_(bytes), end_(end) {}
  bool u64(uint64_t* v) {
    if (end_ - pos_ < 8) return false;
    std::memcpy(v, bytes_.data() + pos_, 8);
    pos_ += 8;
    return true;
  }
  bool take(uint64_t n, std::string* out) {
    if (end_ - pos_ < n) return false;
    out->assign(bytes_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool at_end() const { return pos_ == end_; }

 private:
  const std::string& bytes_;
  size_t end_, pos_ = 8;  // after the magic
};

Expected<DType> dtype_from(const std::string& name) {
  DType dtype;
  if (graph::dtype_from_name(name, &dtype)) return dtype;
  return invalid_argument("dtype '" + name +
                          "' is unknown (float32, int64, int32, bool, int8 or uint8)");
}

Expected<OpKind> op_from(const std::string& name) {
  if (auto op = graph::op_from_name(name)) return *op;
  return invalid_argument("operator '" + name + "' is unknown");
}

/// The parsed header with its blobs; a json type error becomes an Error in the caller.
struct Decoder {
  const std::vector<std::string>& blobs;

  Expected<Tensor> tensor(const std::string& dtype_name, const graph::Shape& shape, int64_t blob) {
    if (blob < 0 || static_cast<size_t>(blob) >= blobs.size())
      return invalid_argument("blob " + std::to_string(blob) + " does not exist");
    TT_ASSIGN_OR_RETURN(DType dtype, dtype_from(dtype_name));
    for (int64_t d : shape)
      if (d < 0) return invalid_argument("a tensor has a negative dimension");
    const graph::TensorType type{dtype, shape};
    const std::string& b = blobs[static_cast<size_t>(blob)];
    const size_t count = static_cast<size_t>(graph::num_elements(shape));
    const size_t bytes = count * static_cast<size_t>(graph::buffer_element_size(dtype));
    // Integers at their width; artifacts written before that held every integer in 8 bytes.
    if (!graph::is_float(dtype) && b.size() == count * 8 && bytes != count * 8) {
      Tensor t = graph::tensor_from_storage(type, b.data());
      for (int64_t& v : t.i64) v = graph::wrap_integer(dtype, v);  // a crafted blob may not be
      return t;
    }
    if (b.size() != bytes)
      return invalid_argument("blob " + std::to_string(blob) + " has " + std::to_string(b.size()) +
                              " bytes, its tensor needs " + std::to_string(bytes));
    return graph::read_buffer(type, b.data());  // narrow integers are sign- or zero-extended
  }

  Expected<graph::Attrs> attrs(const json& j) {
    graph::Attrs a;
    for (const auto& [name, v] : j.items()) {
      if (v.contains("int"))
        a.set(name, v.at("int").get<int64_t>());
      else if (v.contains("float") && v.at("float").is_string())
        a.set(name, std::strtod(v.at("float").get<std::string>().c_str(), nullptr));
      else if (v.contains("float"))
        a.set(name, v.at("float").get<double>());
      else if (v.contains("ints"))
        a.set(name, v.at("ints").get<std::vector<int64_t>>());
      else if (v.contains("string"))
        a.set(name, v.at("string").get<std::string>());
      else
        return invalid_argument("attribute '" + name + "' has no value");
    }
    return a;
  }

  Expected<Graph> graph(const json& j) {
    Graph g(j.at("name").get<std::string>());
    const json& values = j.at("values");
    const json& nodes = j.at("nodes");
    std::vector<int> node_of_value(values.size(), -1);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int64_t out = nodes[i].at("output").get<int64_t>();
      if (out < 0 || static_cast<size_t>(out) >= values.size())
        return invalid_argument("node " + std::to_string(i) + " has output " + std::to_string(out));
      node_of_value[static_cast<size_t>(out)] = static_cast<int>(i);
    }
    const auto inputs = j.at("inputs").get<std::vector<ValueId>>();
    for (size_t v = 0; v < values.size(); ++v) {
      const json& e = values[v];
      ValueId id;
      if (e.contains("constant_blob")) {
        TT_ASSIGN_OR_RETURN(
            Tensor t, tensor(e.at("dtype").get<std::string>(), e.at("shape").get<graph::Shape>(),
                             e.at("constant_blob").get<int64_t>()));
        id = g.add_constant(e.at("name").get<std::string>(), std::move(t));
      } else if (node_of_value[v] < 0) {
        TT_ASSIGN_OR_RETURN(DType dtype, dtype_from(e.at("dtype").get<std::string>()));
        id = g.add_input(e.at("name").get<std::string>(),
                         {dtype, e.at("shape").get<graph::Shape>()});
      } else {
        const json& n = nodes[static_cast<size_t>(node_of_value[v])];
        TT_ASSIGN_OR_RETURN(OpKind op, op_from(n.at("op").get<std::string>()));
        TT_ASSIGN_OR_RETURN(graph::Attrs a, attrs(n.at("attrs")));
        auto ins = n.at("inputs").get<std::vector<ValueId>>();
        for (ValueId in : ins)
          if (in < 0 || static_cast<size_t>(in) >= v)
            return invalid_argument("value " + std::to_string(v) + " reads value " +
                                    std::to_string(in) + " before it exists");
        TT_ASSIGN_OR_RETURN(
            id, g.add_node(op, n.at("name").get<std::string>(), std::move(ins), std::move(a)));
        g.mutable_nodes().back().fusion_group = n.at("group").get<int>();
        if (g.type(id).shape != e.at("shape").get<graph::Shape>())
          return invalid_argument("value " + std::to_string(v) +
                                  " has another shape than its node infers");
      }
      if (static_cast<size_t>(id) != v) return invalid_argument("values are out of order");
    }
    if (g.inputs() != inputs) return invalid_argument("the graph inputs do not match its values");
    // The node list must come back in its original order (steps refer to node indices).
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (node_of_value[static_cast<size_t>(g.nodes()[i].output)] != static_cast<int>(i))
        return invalid_argument("nodes are out of order");
    const auto outputs = j.at("outputs").get<std::vector<ValueId>>();
    // Artifacts written before outputs kept their names name them by their values.
    const auto names = j.contains("output_names")
                           ? j.at("output_names").get<std::vector<std::string>>()
                           : std::vector<std::string>(outputs.size());
    if (names.size() != outputs.size())
      return invalid_argument("output_names has " + std::to_string(names.size()) + " names for " +
                              std::to_string(outputs.size()) + " outputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const ValueId o = outputs[i];
      if (o < 0 || static_cast<size_t>(o) >= values.size())
        return invalid_argument("output " + std::to_string(o) + " does not exist");
      g.add_output(o, names[i]);
    }
    return g;
  }

  Expected<CompiledNetwork> network(const json& h) {
    if (h.at("format").get<int>() != kFormat)
      return invalid_argument("format " + std::to_string(h.at("format").get<int>()) + " is not " +
                              std::to_string(kFormat));
    CompiledNetwork net;
    net.model = h.at("model").get<std::string>();
    net.opt_level = h.at("opt_level").get<int>();
    net.threads = h.at("threads").get<int>();
    const json& cpu = h.at("cpu");
    net.cpu = {cpu.at("triple").get<std::string>(), cpu.at("cpu").get<std::string>(),
               cpu.at("features").get<std::vector<std::string>>(),
               cpu.at("vector_lanes").get<int>()};
    net.records_source = h.at("records_source").get<std::string>();
    for (const auto& s : h.at("schedules"))
      net.schedules.push_back({s.at("workload").get<std::string>(),
                               s.at("schedule").get<std::string>(), s.at("tuned").get<bool>(),
                               s.value("borrowed_from", std::string())});
    TT_ASSIGN_OR_RETURN(net.graph, graph(h.at("graph")));
    for (const auto& p : h.at("params")) {
      TT_ASSIGN_OR_RETURN(
          Tensor t, tensor(p.at("dtype").get<std::string>(), p.at("shape").get<graph::Shape>(),
                           p.at("blob").get<int64_t>()));
      net.params.push_back(std::move(t));
    }
    const size_t nodes = net.graph.nodes().size(), values = net.graph.values().size();
    for (const auto& s : h.at("steps")) {
      Step step;
      const std::string kind = s.at("kind").get<std::string>();
      if (kind == "kernel")
        step.kind = Step::Kind::kKernel;
      else if (kind == "native")
        step.kind = Step::Kind::kNative;
      else if (kind == "interpret")
        step.kind = Step::Kind::kInterpret;
      else
        return invalid_argument("step kind '" + kind + "' is unknown");
      step.label = s.at("label").get<std::string>();
      step.nodes = s.at("nodes").get<std::vector<int>>();
      step.output = s.at("output").get<ValueId>();
      step.symbol = s.at("symbol").get<std::string>();
      step.extent = s.at("extent").get<int64_t>();
      step.flop = s.at("flop").get<double>();
      if (step.nodes.empty() || step.extent < 0 || step.output < 0 ||
          static_cast<size_t>(step.output) >= values)
        return invalid_argument("step '" + step.label + "' is malformed");
      for (int n : step.nodes)
        if (n < 0 || static_cast<size_t>(n) >= nodes)
          return invalid_argument("step '" + step.label + "' names node " + std::to_string(n));
      if (s.contains("rows")) {
        const auto rows = s.at("rows").get<std::vector<int64_t>>();
        const graph::Shape& out = net.graph.type(step.output).shape;
        // The walk must tile the extent, and the rows the output's second-last axis (the
        // executor zeroes rows of it).
        if (rows.size() != 4 || rows[0] < 1 || rows[1] < 1 || rows[2] < 1 ||
            step.extent % (rows[1] * rows[2]) != 0 || out.size() < 2 ||
            out[out.size() - 2] != rows[0] * rows[1])
          return invalid_argument("step '" + step.label + "' has a row walk that does not fit it");
        step.rows_per_block = rows[0];
        step.row_blocks = rows[1];
        step.row_inner = rows[2];
        step.rows_follow_sequence = rows[3] != 0;
      }
      for (const auto& a : s.at("args")) {
        ArgRef r{
            a.at(0).get<std::string>() == "value" ? ArgRef::Kind::kValue : ArgRef::Kind::kParam,
            a.at(1).get<int>()};
        const size_t limit = r.kind == ArgRef::Kind::kValue ? values : net.params.size();
        if (r.index < 0 || static_cast<size_t>(r.index) >= limit)
          return invalid_argument("step '" + step.label + "' has an argument out of range");
        step.args.push_back(r);
      }
      net.steps.push_back(std::move(step));
    }
    const int64_t object = h.at("object_blob").get<int64_t>();
    if (object < 0 || static_cast<size_t>(object) >= blobs.size())
      return invalid_argument("the object code blob does not exist");
    net.object_code = blobs[static_cast<size_t>(object)];
    const std::string target = h.value("target", std::string("llvm"));
    const schedule_space::TargetKind* kind = schedule_space::find_target_kind(target);
    if (!kind)
      return invalid_argument("target '" + target + "' is no kind of target tensortune knows");
    if (kind->runs_on_gpu()) {
      net.target = TargetKind::kCuda;
      TT_RETURN_IF_ERROR(gpu_kernels(h, net));
    }
    return net;
  }

  Expected<std::string> blob(const json& index, const std::string& what) {
    const int64_t i = index.get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= blobs.size())
      return invalid_argument("the " + what + " blob does not exist");
    return blobs[static_cast<size_t>(i)];
  }

  Status gpu_kernels(const json& h, CompiledNetwork& net) {
    net.compute_capability = h.at("compute_capability").get<int>();
    if (net.compute_capability < 10)
      return invalid_argument("compute_capability " + std::to_string(net.compute_capability) +
                              " is not one (80 = sm_80)");
    for (const auto& k : h.at("gpu_kernels")) {
      codegen::cuda::CudaKernelSource kernel;
      kernel.entry = k.at("entry").get<std::string>();
      const auto grid = k.at("grid").get<std::vector<int64_t>>();
      const auto block = k.at("block").get<std::vector<int64_t>>();
      if (grid.size() != 3 || block.size() != 3)
        return invalid_argument("GPU kernel '" + kernel.entry + "' has no 3-d grid and block");
      kernel.grid = {grid[0], grid[1], grid[2]};
      kernel.block = {block[0], block[1], block[2]};
      kernel.shared_bytes = k.at("shared_bytes").get<int64_t>();
      // Absent from artifacts written before kernels had dynamic shared memory.
      kernel.dynamic_shared_bytes = k.value("dynamic_shared_bytes", int64_t{0});
      kernel.epilogue_operands = k.at("epilogue_operands").get<int>();
      kernel.arg_count = k.at("arg_count").get<int>();
      for (int64_t d : {grid[0], grid[1], grid[2], block[0], block[1], block[2]})
        if (d < 1)
          return invalid_argument("GPU kernel '" + kernel.entry + "' has a launch dimension " +
                                  std::to_string(d));
      if (kernel.arg_count < 1 || kernel.epilogue_operands < 0 || kernel.shared_bytes < 0 ||
          kernel.dynamic_shared_bytes < 0)
        return invalid_argument("GPU kernel '" + kernel.entry + "' is malformed");
      TT_ASSIGN_OR_RETURN(kernel.source, blob(k.at("source_blob"), "GPU kernel source"));
      net.gpu_kernels.push_back(std::move(kernel));
    }
    TT_ASSIGN_OR_RETURN(net.gpu_source, blob(h.at("gpu_source_blob"), "GPU module source"));
    TT_ASSIGN_OR_RETURN(net.gpu_ptx, blob(h.at("gpu_ptx_blob"), "PTX"));
    return Status{};
  }
};

}  // namespace

Error corrupted(const std::string& what, const std::string& why) {
  return Error{ErrorCode::kDataLoss, what + " is not a valid tensortune artifact: " + why};
}

Expected<Framed> unframe(const std::string& bytes, const char (&magic)[8],
                         const std::string& what) {
  const std::string kind(magic, 5);
  if (bytes.size() < sizeof magic + 16 + kDigestBytes || std::memcmp(bytes.data(), magic, 5) != 0)
    return corrupted(what,
                     "it does not start with " + kind + " (was it written by tensortune compile?)");
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    return corrupted(what, "its format " + bytes.substr(5, 3) + " is not " +
                               std::string(magic + 5, 3) +
                               ": compile it again with this tensortune");
  const size_t end = bytes.size() - kDigestBytes;
  if (sha256(std::string_view(bytes).substr(0, end)) != bytes.substr(end))
    return corrupted(what,
                     "its SHA-256 checksum does not match (the file is truncated or corrupted)");
  Reader r(bytes, end);
  uint64_t header_length = 0, count = 0;
  Framed f;
  if (!r.u64(&header_length) || !r.take(header_length, &f.header) || !r.u64(&count))
    return corrupted(what, "its header is truncated");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t n = 0;
    f.blobs.emplace_back();
    if (!r.u64(&n) || !r.take(n, &f.blobs.back()))
      return corrupted(what, "blob " + std::to_string(i) + " is truncated");
  }
  if (!r.at_end()) return corrupted(what, "it has bytes after its last blob");
  return f;
}

Expected<CompiledNetwork> decode_network(const json& header,
                                         const std::vector<std::string>& blobs) {
  Decoder d{blobs};
  return d.network(header);
}

Expected<CompiledNetwork> deserialize_network(const std::string& bytes, const std::string& what) {
  TT_ASSIGN_OR_RETURN(Framed f, unframe(bytes, kMagic, what));
  try {
    const json header = json::parse(f.header);
    auto net = decode_network(header, f.blobs);
    if (!net) return corrupted(what, net.error().message);
    return net;
  } catch (const json::exception& e) {
    return corrupted(what, std::string("its header does not parse: ") + e.what());
  }
}

Status write_artifact_bytes(const std::string& bytes, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return invalid_argument("cannot write " + tmp + ": " + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return invalid_argument("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return invalid_argument("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return Status{};
}

Expected<std::string> read_artifact_bytes(const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{ErrorCode::kNotFound,
                 "cannot open artifact " + path + ": " + std::strerror(errno)};
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > max_bytes)
    return Error{ErrorCode::kOutOfRange, "artifact " + path + ": " + std::to_string(size) +
                                             " bytes, more than the limit of " +
                                             std::to_string(max_bytes) + " (--max-artifact-bytes)"};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_network(const CompiledNetwork& network, const std::string& path) {
  return write_artifact_bytes(serialize_network(network), path);
}

Expected<CompiledNetwork> read_network(const std::string& path, int64_t max_bytes) {
  TT_ASSIGN_OR_RETURN(std::string bytes, read_artifact_bytes(path, max_bytes));
  return deserialize_network(bytes, path);
}

}  // namespace tensortune::runtime
