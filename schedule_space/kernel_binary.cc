#include "schedule_space/kernel_binary.h"

#include <algorithm>

namespace tensortune::schedule_space {

const char* kernel_format_name(KernelFormat format) {
  switch (format) {
    case KernelFormat::kCpuObject:
      return "cpu-object";
    case KernelFormat::kCubin:
      return "cubin";
  }
  return "?";
}

Status check_kernel_binary(const KernelBinary& binary, KernelFormat device_format,
                           const std::string& device_arch,
                           const std::vector<std::string>& device_features,
                           const std::string& source_sha256) {
  const std::string from =
      binary.built_by.empty() ? std::string() : " (built by '" + binary.built_by + "')";
  if (binary.format != device_format)
    return invalid_argument(std::string("the kernel sent is a ") +
                            kernel_format_name(binary.format) + from + "; this device runs " +
                            kernel_format_name(device_format) + "s");
  if (binary.format == KernelFormat::kCubin && binary.arch != device_arch)
    return invalid_argument("the cubin sent is for " + binary.arch + from + "; this GPU is " +
                            device_arch);
  if (binary.format == KernelFormat::kCpuObject) {
    std::vector<std::string> missing;
    for (const std::string& f : binary.features)
      if (!std::binary_search(device_features.begin(), device_features.end(), f))
        missing.push_back(f);
    if (!missing.empty()) {
      std::string list;
      for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
      return invalid_argument("the object sent is for CPU " + binary.arch + from +
                              " and may use features this CPU (" + device_arch +
                              ") lacks: " + list);
    }
  }
  if (binary.source_sha256 != source_sha256)
    return invalid_argument("the kernel sent" + from + " was compiled from another source (" +
                            binary.source_sha256.substr(0, 12) + ", " + binary.compiler +
                            ") than this device makes of the config (" +
                            source_sha256.substr(0, 12) +
                            "): the builder's tensortune differs from the device's");
  return ok_status();
}

}  // namespace tensortune::schedule_space
