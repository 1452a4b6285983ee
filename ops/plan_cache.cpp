#include "plan_cache.h"

#include <mutex>

#include "stats_counters.h"

namespace rudnn::ops {

PlanCache& PlanCache::instance() {
  static PlanCache cache;
  return cache;
}

std::shared_ptr<const Plan> PlanCache::find(const PlanKey& key) const {
  std::shared_lock lock(mutex_);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    runtime::count(&runtime::StatCounters::plan_cache_misses);
    return nullptr;
  }
  runtime::count(&runtime::StatCounters::plan_cache_hits);
  return it->second;
}

void PlanCache::insert(const PlanKey& key, std::shared_ptr<const Plan> plan) {
  std::unique_lock lock(mutex_);
  plans_.emplace(key, std::move(plan));
}

void PlanCache::clear() {
  std::unique_lock lock(mutex_);
  plans_.clear();
}

std::vector<std::string> PlanCache::kernel_entries(std::string_view op_name) const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> entries;
  for (const auto& [key, plan] : plans_)
    if (key.op_name() == op_name)
      for (const PreparedKernel& k : plan->kernels) entries.push_back(k.launch.entry);
  return entries;
}

}  // namespace rudnn::ops
