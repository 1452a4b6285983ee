#pragma once
// The one fixture of the contract tests: every bad call gets a typed error that names the argument
// and says what was expected — and nothing is compiled, planned or launched for it.
#include <gtest/gtest.h>

#include <string>

#include "rudnn/stats.h"
#include "rudnn/tensor.h"

namespace rudnn::testing {

class ContractTest : public ::testing::Test {
 protected:
  void SetUp() override { rebase(); }
  // Counts from now on (after a valid call a test made on purpose).
  void rebase() { before_ = stats(); }

  template <class R>
  void expect_rejected(const R& r, ErrorKind kind, const std::string& argument) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), kind) << r.error().message();
    EXPECT_EQ(r.error().argument(), argument) << r.error().message();
    EXPECT_NE(r.error().message().find("expected"), std::string::npos);
    const Stats after = stats();
    if (plans_untouched_) {
      EXPECT_EQ(after.plan_cache_misses, before_.plan_cache_misses) << "a rejected call reached the compiler";
      EXPECT_EQ(after.plan_cache_hits, before_.plan_cache_hits);
    }
    EXPECT_EQ(after.kernel_launches, before_.kernel_launches) << "a rejected call launched a kernel";
    EXPECT_EQ(after.jit_compiles, before_.jit_compiles);
  }

  // An uninitialized tensor on the host (or on `queue`).
  static Tensor t(const Shape& s, DType d, const Queue* queue = nullptr) {
    auto r = queue ? Tensor::empty(s, d, *queue) : Tensor::empty(s, d, Device::host());
    EXPECT_TRUE(r.ok());
    return std::move(r.value());
  }

  Stats before_;
  // Whether a rejection must leave the plan cache untouched too (a fixture whose tests rebase after
  // valid multi-step calls may relax it).
  bool plans_untouched_ = true;
};

}  // namespace rudnn::testing
