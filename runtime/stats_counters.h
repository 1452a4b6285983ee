#pragma once
// The process-wide counters behind rudnn::stats(), and per op family the same counters behind
// rudnn::family_stats() (SPEC §13): an increment made while a FamilyScope is active on the thread
// counts for the process and for that family.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rudnn::runtime {

struct StatCounters {
  std::atomic<std::uint64_t> jit_compiles{0}, disk_cache_hits{0}, disk_cache_misses{0}, disk_cache_rebuilds{0},
      pack_hits{0}, plan_cache_hits{0}, plan_cache_misses{0}, autotune_runs{0}, kernel_launches{0},
      device_allocations{0}, module_loads{0}, host_synchronizations{0};
};
StatCounters& counters();

// The counters of one op family ("normalization"), made on first use and never freed (a plan keeps
// the pointer, so a warm call finds its family without a lookup).
StatCounters* family_counters(std::string_view family);
// Every family with counters, by name.
std::vector<std::pair<std::string, const StatCounters*>> all_family_counters();

// The family whose call runs on this thread, for the scope's lifetime (null: none).
class FamilyScope {
 public:
  explicit FamilyScope(StatCounters* family);
  ~FamilyScope();
  FamilyScope(const FamilyScope&) = delete;
  FamilyScope& operator=(const FamilyScope&) = delete;
  static StatCounters* current();

 private:
  StatCounters* saved_;
};

// counters().*field += 1, and the current family's too.
inline void count(std::atomic<std::uint64_t> StatCounters::*field) {
  (counters().*field)++;
  if (StatCounters* family = FamilyScope::current()) (family->*field)++;
}

}  // namespace rudnn::runtime
