#pragma once
// Shared helpers of the op tests: random inputs rounded to the dtype, uploads, host values; the
// numbers (fresh seeds, relative L2, tolerances) are tests/common/numerics.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/numerics.h"
#include "rudnn/tensor.h"

namespace rudnn::testing {

// Values of `dtype` (already rounded to it) so the oracle sees exactly what the kernel reads.
inline std::vector<double> random_values(std::size_t n, DType dtype, std::mt19937_64& rng, double lo = -2.0,
                                         double hi = 2.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return HostData::from_f64({static_cast<std::int64_t>(n)}, dtype, v).to_f64();
}

// The tensor's values as doubles (waits for its queue); empty, with a test failure, on error.
inline std::vector<double> host_values(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->to_f64() : std::vector<double>{};
}

inline Tensor upload(const Shape& shape, DType dtype, const std::vector<double>& values, const Device& device) {
  auto t = Tensor::upload(HostData::from_f64(shape, dtype, values), device);
  EXPECT_TRUE(t.ok()) << t.error().message();
  return std::move(t.value());
}

// A tensor's bytes on the host (for bitwise comparisons); empty, with a test failure, when the copy fails.
inline std::vector<std::byte> host_bytes(const Tensor& t) {
  auto h = to_host(t);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return h.ok() ? h->bytes : std::vector<std::byte>{};
}

}  // namespace rudnn::testing
