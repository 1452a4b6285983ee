#pragma once
// What the GPU tests share: outputs poisoned before every launch, and a fixture on CUDA device 0
// that SKIPs without one (RUDNN_GPU_TESTS_ON_HOST=1 runs on the host emulation device instead: slow,
// it checks the tests themselves on a machine without a GPU, e.g. with --gtest_filter='*Sanitized*').
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "rudnn/device.h"

namespace rudnn::testing {

// Outputs are filled with 0xff bytes (NaN in every float dtype) before each launch, so an element a
// kernel fails to write fails the L2 check. Set before main, i.e. before the library first reads it;
// an explicit RUDNN_POISON_OUTPUTS wins.
[[maybe_unused]] inline const bool kPoisonGpuTestOutputs = setenv("RUDNN_POISON_OUTPUTS", "1", 0) == 0;

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* on_host = std::getenv("RUDNN_GPU_TESTS_ON_HOST"); on_host && std::string(on_host) == "1") return;
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "SKIP: no CUDA device";
    auto d = Device::cuda(0);
    ASSERT_TRUE(d.ok()) << d.error().message();
    device_ = d.value();
  }
  Device device_ = Device::host();
};

}  // namespace rudnn::testing
