#include "compiler/frontend/model_zoo.h"

#include <cmath>
#include <functional>

namespace tensortune::frontend {
namespace {

using graph::Attrs;
using graph::Graph;
using graph::OpKind;
using graph::Shape;
using graph::Tensor;
using graph::ValueId;

// Builds a network layer by layer. The first shape error is kept and every later call
// becomes a no-op, so a model function reads as a plain list of layers.
class ZooBuilder {
 public:
  ZooBuilder(const std::string& model, const Shape& input_shape)
      : graph_(model), seed_(std::hash<std::string>{}(model)&0xffffffffu) {
    data_ = graph_.add_input("data", {graph::DType::kFloat32, input_shape});
    if (input_shape.size() != 4 || input_shape[1] != 3)
      status_ =
          invalid_argument("input shape [" + shape_to_string(input_shape) + "] must be Nx3xHxW");
  }

  ValueId data() const { return data_; }

  ValueId conv(ValueId x, const std::string& name, int64_t out_channels, int64_t kernel,
               int64_t stride, int64_t pad, int64_t groups = 1) {
    if (!status_) return x;
    const int64_t in_channels = graph_.type(x).shape[1];
    const int64_t fan_in = in_channels / groups * kernel * kernel;
    const float bound = std::sqrt(6.0f / static_cast<float>(fan_in));
    ValueId w = graph_.add_constant(
        name + ".weight",
        uniform({out_channels, in_channels / groups, kernel, kernel}, -bound, bound));
    return node(OpKind::kConv2d, name, {x, w},
                Attrs{{"strides", std::vector<int64_t>{stride, stride}},
                      {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                      {"dilations", std::vector<int64_t>{1, 1}},
                      {"groups", groups}});
  }

  ValueId depthwise_conv(ValueId x, const std::string& name, int64_t kernel, int64_t stride,
                         int64_t pad) {
    if (!status_) return x;
    const int64_t channels = graph_.type(x).shape[1];
    return conv(x, name, channels, kernel, stride, pad, channels);
  }

  // Inference batch norm with scales of both signs.
  ValueId batch_norm(ValueId x, const std::string& name) {
    if (!status_) return x;
    const int64_t c = graph_.type(x).shape[1];
    Tensor gamma = uniform({c}, 0.5f, 1.5f);
    const Tensor sign = uniform({c}, 0.0f, 1.0f);
    for (int64_t i = 0; i < c; ++i)
      if (sign.f32[i] < 0.25f) gamma.f32[i] = -gamma.f32[i];
    ValueId g = graph_.add_constant(name + ".gamma", std::move(gamma));
    ValueId b = graph_.add_constant(name + ".beta", uniform({c}, -0.2f, 0.2f));
    ValueId m = graph_.add_constant(name + ".mean", uniform({c}, -0.2f, 0.2f));
    ValueId v = graph_.add_constant(name + ".var", uniform({c}, 0.5f, 2.0f));
    return node(OpKind::kBatchNorm, name, {x, g, b, m, v}, Attrs{{"epsilon", 1e-5}});
  }

  ValueId relu(ValueId x, const std::string& name) { return node(OpKind::kRelu, name, {x}); }
  ValueId relu6(ValueId x, const std::string& name) {
    return node(OpKind::kClip, name, {x}, Attrs{{"min", 0.0}, {"max", 6.0}});
  }
  ValueId add(ValueId a, ValueId b, const std::string& name) {
    return node(OpKind::kAdd, name, {a, b});
  }
  ValueId max_pool(ValueId x, const std::string& name, int64_t kernel, int64_t stride,
                   int64_t pad) {
    return node(OpKind::kMaxPool2d, name, {x},
                Attrs{{"kernel", std::vector<int64_t>{kernel, kernel}},
                      {"strides", std::vector<int64_t>{stride, stride}},
                      {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                      {"dilations", std::vector<int64_t>{1, 1}}});
  }
  ValueId global_pool_flatten(ValueId x) {
    x = node(OpKind::kGlobalAvgPool2d, "global_pool", {x});
    return node(OpKind::kFlatten, "flatten", {x}, Attrs{{"axis", int64_t{1}}});
  }
  ValueId flatten(ValueId x) {
    return node(OpKind::kFlatten, "flatten", {x}, Attrs{{"axis", int64_t{1}}});
  }
  ValueId dense(ValueId x, const std::string& name, int64_t units) {
    if (!status_) return x;
    const int64_t in = graph_.type(x).shape.back();
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    ValueId w = graph_.add_constant(name + ".weight", uniform({units, in}, -bound, bound));
    ValueId b = graph_.add_constant(name + ".bias", uniform({units}, -bound, bound));
    x = node(OpKind::kDense, name, {x, w});
    return node(OpKind::kBiasAdd, name + ".bias_add", {x, b}, Attrs{{"axis", int64_t{1}}});
  }

  Expected<Graph> finish(ValueId out) {
    if (!status_) return status_.error().with_context("building " + graph_.name());
    graph_.add_output(out);
    return std::move(graph_);
  }

 private:
  ValueId node(OpKind op, const std::string& name, std::vector<ValueId> inputs, Attrs attrs = {}) {
    if (!status_) return inputs[0];
    auto id = graph_.add_node(op, name, std::move(inputs), std::move(attrs));
    if (!id) {
      status_ = id.error();
      return data_;
    }
    return *id;
  }

  Tensor uniform(Shape shape, float lo, float hi) {
    Tensor a = Tensor::zeros(std::move(shape));
    fill_uniform(a, seed_ + 7919 * ++counter_, lo, hi);
    return a;
  }

  Graph graph_;
  uint64_t seed_;
  uint64_t counter_ = 0;
  ValueId data_;
  Status status_;
};

ValueId conv_bn_relu(ZooBuilder& b, ValueId x, const std::string& name, int64_t channels,
                     int64_t kernel, int64_t stride, int64_t pad, bool relu = true) {
  x = b.conv(x, name + ".conv", channels, kernel, stride, pad);
  x = b.batch_norm(x, name + ".bn");
  return relu ? b.relu(x, name + ".relu") : x;
}

Expected<Graph> resnet(const std::string& name, const Shape& shape, bool bottleneck,
                       const std::vector<int>& blocks) {
  ZooBuilder b(name, shape);
  ValueId x = conv_bn_relu(b, b.data(), "stem", 64, 7, 2, 3);
  x = b.max_pool(x, "stem.pool", 3, 2, 1);
  int64_t in_channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = 64 << stage;
    const int64_t out_channels = bottleneck ? width * 4 : width;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      ValueId shortcut = x;
      if (stride != 1 || in_channels != out_channels)
        shortcut = conv_bn_relu(b, x, p + ".downsample", out_channels, 1, stride, 0, false);
      ValueId y;
      if (bottleneck) {
        y = conv_bn_relu(b, x, p + ".1", width, 1, 1, 0);
        y = conv_bn_relu(b, y, p + ".2", width, 3, stride, 1);
        y = conv_bn_relu(b, y, p + ".3", out_channels, 1, 1, 0, false);
      } else {
        y = conv_bn_relu(b, x, p + ".1", width, 3, stride, 1);
        y = conv_bn_relu(b, y, p + ".2", width, 3, 1, 1, false);
      }
      x = b.relu(b.add(y, shortcut, p + ".add"), p + ".relu");
      in_channels = out_channels;
    }
  }
  x = b.global_pool_flatten(x);
  return b.finish(b.dense(x, "fc", 1000));
}

Expected<Graph> vgg16(const Shape& shape) {
  ZooBuilder b("vgg-16", shape);
  const std::vector<std::vector<int64_t>> stages = {
      {64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  ValueId x = b.data();
  for (size_t s = 0; s < stages.size(); ++s) {
    for (size_t i = 0; i < stages[s].size(); ++i)
      x = conv_bn_relu(b, x, "features." + std::to_string(s + 1) + "." + std::to_string(i),
                       stages[s][i], 3, 1, 1);
    x = b.max_pool(x, "pool" + std::to_string(s + 1), 2, 2, 0);
  }
  x = b.flatten(x);
  x = b.relu(b.dense(x, "fc1", 4096), "fc1.relu");
  x = b.relu(b.dense(x, "fc2", 4096), "fc2.relu");
  return b.finish(b.dense(x, "fc3", 1000));
}

Expected<Graph> mobilenet_v1(const Shape& shape) {
  ZooBuilder b("mobilenet-v1", shape);
  ValueId x =
      b.relu6(b.batch_norm(b.conv(b.data(), "stem.conv", 32, 3, 2, 1), "stem.bn"), "stem.relu6");
  const std::vector<std::pair<int64_t, int64_t>> blocks = {
      {64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
      {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string p = "block" + std::to_string(i + 1);
    x = b.depthwise_conv(x, p + ".dw", 3, blocks[i].second, 1);
    x = b.relu6(b.batch_norm(x, p + ".dw.bn"), p + ".dw.relu6");
    x = b.relu6(b.batch_norm(b.conv(x, p + ".pw", blocks[i].first, 1, 1, 0), p + ".pw.bn"),
                p + ".pw.relu6");
  }
  x = b.global_pool_flatten(x);
  return b.finish(b.dense(x, "fc", 1000));
}

}  // namespace

const std::vector<std::string>& zoo_model_names() {
  static const std::vector<std::string> names = {"resnet-18", "resnet-50", "vgg-16",
                                                 "mobilenet-v1"};
  return names;
}

Expected<Graph> zoo_model(const std::string& name, const Shape& shape) {
  if (name == "resnet-18") return resnet(name, shape, false, {2, 2, 2, 2});
  if (name == "resnet-50") return resnet(name, shape, true, {3, 4, 6, 3});
  if (name == "vgg-16") return vgg16(shape);
  if (name == "mobilenet-v1") return mobilenet_v1(shape);
  std::string known;
  for (const auto& n : zoo_model_names()) known += (known.empty() ? "" : ", ") + n;
  return not_found("unknown model '" + name + "'; the zoo has: " + known);
}

}  // namespace tensortune::frontend
