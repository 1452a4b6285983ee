#pragma once
// The inputs of the paged attention benchmarks (bench_paged.cpp, bench_paged_backward.cpp): device
// tensors replicated from a drawn pool (caches of many GB without a host buffer of their size), fully
// drawn small tensors, and paged schedules with physical pages handed out from a random permutation.
#include <cstdint>
#include <random>
#include <vector>

#include "rudnn/paged_attention.h"
#include "rudnn/tensor.h"

namespace rudnn::bench {

using paged_attention::DevicePlan;
using paged_attention::HostPlan;

inline std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// ---- inputs

// A device tensor whose element i is pool[i mod pool.size()]. The pool (drawn, rounded to the dtype)
// is uploaded once and replicated on the device by doubling copies, so a 30 GB cache fills at copy
// speed without a host buffer of its size.
struct Cycled {
  Tensor tensor;
  std::vector<double> pool;
  // Elements [i, i + n) into out (the check's inner loops then run over plain arrays).
  void row(std::int64_t i, std::int64_t n, double* out) const {
    const auto m = static_cast<std::int64_t>(pool.size());
    std::int64_t at = i % m;
    for (std::int64_t x = 0; x < n; ++x) {
      out[x] = pool[sz(at)];
      if (++at == m) at = 0;
    }
  }
};

Result<Cycled, RuntimeError> cycled_tensor(const Shape& shape, DType dtype, const Device& device, std::int64_t period,
                                           std::mt19937_64& rng);

// A fully drawn (not cycled) device tensor and its values as uploaded (queries: small).
struct Drawn {
  Tensor tensor;
  std::vector<double> values;
};

Result<Drawn, RuntimeError> drawn_tensor(const Shape& shape, DType dtype, const Device& device, std::mt19937_64& rng);

// ---- schedules

struct Layout {
  std::int64_t page_size = 1, pages = 0;
  std::vector<std::vector<std::int32_t>> tables;
  std::vector<std::int64_t> lengths, sequence_ids, positions;
  std::int64_t queries() const { return static_cast<std::int64_t>(sequence_ids.size()); }
};

// Sequence s of lengths[s] keys gets ⌈L / page_size⌉ physical pages handed out from a random
// permutation, and rows[s] query rows: its last rows[s] positions.
Layout make_layout(std::int64_t page_size, const std::vector<std::int64_t>& lengths,
                   const std::vector<std::int64_t>& rows, std::mt19937_64& rng);

Result<DevicePlan, PagedAttentionError> device_plan(const Layout& l, const Tensor& q);

}  // namespace rudnn::bench
