#pragma once
/// \file
/// Reading and writing numpy .npy files (format versions 1.0 to 3.0), C order only.
/// float32 and float64 arrays are read (float64 is narrowed to float32); float32 and int64
/// tensors are written as they are ('<f4', '<i8').

#include <string>

#include "support/error.h"
#include "support/tensor.h"

namespace tensortune {

/// Fails with a message naming the file and the problem: missing magic, truncated header or
/// data, Fortran order, an unsupported dtype.
Expected<Tensor> read_npy(const std::string& path);

/// Parses .npy bytes already in memory; `what` names the source in messages.
Expected<Tensor> parse_npy(const std::string& bytes, const std::string& what);

Status write_npy(const std::string& path, const Tensor& array);
std::string serialize_npy(const Tensor& array);

}  // namespace tensortune
