#pragma once
/// \file
/// Built-in models with deterministic random weights: the same name always gives the same
/// graph and the same parameters, on every machine. Batch-norm scales are drawn with both
/// signs (about a quarter negative) so that a pass that mishandles negative scales changes
/// the answer. One input named `data`, NCHW float32; the output is the logits.
#include <string>
#include <vector>

#include "compiler/graph/graph.h"

namespace tensortune::frontend {

/// "resnet-18", "resnet-50", "vgg-16", "mobilenet-v1".
const std::vector<std::string>& zoo_model_names();

/// Builds a zoo model for an input of `input_shape` (N, 3, H, W). Fails naming the model
/// when the name is unknown or the shape does not fit (the classifiers adapt to the input).
Expected<graph::Graph> zoo_model(const std::string& name,
                                 const graph::Shape& input_shape = {1, 3, 224, 224});

}  // namespace tensortune::frontend
