#pragma once
/// \file
/// Builds small ONNX models in tests: inputs, nodes, initializers, attributes, and a saved file
/// for the importer.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tensortune::frontend {

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("tt_onnx_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

inline void add_input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                      const std::string& dim_param = "") {
  auto* in = g->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  if (!dim_param.empty()) tt->mutable_shape()->mutable_dim(0)->set_dim_param(dim_param);
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 const std::string& name, std::vector<std::string> inputs,
                                 std::string output) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  n->add_output(output);
  return n;
}

inline void add_ints_initializer(onnx::GraphProto* g, const std::string& name,
                                 std::vector<int64_t> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

inline std::string save(const onnx::ModelProto& m, const std::string& name) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

inline onnx::ModelProto model_with_opset(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(opset);
  return m;
}

inline onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto_AttributeType_INT);
  a.set_i(v);
  return a;
}

// An initializer of `type` (FLOAT, UINT8, INT8, INT16) holding `values`.
inline void add_initializer(onnx::GraphProto* g, const std::string& name, int type,
                            std::vector<int64_t> dims, const std::vector<double>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    if (type == onnx::TensorProto_DataType_FLOAT)
      t->add_float_data(static_cast<float>(v));
    else
      t->add_int32_data(static_cast<int32_t>(v));  // ONNX keeps 8- and 16-bit ints here
  }
}

}  // namespace tensortune::frontend
