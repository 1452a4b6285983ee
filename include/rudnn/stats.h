#pragma once
// Process-wide counters, so an engine can assert that serving triggered no compile (SPEC §11).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rudnn/export.h"

namespace rudnn {

struct Stats {
  std::uint64_t jit_compiles = 0;     // NVRTC or host compiler runs
  std::uint64_t disk_cache_hits = 0;  // kernels loaded from the disk cache
  std::uint64_t disk_cache_misses = 0;
  std::uint64_t disk_cache_rebuilds = 0;  // corrupt or truncated entries detected and rebuilt
  std::uint64_t pack_hits = 0;            // kernels found in a kernel pack (RUDNN_KERNEL_PACK)
  std::uint64_t plan_cache_hits = 0;      // warm calls
  std::uint64_t plan_cache_misses = 0;    // cold calls (MLIR + compile or cache load)
  std::uint64_t autotune_runs = 0;
  std::uint64_t kernel_launches = 0;
  // Capture safety (SPEC §8, §13): what a warm call must not do inside a CUDA graph capture.
  std::uint64_t device_allocations = 0;     // device (or host-device) memory allocations, temporaries included
  std::uint64_t module_loads = 0;           // kernel modules loaded (cuModuleLoadData / dlopen)
  std::uint64_t host_synchronizations = 0;  // waits of the host for a queue (or for an event on it)
};

RUDNN_API Stats stats();
// The same counters per op family ("normalization", "paged attention", ...; the graph runner's
// family names), for the families whose calls ran in this process: what their plans compiled,
// loaded and tuned, their plan-cache hits and misses, and their launches (an engine asserts that
// serving compiled nothing, family by family). Allocations and synchronizations outside a plan's
// launches (outputs, readbacks) count only in stats().
RUDNN_API std::vector<std::pair<std::string, Stats>> family_stats();
RUDNN_API std::string stats_to_string(const Stats& s);

}  // namespace rudnn
