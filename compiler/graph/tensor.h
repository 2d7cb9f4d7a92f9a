#pragma once
/// \file
/// The graph IR's tensors are the one tensor type of support/tensor.h; these names let graph
/// code (and its users) say `graph::Tensor`, `graph::DType`, `graph::Shape`.
#include "support/tensor.h"

namespace tensortune::graph {

using tensortune::broadcast_shapes;
using tensortune::buffer_element_size;
using tensortune::compute_dtype;
using tensortune::DType;
using tensortune::dtype_from_name;
using tensortune::dtype_name;
using tensortune::element_size;
using tensortune::float_from_bytes;
using tensortune::float_to_bytes;
using tensortune::float_to_integer;
using tensortune::is_float;
using tensortune::is_signed_integer;
using tensortune::kAllDTypes;
using tensortune::num_elements;
using tensortune::read_buffer;
using tensortune::round_float;
using tensortune::Shape;
using tensortune::shape_to_string;
using tensortune::strides_of;
using tensortune::Tensor;
using tensortune::tensor_from_storage;
using tensortune::TensorType;
using tensortune::type_string;
using tensortune::wrap_integer;
using tensortune::write_buffer;

}  // namespace tensortune::graph
