#pragma once
/// \file
/// Reading and writing numpy .npy files (format versions 1.0 to 3.0), C order only.
/// float32 and float64 arrays are read (float64 is narrowed to float32); float32 is written.

#include <string>

#include "support/error.h"
#include "support/ndarray.h"

namespace tensortune {

/// Fails with a message naming the file and the problem: missing magic, truncated header or
/// data, Fortran order, an unsupported dtype.
Expected<NdArray> read_npy(const std::string& path);

/// Parses .npy bytes already in memory; `what` names the source in messages.
Expected<NdArray> parse_npy(const std::string& bytes, const std::string& what);

Status write_npy(const std::string& path, const NdArray& array);
std::string serialize_npy(const NdArray& array);

}  // namespace tensortune
