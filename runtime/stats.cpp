#include <fmt/format.h>

#include "rudnn/stats.h"
#include "stats_counters.h"

namespace rudnn {

namespace runtime {
StatCounters& counters() {
  static StatCounters c;
  return c;
}
}  // namespace runtime

Stats stats() {
  auto& c = runtime::counters();
  Stats s;
  s.jit_compiles = c.jit_compiles;
  s.disk_cache_hits = c.disk_cache_hits;
  s.disk_cache_misses = c.disk_cache_misses;
  s.disk_cache_rebuilds = c.disk_cache_rebuilds;
  s.pack_hits = c.pack_hits;
  s.plan_cache_hits = c.plan_cache_hits;
  s.plan_cache_misses = c.plan_cache_misses;
  s.autotune_runs = c.autotune_runs;
  s.kernel_launches = c.kernel_launches;
  s.device_allocations = c.device_allocations;
  s.module_loads = c.module_loads;
  s.host_synchronizations = c.host_synchronizations;
  return s;
}

std::string stats_to_string(const Stats& s) {
  return fmt::format(
      "jit_compiles={} disk_cache_hits={} disk_cache_misses={} disk_cache_rebuilds={} pack_hits={} plan_cache_hits={} "
      "plan_cache_misses={} autotune_runs={} kernel_launches={} device_allocations={} module_loads={} "
      "host_synchronizations={}",
      s.jit_compiles, s.disk_cache_hits, s.disk_cache_misses, s.disk_cache_rebuilds, s.pack_hits, s.plan_cache_hits,
      s.plan_cache_misses, s.autotune_runs, s.kernel_launches, s.device_allocations, s.module_loads,
      s.host_synchronizations);
}

}  // namespace rudnn
