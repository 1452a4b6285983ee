#pragma once
// The host emulation device made to report a smaller GPU's opt-in shared memory for a scope, so that
// an op test shows which kernels a call takes there (the host device refuses a launch over its
// reported limit, as the CUDA driver does). Plans do not key on the device's limits, so the plan
// cache is cleared on entry and on exit: no plan made for one size serves the other.
#include <cstddef>

#include "host/host_device.h"
#include "plan_cache.h"

namespace rudnn::testing {

// sm_86 / sm_89 (A10, A40, L4, L40S, RTX 30xx/40xx): the least shared memory of any supported GPU.
inline constexpr std::size_t kSm86SharedBytes = 99 * 1024;

class ScopedSharedMemory {
 public:
  explicit ScopedSharedMemory(std::size_t bytes) : saved_(runtime::host_device_info().shared_memory_per_block_optin) {
    ops::PlanCache::instance().clear();
    runtime::host_device_info().shared_memory_per_block_optin = bytes;
  }
  ~ScopedSharedMemory() {
    runtime::host_device_info().shared_memory_per_block_optin = saved_;
    ops::PlanCache::instance().clear();
  }
  ScopedSharedMemory(const ScopedSharedMemory&) = delete;
  ScopedSharedMemory& operator=(const ScopedSharedMemory&) = delete;

 private:
  std::size_t saved_;
};

}  // namespace rudnn::testing
