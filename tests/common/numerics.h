#pragma once
// The numbers every test shares (DESIGN §5): fresh seeds, the relative L2 error against an FP64
// oracle, and the per-dtype tolerance. One definition for the op, template and GPU tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "rudnn/dtype.h"

namespace rudnn::testing {

// A new seed per call: random unless RUDNN_TEST_SEED is set, then that seed and its successors (a
// failing test prints its seed; rerunning with RUDNN_TEST_SEED=<seed> reproduces the first case).
inline std::uint64_t fresh_seed() {
  static std::uint64_t next = []() -> std::uint64_t {
    if (const char* s = std::getenv("RUDNN_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    std::random_device rd;
    return (std::uint64_t(rd()) << 32) | rd();
  }();
  return next++;
}

// The relative L2 bound of a result stored in `dtype` against an FP64 oracle.
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

}  // namespace rudnn::testing
