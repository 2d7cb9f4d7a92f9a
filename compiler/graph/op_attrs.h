#pragma once
/// \file
/// Typed attributes of every operator, each default written here and nowhere else. A node
/// stores its attributes as named values (`Attrs`, what the printer shows and artifacts carry);
/// everyone who reads them (shape inference, the interpreter, passes, lowering, ONNX export)
/// reads the typed struct of the node's operator:
///
///   const auto a = attrs_as<ClipAttrs>(node.attrs);   // a.min, a.max; absent -> default
///
/// and builders may write one (`to_attrs(ClipAttrs{0, 6})`). Which struct an operator takes is
/// ops.def's third column; shape inference refuses attributes the struct does not have and
/// values of the wrong type, so a misspelt attribute is an error, not a silent default.
///
/// A struct lists its fields once, in `fields(f)`: f(name, member) for each.
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/graph/op.h"
#include "support/error.h"

namespace tensortune::graph {

using Ints = std::vector<int64_t>;

struct NoAttrs {
  template <class F>
  void fields(F&&) {}
};

/// conv2d: data NCHW, weight OIHW (I = C/groups); pads = (top, left, bottom, right).
struct Conv2dAttrs {
  Ints strides{1, 1};
  Ints pads{0, 0, 0, 0};
  Ints dilations{1, 1};
  int64_t groups = 1;
  template <class F>
  void fields(F&& f) {
    f("strides", strides);
    f("pads", pads);
    f("dilations", dilations);
    f("groups", groups);
  }
};

/// conv2d_nchwc: conv2d's attributes and the data/output channel blocks (0: not set).
struct Conv2dNCHWcAttrs : Conv2dAttrs {
  int64_t ic_bn = 0, oc_bn = 0;
  template <class F>
  void fields(F&& f) {
    Conv2dAttrs::fields(f);
    f("ic_bn", ic_bn);
    f("oc_bn", oc_bn);
  }
};

/// Operators with one axis attribute, which differ only in its default: bias_add 1, flatten 1,
/// concat 0, gather 0, softmax -1 (ONNX's defaults).
template <int64_t kDefaultAxis>
struct OneAxisAttrs {
  int64_t axis = kDefaultAxis;
  template <class F>
  void fields(F&& f) {
    f("axis", axis);
  }
};
using BiasAddAttrs = OneAxisAttrs<1>;
using FlattenAttrs = OneAxisAttrs<1>;
using ConcatAttrs = OneAxisAttrs<0>;
using GatherAttrs = OneAxisAttrs<0>;
using SoftmaxAttrs = OneAxisAttrs<-1>;

struct BatchNormAttrs {
  double epsilon = 1e-5;
  template <class F>
  void fields(F&& f) {
    f("epsilon", epsilon);
  }
};

struct ClipAttrs {
  double min = -INFINITY, max = INFINITY;
  template <class F>
  void fields(F&& f) {
    f("min", min);
    f("max", max);
  }
};

/// max(0, min(1, alpha * x + beta)) (ONNX's defaults).
struct HardSigmoidAttrs {
  double alpha = 0.2, beta = 0.5;
  template <class F>
  void fields(F&& f) {
    f("alpha", alpha);
    f("beta", beta);
  }
};

/// max_pool2d and avg_pool2d; block 0: NCHW, b: NCHW[b]c.
struct Pool2dAttrs {
  Ints kernel;
  Ints strides{1, 1};
  Ints pads{0, 0, 0, 0};
  Ints dilations{1, 1};
  int64_t ceil_mode = 0;
  int64_t count_include_pad = 0;  ///< avg_pool2d
  int64_t block = 0;
  int64_t storage_order = 0;  ///< max_pool2d_indices: 1 numbers column-major (h fastest)
  template <class F>
  void fields(F&& f) {
    f("kernel", kernel);
    f("strides", strides);
    f("pads", pads);
    f("dilations", dilations);
    f("ceil_mode", ceil_mode);
    f("count_include_pad", count_include_pad);
    f("block", block);
    f("storage_order", storage_order);
  }
};

struct GlobalPool2dAttrs {
  int64_t block = 0;
  template <class F>
  void fields(F&& f) {
    f("block", block);
  }
};

/// The target shape, resolved (all positive).
struct ReshapeAttrs {
  Ints shape;
  template <class F>
  void fields(F&& f) {
    f("shape", shape);
  }
};

struct TransposeAttrs {
  Ints perm;
  template <class F>
  void fields(F&& f) {
    f("perm", perm);
  }
};

/// Blocks 0 mean plain NCHW.
struct LayoutTransformAttrs {
  int64_t from_block = 0, to_block = 0;
  template <class F>
  void fields(F&& f) {
    f("from_block", from_block);
    f("to_block", to_block);
  }
};

/// The dims [start, end) of the input's shape; no end: to the last.
struct ShapeAttrs {
  int64_t start = 0;
  std::optional<int64_t> end;
  template <class F>
  void fields(F&& f) {
    f("start", start);
    f("end", end);
  }
};

/// `to` is a DType's value.
struct CastAttrs {
  int64_t to = 0;
  template <class F>
  void fields(F&& f) {
    f("to", to);
  }
};

/// Resolved: axes non-negative, one start, end and step per axis.
struct SliceAttrs {
  Ints starts, ends, axes, steps;
  template <class F>
  void fields(F&& f) {
    f("starts", starts);
    f("ends", ends);
    f("axes", axes);
    f("steps", steps);
  }
};

/// unsqueeze and squeeze (squeeze with no axes drops every dim of size 1).
struct AxesAttrs {
  Ints axes;
  template <class F>
  void fields(F&& f) {
    f("axes", axes);
  }
};

/// conv2d_transpose: data NCHW, weight (C, OC/groups, KH, KW); pads (top, left, bottom, right)
/// resolved (may be negative: the output grows); output_padding adds rows and columns at the end.
/// conv2d_transpose (ONNX's ConvTranspose): weight [C, OC/groups, k...]. In 2-D, and also 1-D
/// and 3-D (then strides, dilations and output_padding hold 1 or 3 values, pads 2 or 6).
struct Conv2dTransposeAttrs : Conv2dAttrs {
  Ints output_padding{0, 0};
  template <class F>
  void fields(F&& f) {
    Conv2dAttrs::fields(f);
    f("output_padding", output_padding);
  }
};

/// ONNX's Resize, resolved: the output shape and, per axis, the float32 scale its coordinate
/// transformation divides by (as the float's bits: attributes hold no float lists). mode 0:
/// nearest, 1: linear, 2: cubic. coord 0: half_pixel, 1: asymmetric, 2: align_corners,
/// 3: pytorch_half_pixel, 4: tf_half_pixel_for_nn, 5: tf_crop_and_resize (which reads the
/// region `roi_bits`, every axis's start then every axis's end as float bits, and gives
/// `extrapolation_value` where it reaches outside the input). nearest 0: round_prefer_floor,
/// 1: round_prefer_ceil, 2: floor, 3: ceil.
struct ResizeAttrs {
  Ints sizes, scale_bits, roi_bits;
  int64_t mode = 0, coord = 0, nearest = 0, exclude_outside = 0;
  double cubic_coeff_a = -0.75, extrapolation_value = 0;
  template <class F>
  void fields(F&& f) {
    f("sizes", sizes);
    f("scale_bits", scale_bits);
    f("mode", mode);
    f("coord", coord);
    f("nearest", nearest);
    f("exclude_outside", exclude_outside);
    f("cubic_coeff_a", cubic_coeff_a);
    f("roi_bits", roi_bits);
    f("extrapolation_value", extrapolation_value);
  }
};

/// x < 0 ? alpha * x : x.
struct LeakyReluAttrs {
  double alpha = 0.01;
  template <class F>
  void fields(F&& f) {
    f("alpha", alpha);
  }
};

/// x < 0 ? alpha * (exp(x) - 1) : x.
struct EluAttrs {
  double alpha = 1.0;
  template <class F>
  void fields(F&& f) {
    f("alpha", alpha);
  }
};

/// gamma * (x <= 0 ? alpha * (exp(x) - 1) : x) (ONNX's defaults).
struct SeluAttrs {
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  template <class F>
  void fields(F&& f) {
    f("alpha", alpha);
    f("gamma", gamma);
  }
};

/// ONNX's Mod: fmod 0, the remainder takes the divisor's sign (Python's %, integers only in
/// ONNX); 1, the dividend's (C's fmod).
struct ModAttrs {
  int64_t fmod = 0;
  template <class F>
  void fields(F&& f) {
    f("fmod", fmod);
  }
};

/// tanh 0: x * Phi(x) with erf; 1: the tanh approximation (ONNX's approximate="tanh").
struct GeluAttrs {
  int64_t tanh = 0;
  template <class F>
  void fields(F&& f) {
    f("tanh", tanh);
  }
};

/// Resolved: the reduced axes, non-negative, sorted, at least one.
struct ReduceAttrs {
  Ints axes;
  int64_t keepdims = 1;
  template <class F>
  void fields(F&& f) {
    f("axes", axes);
    f("keepdims", keepdims);
  }
};

/// argmax / argmin: the index along `axis` (first of equal values unless select_last_index).
struct ArgReduceAttrs {
  int64_t axis = 0, keepdims = 1, select_last_index = 0;
  template <class F>
  void fields(F&& f) {
    f("axis", axis);
    f("keepdims", keepdims);
    f("select_last_index", select_last_index);
  }
};

/// pads: every axis's begin counts, then every axis's end counts (ONNX's order; negative
/// crops). mode 0: constant `value`, 1: reflect (without the edge), 2: edge.
struct PadAttrs {
  Ints pads;
  int64_t mode = 0;
  double value = 0;
  template <class F>
  void fields(F&& f) {
    f("pads", pads);
    f("mode", mode);
    f("value", value);
  }
};

/// The copies along each axis.
struct TileAttrs {
  Ints repeats;
  template <class F>
  void fields(F&& f) {
    f("repeats", repeats);
  }
};

/// Normalised over the axes [axis, rank); scale and bias broadcast to them.
struct LayerNormAttrs {
  int64_t axis = -1;
  double epsilon = 1e-5;
  template <class F>
  void fields(F&& f) {
    f("axis", axis);
    f("epsilon", epsilon);
  }
};

/// attention(q [..., M, K], k [..., K, N], v [..., N, Dv][, mask broadcasting to [..., M, N]]):
/// softmax(scale * q k + mask) v, the softmax over the N keys.
struct AttentionAttrs {
  double scale = 1.0;
  template <class F>
  void fields(F&& f) {
    f("scale", scale);
  }
};

/// gather_nd: the leading `batch_dims` axes of data and indices are matched, not indexed.
struct GatherNDAttrs {
  int64_t batch_dims = 0;
  template <class F>
  void fields(F&& f) {
    f("batch_dims", batch_dims);
  }
};

/// scatter_nd: reduction 0 replaces, 1 adds, 2 multiplies (ONNX's none, add, mul).
struct ScatterNDAttrs {
  int64_t reduction = 0;
  template <class F>
  void fields(F&& f) {
    f("reduction", reduction);
  }
};

/// top_k_indices: the indices of the k largest (or smallest) values along `axis`, in order of
/// value, equal values by lower index first (ONNX's TopK; its values are a gather_elements of
/// these indices).
struct TopKAttrs {
  int64_t k = 1, axis = -1, largest = 1;
  template <class F>
  void fields(F&& f) {
    f("k", k);
    f("axis", axis);
    f("largest", largest);
  }
};

namespace detail {
inline void read_field(const Attrs& a, const char* name, int64_t& v) { v = a.get_int(name, v); }
inline void read_field(const Attrs& a, const char* name, double& v) { v = a.get_float(name, v); }
inline void read_field(const Attrs& a, const char* name, Ints& v) {
  if (a.has(name)) v = a.get_ints(name, v);
}
inline void read_field(const Attrs& a, const char* name, std::optional<int64_t>& v) {
  if (a.has(name)) v = a.get_int(name, 0);
}
inline void write_field(Attrs& a, const char* name, int64_t v) { a.set(name, v); }
inline void write_field(Attrs& a, const char* name, double v) { a.set(name, v); }
inline void write_field(Attrs& a, const char* name, const Ints& v) { a.set(name, v); }
inline void write_field(Attrs& a, const char* name, const std::optional<int64_t>& v) {
  if (v) a.set(name, *v);
}
}  // namespace detail

/// The typed attributes: every field present in `attrs` is read, every other keeps its default.
template <class T>
T attrs_as(const Attrs& attrs) {
  T t;
  t.fields([&](const char* name, auto& field) { detail::read_field(attrs, name, field); });
  return t;
}

/// Every field of `t` as a named value (an unset optional is left out).
template <class T>
Attrs to_attrs(T t) {
  Attrs a;
  t.fields([&](const char* name, auto& field) { detail::write_field(a, name, field); });
  return a;
}

/// Every attribute names a field of the operator's struct and has its type (an integer where
/// the field is one, a number where it is a float, a list of integers where it is a list).
/// The error names the attribute, the value's type and the fields the operator takes.
Status validate_attrs(OpKind op, const Attrs& attrs);

}  // namespace tensortune::graph
