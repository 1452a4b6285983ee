#pragma once
#include <atomic>
#include <cstdint>

namespace rudnn::runtime {

struct StatCounters {
  std::atomic<std::uint64_t> jit_compiles{0}, disk_cache_hits{0}, disk_cache_misses{0}, disk_cache_rebuilds{0},
      pack_hits{0}, plan_cache_hits{0}, plan_cache_misses{0}, autotune_runs{0}, kernel_launches{0},
      device_allocations{0}, module_loads{0}, host_synchronizations{0};
};
StatCounters& counters();

}  // namespace rudnn::runtime
