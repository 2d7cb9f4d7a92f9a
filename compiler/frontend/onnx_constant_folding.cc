#include "compiler/frontend/onnx_constant_folding.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/frontend/onnx_import_context.h"

namespace tensortune::frontend {

namespace {

using graph::Tensor;

Error bad(const onnx::NodeProto& n, const std::string& what) {
  return invalid_argument("node '" + node_label(n) + "' (" + n.op_type() + "): " + what);
}

/// A Constant node's tensor; nothing for the forms left alone (sparse, strings).
std::optional<Expected<Tensor>> constant_value(const onnx::NodeProto& n) {
  NodeAttributes a(n);
  if (const auto* v = a.get("value")) return tensor_from_proto(v->t());
  if (const auto* f = a.get("value_float")) return Tensor::from_floats({}, {f->f()});
  if (const auto* fs = a.get("value_floats"))
    return Tensor::from_floats({fs->floats_size()}, {fs->floats().begin(), fs->floats().end()});
  if (const auto* i = a.get("value_int")) return Tensor::from_ints({}, {i->i()});
  if (const auto* is = a.get("value_ints"))
    return Tensor::from_ints({is->ints_size()}, {is->ints().begin(), is->ints().end()});
  return std::nullopt;
}

Expected<Tensor> reshaped(const onnx::NodeProto& n, Tensor t, const Shape& to) {
  if (num_elements(to) != t.size())
    return bad(n, "shape " + shape_to_string(to) + " does not hold the " +
                      std::to_string(t.size()) + " elements of " + shape_to_string(t.shape));
  t.shape = to;
  return t;
}

/// Reshape's target shape: 0 copies the input's dimension (unless allowzero), -1 takes the rest.
Expected<Shape> reshape_target(const onnx::NodeProto& n, const Shape& from, const Tensor& shape) {
  if (is_float(shape.dtype) || shape.shape.size() != 1) return bad(n, "the shape is not int64[k]");
  const bool allow_zero = NodeAttributes(n).get_int("allowzero", 0) != 0;
  Shape to(shape.i64.begin(), shape.i64.end());
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < to.size(); ++d) {
    if (to[d] == 0 && !allow_zero) {
      if (d >= from.size()) return bad(n, "0 copies a dimension the data does not have");
      to[d] = from[d];
    }
    if (to[d] == -1) {
      if (infer >= 0) return bad(n, "two -1 dimensions");
      infer = static_cast<int64_t>(d);
      continue;
    }
    if (to[d] < 0) return bad(n, "dimension " + std::to_string(to[d]));
    known *= to[d];
  }
  if (infer >= 0) {
    const int64_t total = num_elements(from);
    if (known == 0 || total % known != 0)
      return bad(n, "-1 cannot complete " + shape_to_string(to) + " for " + shape_to_string(from));
    to[static_cast<size_t>(infer)] = total / known;
  }
  return to;
}

Expected<Tensor> transposed(const onnx::NodeProto& n, const Tensor& t) {
  const int64_t rank = static_cast<int64_t>(t.shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = rank - 1 - d;
  perm = NodeAttributes(n).get_ints("perm", perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d = 0; d < static_cast<int64_t>(sorted.size()); ++d)
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[static_cast<size_t>(d)] != d)
      return bad(n, "perm is not a permutation of the " + std::to_string(rank) + " axes");
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(t.shape[static_cast<size_t>(p)]);
  Tensor out = Tensor::zeros(t.dtype, out_shape);
  const std::vector<int64_t> in_strides = strides_of(t.shape);
  const std::vector<int64_t> out_strides = strides_of(out_shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t coord =
          (i / out_strides[static_cast<size_t>(d)]) % out_shape[static_cast<size_t>(d)];
      src += coord * in_strides[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    }
    if (is_float(t.dtype))
      out.f32[static_cast<size_t>(i)] = t.f32[static_cast<size_t>(src)];
    else
      out.i64[static_cast<size_t>(i)] = t.i64[static_cast<size_t>(src)];
  }
  return out;
}

/// The axes of (Un)Squeeze: an attribute before opset 13, the second input from it; negative
/// ones counted from `rank` (the input's for Squeeze, the output's for Unsqueeze), sorted.
Expected<std::vector<int64_t>> axes_of(const onnx::NodeProto& n, int64_t opset,
                                       const std::vector<const Tensor*>& in,
                                       int64_t added_to_rank) {
  std::vector<int64_t> axes;
  if (opset < 13 || in.size() < 2) {
    axes = NodeAttributes(n).get_ints("axes", {});
  } else {
    if (is_float(in[1]->dtype)) return bad(n, "axes are not integers");
    axes = in[1]->i64;
  }
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size()) +
                       (added_to_rank ? static_cast<int64_t>(axes.size()) : 0);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return bad(n, "axis " + std::to_string(a) + " is out of range");
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return bad(n, "an axis twice");
  return axes;
}

Expected<Tensor> cast(const onnx::NodeProto& n, const Tensor& t) {
  const auto to = dtype_from_onnx(static_cast<int32_t>(NodeAttributes(n).get_int("to", 0)));
  if (!to) return bad(n, "casts to a dtype this front end does not hold");
  Tensor out = Tensor::zeros(*to, t.shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    const auto k = static_cast<size_t>(i);
    if (is_float(*to))
      out.f32[k] = round_float(*to, static_cast<float>(t.at(i)));
    else
      out.i64[k] =
          is_float(t.dtype) ? float_to_integer(*to, t.f32[k]) : wrap_integer(*to, t.i64[k]);
  }
  return out;
}

/// The node's output computed from its constant inputs.
Expected<Tensor> fold(const onnx::NodeProto& n, int64_t opset,
                      const std::vector<const Tensor*>& in) {
  const std::string& op = n.op_type();
  const Tensor& x = *in[0];
  if (op == "Identity") return x;
  if (op == "Cast") return cast(n, x);
  if (op == "Transpose") return transposed(n, x);
  if (op == "Reshape") {
    if (in.size() < 2) return bad(n, "no shape input");
    TT_ASSIGN_OR_RETURN(Shape to, reshape_target(n, x.shape, *in[1]));
    return reshaped(n, x, to);
  }
  if (op == "Flatten") {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = NodeAttributes(n).get_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return bad(n, "axis out of range");
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
    return reshaped(n, x, {outer, outer == 0 ? 0 : x.size() / std::max<int64_t>(outer, 1)});
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (op == "Squeeze") {
    TT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(n, opset, in, false));
    Shape to;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t extent = x.shape[static_cast<size_t>(d)];
      const bool listed = std::binary_search(axes.begin(), axes.end(), d);
      if (listed && extent != 1)
        return bad(n, "squeezes axis " + std::to_string(d) + " of " + std::to_string(extent));
      if (!listed && !(axes.empty() && extent == 1)) to.push_back(extent);
    }
    return reshaped(n, x, to);
  }
  // Unsqueeze: the axes index the output.
  TT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(n, opset, in, true));
  Shape to;
  size_t next = 0;
  for (int64_t d = 0; d < rank + static_cast<int64_t>(axes.size()); ++d)
    to.push_back(std::binary_search(axes.begin(), axes.end(), d) ? 1 : x.shape[next++]);
  return reshaped(n, x, to);
}

const std::set<std::string>& foldable() {
  static const std::set<std::string> ops = {"Identity", "Cast",      "Reshape", "Transpose",
                                            "Squeeze",  "Unsqueeze", "Flatten"};
  return ops;
}

}  // namespace

Expected<int> fold_constant_weights(onnx::GraphProto* g, int64_t opset) {
  std::set<std::string> graph_outputs;
  for (const auto& o : g->output()) graph_outputs.insert(o.name());
  std::map<std::string, Tensor> constants;  // initializers read so far, by name
  std::map<std::string, int> initializer_index;
  for (int i = 0; i < g->initializer_size(); ++i) initializer_index[g->initializer(i).name()] = i;
  auto constant = [&](const std::string& name) -> const Tensor* {
    if (auto c = constants.find(name); c != constants.end()) return &c->second;
    auto i = initializer_index.find(name);
    if (i == initializer_index.end()) return nullptr;
    auto t = tensor_from_proto(g->initializer(i->second));
    if (!t) return nullptr;  // a dtype this front end does not hold: left alone
    return &constants.emplace(name, std::move(t).value()).first->second;
  };
  int folded = 0;
  std::set<std::string> made, consumed;  // initializers folding made, and those it read
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  // An Identity of a constant folds to a second name for it, not a copy: readers read the
  // original (whose name the quantized weight then carries).
  std::map<std::string, std::string> alias;
  for (onnx::NodeProto n : g->node()) {
    for (std::string& in : *n.mutable_input())
      if (auto a = alias.find(in); a != alias.end()) in = a->second;
    const bool standard = n.domain().empty() || n.domain() == "ai.onnx";
    if (standard && n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
        !graph_outputs.count(n.output(0)) && constant(n.input(0))) {
      alias[n.output(0)] = n.input(0);
      ++folded;
      continue;
    }
    std::optional<Expected<Tensor>> value;
    if (standard && n.output_size() == 1 && !graph_outputs.count(n.output(0))) {
      if (n.op_type() == "Constant" && n.input_size() == 0) {
        value = constant_value(n);
      } else if (foldable().count(n.op_type()) && n.input_size() >= 1) {
        std::vector<const Tensor*> in;
        for (const std::string& name : n.input())
          if (!name.empty()) in.push_back(constant(name));
        if (std::all_of(in.begin(), in.end(), [](const Tensor* t) { return t != nullptr; }))
          value = fold(n, opset, in);
      }
    }
    if (!value) {
      *kept.Add() = n;
      continue;
    }
    if (!*value) return value->error();
    for (const std::string& in : n.input()) consumed.insert(in);
    made.insert(n.output(0));
    tensor_to_proto(**value, n.output(0), g->add_initializer());
    initializer_index[n.output(0)] = g->initializer_size() - 1;
    constants[n.output(0)] = std::move(**value);
    ++folded;
  }
  g->mutable_node()->Swap(&kept);
  // The folded nodes' inputs that nothing reads any more (a Constant behind a Transpose, a
  // Reshape's shape) leave the file.
  // (Graph inputs too: older exporters list initializers there, and one dropped would become
  // an input the caller must feed.)
  std::set<std::string> read(graph_outputs);
  for (const auto& i : g->input()) read.insert(i.name());
  for (const onnx::NodeProto& n : g->node())
    for (const std::string& in : n.input()) read.insert(in);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  for (auto& init : *g->mutable_initializer())
    if (read.count(init.name()) || (!made.count(init.name()) && !consumed.count(init.name())))
      initializers.Add()->Swap(&init);
  g->mutable_initializer()->Swap(&initializers);
  return folded;
}

}  // namespace tensortune::frontend
