// The ONNX importer on models built here: shape arithmetic folds, the zoo round-trips through
// ONNX, and bad files and bad options get clear errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "compiler/frontend/model_zoo.h"
#include "compiler/frontend/onnx_io.h"
#include "compiler/graph/interpreter.h"
#include "tests/compiler/onnx_builder.h"
#include "tests/compiler/onnx_node_tests.h"

namespace tensortune::frontend {
namespace {

namespace fs = std::filesystem;
using graph::OpKind;
using graph::Tensor;

// PyTorch's flatten as exported: Shape -> Gather(0) -> Unsqueeze -> Concat([., -1]) -> Reshape.
TEST(OnnxImport, ShapeArithmeticFoldsOnceInputShapesAreKnown) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {0, 2, 3, 4}, "batch");
  add_ints_initializer(g, "zero", {0});
  add_ints_initializer(g, "minus_one", {-1});
  add_node(g, "Shape", "shape", {"x"}, "s");
  auto* gather = add_node(g, "Gather", "gather", {"s", "zero"}, "n");
  (void)gather;
  add_node(g, "Concat", "concat", {"n", "minus_one"}, "target")->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto_AttributeType_INT);
    a.set_i(0);
    return a;
  }());
  add_node(g, "Reshape", "reshape", {"x", "target"}, "y");
  g->add_output()->set_name("y");
  const std::string path = save(m, "flatten.onnx");

  auto dynamic = import_onnx_file(path);
  ASSERT_FALSE(dynamic);
  EXPECT_NE(dynamic.error().message.find("'batch'"), std::string::npos) << dynamic.error().message;
  EXPECT_NE(dynamic.error().message.find("--input-shape x="), std::string::npos);

  OnnxImportOptions options;
  options.input_shapes["x"] = {3, 2, 3, 4};
  auto imported = import_onnx_file(path, options);
  ASSERT_TRUE(imported) << imported.error().message;
  ASSERT_EQ(imported->nodes().size(), 1u);  // only the reshape is left
  EXPECT_EQ(imported->nodes()[0].op, OpKind::kReshape);
  EXPECT_EQ(imported->type(imported->outputs()[0]).shape, (graph::Shape{3, 24}));

  options.input_shapes = {{"data", {1, 2, 3, 4}}};
  auto wrong_name = import_onnx_file(path, options);
  ASSERT_FALSE(wrong_name);
  EXPECT_NE(wrong_name.error().message.find("'data', which is not an input"), std::string::npos)
      << wrong_name.error().message;
  fs::remove(path);
}

TEST(OnnxImport, UnsupportedOperatorIsNamedWithItsNode) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3, 8, 8});
  add_node(g, "NonMaxSuppression", "nms_3", {"x"}, "y");
  g->add_output()->set_name("y");
  const std::string path = save(m, "nms.onnx");
  auto r = import_onnx_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnimplemented);
  EXPECT_NE(
      r.error().message.find("unsupported operator 'NonMaxSuppression' (node 'nms_3', opset 13)"),
      std::string::npos)
      << r.error().message;
  fs::remove(path);
}

// A supported operator with an attribute value we do not support: one error naming the node,
// the operator, the opset and the attribute.
TEST(OnnxImport, UnsupportedAttributeIsNamedWithNodeOpAndOpset) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3, 8, 8});
  auto* pads = g->add_initializer();
  pads->set_name("pads");
  pads->set_data_type(onnx::TensorProto_DataType_INT64);
  pads->add_dims(8);
  for (int i = 0; i < 8; ++i) pads->add_int64_data(1);
  auto* n = g->add_node();
  n->set_op_type("Pad");
  n->set_name("pad_7");
  n->add_input("x");
  n->add_input("pads");
  n->add_output("y");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto_AttributeType_STRING);
  mode->set_s("wrap");
  g->add_output()->set_name("y");
  const std::string path = save(m, "pad_wrap.onnx");
  auto r = import_onnx_file(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnimplemented);
  for (const char* part : {"(opset 13)", "node 'pad_7' (Pad)", "mode='wrap'"})
    EXPECT_NE(r.error().message.find(part), std::string::npos) << part << ": " << r.error().message;
  fs::remove(path);
}

TEST(OnnxImport, ShapeThatDoesNotInferIsNamed) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3, 8, 8});
  add_input(g, "w", {4, 5, 3, 3});
  add_node(g, "Conv", "conv_bad", {"x", "w"}, "y");
  g->add_output()->set_name("y");
  const std::string path = save(m, "badconv.onnx");
  auto r = import_onnx_file(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("node 'conv_bad'"), std::string::npos) << r.error().message;
  fs::remove(path);
}

TEST(OnnxImport, NotOnnxAndTruncatedFilesAreRefused) {
  const std::string text = temp_path("text.onnx");
  std::ofstream(text) << "this is not a model\n";
  auto r = import_onnx_file(text);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;

  auto zoo = zoo_model("mobilenet-v1");
  ASSERT_TRUE(zoo);
  const std::string full = temp_path("mobilenet.onnx");
  ASSERT_TRUE(export_onnx(*zoo, full));
  std::ifstream in(full, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t cut : {bytes.size() / 2, bytes.size() - 7, size_t{100}, size_t{0}}) {
    auto t = import_onnx_bytes(bytes.substr(0, cut), "truncated.onnx");
    ASSERT_FALSE(t) << "cut at " << cut;
    EXPECT_NE(t.error().message.find("truncated.onnx"), std::string::npos) << t.error().message;
  }
  auto missing = import_onnx_file(temp_path("does_not_exist.onnx"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  fs::remove(text);
  fs::remove(full);
}

// A model over a limit is refused with the limit and its flag named; at the limit it imports.
TEST(OnnxImport, ModelsOverTheirLimitsAreRefusedNamingTheLimit) {
  auto zoo = zoo_model("mobilenet-v1", {1, 3, 32, 32});
  ASSERT_TRUE(zoo);
  const std::string path = temp_path("limits.onnx");
  ASSERT_TRUE(export_onnx(*zoo, path));
  const int64_t size = static_cast<int64_t>(fs::file_size(path));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  struct Case {
    OnnxLimits limits;
    std::string message;
  };
  OnnxLimits small_file, few_nodes, few_weights;
  small_file.max_model_bytes = size - 1;
  few_nodes.max_nodes = 3;
  few_weights.max_initializers = 2;
  const std::vector<Case> cases = {
      {small_file, std::to_string(size) + " bytes, more than the limit of " +
                       std::to_string(size - 1) + " (--max-model-bytes)"},
      {few_nodes, "nodes, more than the limit of 3 (--max-onnx-nodes)"},
      {few_weights, "initializers, more than the limit of 2 (--max-initializers)"}};
  for (const Case& c : cases) {
    OnnxImportOptions options;
    options.limits = c.limits;
    auto from_file = import_onnx_file(path, options);
    ASSERT_FALSE(from_file) << c.message;
    EXPECT_EQ(from_file.error().code, ErrorCode::kOutOfRange);
    EXPECT_NE(from_file.error().message.find(c.message), std::string::npos)
        << from_file.error().message;
    auto from_bytes = import_onnx_bytes(bytes, "limits.onnx", options);
    ASSERT_FALSE(from_bytes);
    EXPECT_NE(from_bytes.error().message.find(c.message), std::string::npos)
        << from_bytes.error().message;
  }
  OnnxImportOptions exact;
  exact.limits.max_model_bytes = size;
  EXPECT_TRUE(import_onnx_file(path, exact));
  fs::remove(path);
}

// Corrupted bytes anywhere in a real model: the importer answers with an error or a graph,
// never a crash, a hang or a huge allocation.
TEST(OnnxImport, RandomlyCorruptedModelsNeverCrashTheImporter) {
  auto zoo = zoo_model("mobilenet-v1", {1, 3, 32, 32});
  ASSERT_TRUE(zoo);
  const std::string path = temp_path("fuzz.onnx");
  ASSERT_TRUE(export_onnx(*zoo, path));
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  fs::remove(path);
  // Protobuf writes fields in number order, so the nodes (field 1) come first and the
  // initializers (field 5) after them: aim a third of the trials at the first 4 KiB (the
  // graph's structure), a third anywhere, a third at the end (weights and graph inputs).
  std::mt19937_64 rng(1234);
  int imported = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      const size_t n = mutated.size();
      const size_t at = trial % 3 == 0   ? rng() % std::min<size_t>(n, 4096)
                        : trial % 3 == 1 ? rng() % n
                                         : n - 1 - rng() % std::min<size_t>(n, 20000);
      mutated[at] = static_cast<char>(rng());
    }
    auto g = import_onnx_bytes(mutated, "fuzz.onnx");
    (g ? imported : refused)++;
  }
  std::cout << "corrupted models: " << imported << " imported, " << refused
            << " refused with an error\n";
  EXPECT_EQ(imported + refused, 300);
  EXPECT_GT(refused, 0);
}

// LpNormalization against the formula, p = 1 and 2, along the last axis and the first.
TEST(OnnxImport, LpNormalizationDividesByTheNormAlongItsAxis) {
  const std::vector<float> x = {3, -4, 0, 1, 2, -2};  // [2, 3]
  for (int64_t p : {1, 2})
    for (int64_t axis : {-1, 0}) {
      auto m = model_with_opset(13);
      auto* g = m.mutable_graph();
      add_input(g, "x", {2, 3});
      auto* n = add_node(g, "LpNormalization", "lp", {"x"}, "y");
      *n->add_attribute() = int_attr("p", p);
      *n->add_attribute() = int_attr("axis", axis);
      g->add_output()->set_name("y");
      const std::string path = save(m, "lp.onnx");
      auto imported = import_onnx_file(path);
      fs::remove(path);
      ASSERT_TRUE(imported) << imported.error().message;
      auto y = graph::interpret(*imported, {{"x", Tensor::from_floats({2, 3}, x)}});
      ASSERT_TRUE(y) << y.error().message;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) {
          double norm = 0;
          for (int k = 0; k < (axis == 0 ? 2 : 3); ++k) {
            const float v = axis == 0 ? x[k * 3 + j] : x[i * 3 + k];
            norm += p == 1 ? std::fabs(v) : double(v) * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          EXPECT_NEAR((*y)[0].f32[i * 3 + j], x[i * 3 + j] / norm, 1e-6)
              << "p=" << p << " axis=" << axis << " at " << i << "," << j;
        }
    }
}

// QuantizeLinear as ONNX defines it, on values chosen for its corners: halves round to even,
// the zero point is added after rounding, results saturate; per-axis scales run along the axis.
TEST(OnnxImport, QuantizeLinearRoundsHalfToEvenAndSaturatesPerAxis) {
  auto m = model_with_opset(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 2, 4});
  add_initializer(g, "s", onnx::TensorProto_DataType_FLOAT, {2}, {1.0, 0.5});
  add_initializer(g, "zp", onnx::TensorProto_DataType_INT8, {2}, {0, -3});
  auto* n = add_node(g, "QuantizeLinear", "q", {"x", "s", "zp"}, "y");
  *n->add_attribute() = int_attr("axis", 1);
  g->add_output()->set_name("y");
  const std::string path = save(m, "quantize.onnx");
  auto imported = import_onnx_file(path);
  fs::remove(path);
  ASSERT_TRUE(imported) << imported.error().message;
  const std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, 1.25f, -100.0f, 70.0f, -0.75f};
  auto y = graph::interpret(*imported, {{"x", Tensor::from_floats({1, 2, 4}, x)}});
  ASSERT_TRUE(y) << y.error().message;
  ASSERT_EQ((*y)[0].dtype, graph::DType::kInt8);
  // Channel 0: x / 1 rounded half to even. Channel 1: x / 0.5 = 2.5, -200, 140, -1.5, rounded
  // to 2, -200, 140, -2, minus 3, saturated to [-128, 127].
  const std::vector<double> want = {0, 2, 2, 0, -1, -128, 127, -5};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ((*y)[0].at(int64_t(i)), want[i]) << i;
}

// Bad quantization parameters are refused at import, naming the node and the field.
TEST(OnnxImport, BadQuantizationParametersAreRefusedNamingNodeAndField) {
  struct Case {
    std::vector<int64_t> scale_dims;
    std::vector<double> scale;
    int zp_type;
    std::vector<double> zp;
    std::string want;
  };
  const int f = onnx::TensorProto_DataType_FLOAT, u8 = onnx::TensorProto_DataType_UINT8,
            i16 = onnx::TensorProto_DataType_INT16;
  for (const Case& c :
       {Case{{}, {0.0}, u8, {0}, "y_scale [0] = 0.000000: a scale must be positive"},
        Case{{2},
             {1.0, 1.0},
             u8,
             {0},
             "y_scale has 2 values, but axis 1 of the operand [1x3x4] has 3"},
        Case{{}, {1.0}, i16, {0}, "y_zero_point must be int8 or uint8, got int16"},
        Case{{}, {-2.0}, u8, {0}, "a scale must be positive"}}) {
    auto m = model_with_opset(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3, 4});
    add_initializer(g, "s", f, c.scale_dims, c.scale);
    add_initializer(g, "zp", c.zp_type, {}, c.zp);
    add_node(g, "QuantizeLinear", "quant_7", {"x", "s", "zp"}, "y");
    g->add_output()->set_name("y");
    const std::string path = save(m, "bad_quantize.onnx");
    auto imported = import_onnx_file(path);
    fs::remove(path);
    ASSERT_FALSE(imported) << c.want;
    EXPECT_NE(imported.error().message.find("node 'quant_7' (QuantizeLinear)"), std::string::npos)
        << imported.error().message;
    EXPECT_NE(imported.error().message.find(c.want), std::string::npos) << imported.error().message;
  }
}

// A Loop is unrolled when its trip count is known at import; one whose count is an input of
// the model is refused with the node named, never run wrong.
TEST(OnnxImport, LoopsUnrollWhenTheirCountIsKnownAndAreRefusedOtherwise) {
  auto loop_model = [](bool count_is_input) {
    auto m = model_with_opset(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {2});
    if (count_is_input) {
      auto* in = g->add_input();
      in->set_name("count");
      in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_INT64);
      in->mutable_type()->mutable_tensor_type()->mutable_shape();
    } else {
      auto* t = g->add_initializer();
      t->set_name("count");
      t->set_data_type(onnx::TensorProto_DataType_INT64);
      t->add_int64_data(3);
    }
    // body(i, cond, acc): acc + x, and acc as a scan output.
    auto* loop = add_node(g, "Loop", "accumulate", {"count", "", "x"}, "total");
    loop->add_output("partials");
    auto* body_attr = loop->add_attribute();
    body_attr->set_name("body");
    body_attr->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    auto* body = body_attr->mutable_g();
    body->set_name("body");
    for (const char* name : {"i", "cond", "acc"}) body->add_input()->set_name(name);
    add_node(body, "Identity", "keep", {"cond"}, "cond_out");
    add_node(body, "Add", "step", {"acc", "x"}, "next");
    add_node(body, "Identity", "record", {"acc"}, "partial");
    for (const char* name : {"cond_out", "next", "partial"}) body->add_output()->set_name(name);
    g->add_output()->set_name("total");
    g->add_output()->set_name("partials");
    return m;
  };
  const std::string path = save(loop_model(false), "loop.onnx");
  auto imported = import_onnx_file(path);
  fs::remove(path);
  ASSERT_TRUE(imported) << imported.error().message;
  auto y = graph::interpret(*imported, {{"x", Tensor::from_floats({2}, {1.5f, -2})}});
  ASSERT_TRUE(y) << y.error().message;
  EXPECT_EQ((*y)[0].f32, (std::vector<float>{6, -8}));  // x + 3 x
  EXPECT_EQ((*y)[1].shape, (graph::Shape{3, 2}));
  EXPECT_EQ((*y)[1].f32, (std::vector<float>{1.5f, -2, 3, -4, 4.5f, -6}));

  const std::string dynamic = save(loop_model(true), "loop_dynamic.onnx");
  OnnxImportOptions options;
  options.input_shapes["count"] = {};
  auto refused = import_onnx_file(dynamic, options);
  fs::remove(dynamic);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kUnimplemented);
  EXPECT_NE(refused.error().message.find("node 'accumulate' (Loop)"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("trip count depends on the model's inputs"),
            std::string::npos)
      << refused.error().message;
}

// The corruption test above on the ONNX node-test models of this operators and dtypes
// (indexing, N-D pooling and ConvTranspose, integer ops, Loop, float16): every mutated file
// imports or is refused, never crashes.
TEST(OnnxImport, CorruptedModelsOfTheNewerOperatorsNeverCrashTheImporter) {
  const std::vector<std::string> tests = {"test_gathernd_example_int32_batch_dim1",
                                          "test_scatternd_multiply",
                                          "test_top_k",
                                          "test_maxpool_3d_default",
                                          "test_convtranspose_3d",
                                          "test_convinteger_with_padding",
                                          "test_matmulinteger",
                                          "test_range_float_type_positive_delta_expanded",
                                          "test_cast_FLOAT16_to_FLOAT",
                                          "test_resize_tf_crop_and_resize",
                                          "test_maxpool_with_argmax_2d_precomputed_strides",
                                          "test_averagepool_1d_default"};
  std::mt19937_64 rng(99);
  int imported = 0, refused = 0, models = 0;
  for (const auto& t : tests) {
    const std::string path = testing::onnx_node_test_dir() + "/" + t + "/model.onnx";
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    ++models;
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    for (int trial = 0; trial < 40; ++trial) {
      std::string mutated = bytes;
      for (int f = 1 + static_cast<int>(rng() % 4); f > 0; --f)
        mutated[rng() % mutated.size()] = static_cast<char>(rng());
      auto g = import_onnx_bytes(mutated, t);
      (g ? imported : refused)++;
    }
  }
  if (models == 0) GTEST_SKIP() << "no ONNX node tests at " << testing::onnx_node_test_dir();
  std::cout << models << " models, corrupted: " << imported << " imported, " << refused
            << " refused with an error\n";
  EXPECT_EQ(imported + refused, 40 * models);
  EXPECT_GT(refused, 0);
}

TEST(OnnxImport, ZooModelRoundTripsThroughOnnx) {
  for (const std::string name : {"resnet-18", "mobilenet-v1"}) {
    auto zoo = zoo_model(name);
    ASSERT_TRUE(zoo);
    const std::string path = temp_path(name + ".onnx");
    ASSERT_TRUE(export_onnx(*zoo, path));
    auto back = import_onnx_file(path);
    ASSERT_TRUE(back) << back.error().message;
    Tensor x = Tensor::zeros({1, 3, 224, 224});
    fill_uniform(x, 3);
    const std::map<std::string, Tensor> in{{"data", x}};
    auto a = graph::interpret(*zoo, in);
    auto b = graph::interpret(*back, in);
    ASSERT_TRUE(a && b);
    EXPECT_EQ((*a)[0].f32, (*b)[0].f32) << name;
    fs::remove(path);
  }
}

TEST(OnnxImport, ExportRefusesLayoutSpecificOperators) {
  graph::Graph g;
  auto x = g.add_input("x", {graph::DType::kFloat32, {1, 16, 2, 2}});
  g.add_output(*g.add_node(OpKind::kLayoutTransform, "lt", {x},
                           graph::Attrs{{"from_block", int64_t{0}}, {"to_block", int64_t{8}}}));
  auto s = export_onnx(g, temp_path("lt.onnx"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("layout_transform"), std::string::npos);
}

}  // namespace
}  // namespace tensortune::frontend
