#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

#include "rudnn/stats.h"
#include "stats_counters.h"

namespace rudnn {

namespace runtime {
StatCounters& counters() {
  static StatCounters c;
  return c;
}

namespace {
struct Families {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<StatCounters>, std::less<>> by_name;
};
Families& families() {
  static auto* f = new Families;  // leaked: plans hold pointers into it until exit
  return *f;
}
thread_local StatCounters* current_family = nullptr;
}  // namespace

StatCounters* family_counters(std::string_view family) {
  Families& f = families();
  std::lock_guard lock(f.mutex);
  auto it = f.by_name.find(family);
  if (it == f.by_name.end()) it = f.by_name.emplace(std::string(family), std::make_unique<StatCounters>()).first;
  return it->second.get();
}

std::vector<std::pair<std::string, const StatCounters*>> all_family_counters() {
  Families& f = families();
  std::lock_guard lock(f.mutex);
  std::vector<std::pair<std::string, const StatCounters*>> out;
  for (const auto& [name, c] : f.by_name) out.emplace_back(name, c.get());
  return out;
}

FamilyScope::FamilyScope(StatCounters* family) : saved_(current_family) { current_family = family; }
FamilyScope::~FamilyScope() { current_family = saved_; }
StatCounters* FamilyScope::current() { return current_family; }
}  // namespace runtime

namespace {
Stats snapshot(const runtime::StatCounters& c) {
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
}  // namespace

Stats stats() { return snapshot(runtime::counters()); }

std::vector<std::pair<std::string, Stats>> family_stats() {
  std::vector<std::pair<std::string, Stats>> out;
  for (const auto& [name, c] : runtime::all_family_counters()) out.emplace_back(name, snapshot(*c));
  return out;
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
