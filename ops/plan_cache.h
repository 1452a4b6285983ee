#pragma once
// The in-memory plan cache: a warm call is a hash lookup here and a launch — no MLIR, no compiler,
// no string building.
#include <array>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jit.h"

namespace rudnn::ops {

// A call's signature packed into fixed words (op, dtypes, static dims, device, flags, ...).
struct PlanKey {
  std::array<std::int64_t, 16> words{};
  // The op's name as given to PlanKeyBuilder (truncated to 47 chars): which family a cold call is
  // counted for. Not part of the key (words[0] holds its hash).
  std::array<char, 48> op{};
  bool operator==(const PlanKey& o) const { return words == o.words; }
  std::string_view op_name() const { return std::string_view(op.data()); }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (auto w : k.words) {
      h ^= static_cast<std::uint64_t>(w);
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};

class PlanCache {
 public:
  static PlanCache& instance();
  std::shared_ptr<const Plan> find(const PlanKey& key) const;
  void insert(const PlanKey& key, std::shared_ptr<const Plan> plan);
  void clear();  // tests and benchmarks: force the cold path
  // Tests: the kernel entries of the cached plans of `op_name` (which kernels a call chose).
  std::vector<std::string> kernel_entries(std::string_view op_name) const;

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<PlanKey, std::shared_ptr<const Plan>, PlanKeyHash> plans_;
};

}  // namespace rudnn::ops
