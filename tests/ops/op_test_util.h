#pragma once
// Shared helpers of the op tests: fresh random inputs (seed printed on failure), poisoned outputs,
// relative L2 error against an FP64 oracle with the DESIGN §5 bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rudnn/tensor.h"

namespace rudnn::testing {

inline std::uint64_t fresh_seed() {
  static std::random_device rd;
  return (std::uint64_t(rd()) << 32) | rd();
}

// Values of `dtype` (already rounded to it) so the oracle sees exactly what the kernel reads.
inline std::vector<double> random_values(std::size_t n, DType dtype, std::mt19937_64& rng, double lo = -2.0,
                                         double hi = 2.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return HostData::from_f64({static_cast<std::int64_t>(n)}, dtype, v).to_f64();
}

inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1e-2;
    default: return 0;
  }
}

// ‖got − want‖₂ / ‖want‖₂ (absolute when want is all zeros); NaN if any output is NaN, and NaN with
// a test failure when the sizes differ (a short result must not pass on its prefix).
inline double relative_l2(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) {
    ADD_FAILURE() << "relative_l2: " << got.size() << " values, expected " << want.size();
    return NAN;
  }
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i])) return NAN;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
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

}  // namespace rudnn::testing
