// What a peer sends the tracker, after gRPC decoded it: Measure requests (with their built
// kernels), device messages and registrations, best-record queries, and the work items a device
// is sent. Each is checked field by field into our structs, as the
// services do; nothing a peer sends may crash the tracker. The first byte picks the message.
#include <cstdint>
#include <string>

#include "proto/convert.h"
#include "proto/farm.pb.h"
#include "schedule_space/config_space.h"

namespace ss = tensortune::schedule_space;
namespace v1 = tensortune::v1;
namespace wire = tensortune::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      v1::MeasureJobRequest req;
      if (!req.ParseFromString(bytes)) return 0;
      const auto& m = req.request();
      (void)wire::validate_timing(m.timing());
      for (const auto& k : req.kernels()) {
        auto kernel = wire::kernel_binary_from_proto(k);
        if (kernel) {
          v1::KernelBinary back;
          wire::kernel_binary_to_proto(*kernel, &back);
        }
      }
      if (m.workload().has_layout_transform()) {
        (void)wire::layout_transform_from_proto(m.workload());
        return 0;
      }
      auto task = wire::task_from_proto(m.workload(), m.target());
      if (!task) return 0;
      auto space = ss::make_config_space(*task);
      if (!space) return 0;
      for (const auto& c : m.configs()) {
        auto config = wire::config_from_proto(*space, c);
        if (config) {
          v1::Config back;
          wire::config_to_proto(*space, *config, &back);
        }
      }
      break;
    }
    case 1: {
      v1::DeviceMessage msg;
      if (!msg.ParseFromString(bytes)) return 0;
      if (msg.has_result()) (void)wire::result_from_proto(msg.result().result());
      break;
    }
    default: {
      v1::WorkItem item;
      if (!item.ParseFromString(bytes)) return 0;
      if (item.has_kernel()) (void)wire::kernel_binary_from_proto(item.kernel());
      auto task = wire::task_from_proto(item.workload(), item.target());
      if (task) {
        auto space = ss::make_config_space(*task);
        if (space) (void)wire::config_from_proto(*space, item.config());
      }
      break;
    }
  }
  return 0;
}
