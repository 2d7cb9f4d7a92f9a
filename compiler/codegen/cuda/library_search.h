#pragma once
/// \file
/// Finding CUDA's shared libraries at run time. They live in different places on different
/// machines: the loader's path, the toolkit's lib64 or targets/x86_64-linux/lib, or a Python
/// environment's site-packages/nvidia/*/lib (PyTorch's wheels bring NVRTC, cuBLAS and cuDNN
/// there). A variable names the file outright where none of those fits.

#include <string>
#include <vector>

namespace tensortune::codegen::cuda {

/// What opening a library found: the handle (nullptr when every candidate failed), the path
/// that opened, and every candidate tried with dlerror()'s reason, for the error message.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;
  std::vector<std::string> failures;  ///< "candidate: dlerror text"
  /// "tried A (reason); B (reason); ..." for an error message.
  std::string tried() const;
};

/// Candidates, in order: $env_var (a file), then each of `sonames` through the loader's own
/// search, then each soname under $CUDA_HOME, $CUDA_PATH, the build's toolkit
/// (`toolkit_lib_dir`), /usr/local/cuda and /usr/local/nvidia (lib64, lib,
/// targets/x86_64-linux/lib), then site-packages/nvidia/*/lib of the Python environments found
/// ($VIRTUAL_ENV, /opt/*/.venv, /usr/local/lib/python3*, /usr/lib/python3, ~/.local).
std::vector<std::string> cuda_library_candidates(const std::string& env_var,
                                                 const std::vector<std::string>& sonames,
                                                 const std::string& toolkit_lib_dir);

/// dlopen()s the candidates in turn (RTLD_NOW | RTLD_LOCAL) until one opens.
OpenedLibrary open_cuda_library(const std::string& env_var, const std::vector<std::string>& sonames,
                                const std::string& toolkit_lib_dir);

}  // namespace tensortune::codegen::cuda
