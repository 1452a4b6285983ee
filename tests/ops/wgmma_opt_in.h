#pragma once
// RUDNN_WGMMA=1 for a scope (contracts::has_wgmma's opt-in), for the op tests that run the wgmma
// tiles through the public entries: on the host emulation device (which reports sm_90a and emulates
// wgmma) and, as *OnGpu, on an sm_90a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "contracts/arch.h"
#include "jit.h"
#include "plan_cache.h"
#include "rudnn/device.h"

namespace rudnn::testing {

// Sets RUDNN_WGMMA for the scope and puts back what was there. The plan cache is emptied on the way
// in and out: a plan's key holds neither every shape nor the opt-in (a process sets it before its
// first call), so plans made on either side must not serve the other.
class WgmmaOptIn {
 public:
  WgmmaOptIn() : had_(std::getenv("RUDNN_WGMMA") != nullptr), saved_(had_ ? std::getenv("RUDNN_WGMMA") : "") {
    setenv("RUDNN_WGMMA", "1", 1);
    ops::PlanCache::instance().clear();
  }
  ~WgmmaOptIn() {
    if (had_)
      setenv("RUDNN_WGMMA", saved_.c_str(), 1);
    else
      unsetenv("RUDNN_WGMMA");
    ops::PlanCache::instance().clear();
  }
  WgmmaOptIn(const WgmmaOptIn&) = delete;
  WgmmaOptIn& operator=(const WgmmaOptIn&) = delete;

 private:
  bool had_;
  std::string saved_;
};

// Whether RUDNN_WGMMA=1 is set outside any WgmmaOptIn (the tests of the default path skip then).
inline bool wgmma_opted_in() {
  const char* v = std::getenv("RUDNN_WGMMA");
  return v != nullptr && std::string(v) == "1";
}

// The first CUDA device when it has wgmma under the opt-in (sm_90a), else nothing and `why` names
// the reason: an *OnGpu test skips with it.
inline std::optional<Device> wgmma_gpu(std::string& why) {
  if (Device::cuda_device_count() == 0) {
    why = "no CUDA device";
    return std::nullopt;
  }
  auto device = Device::cuda(0);
  if (!device.ok()) {
    ADD_FAILURE() << device.error().message();
    why = "cuda:0 did not open";
    return std::nullopt;
  }
  const WgmmaOptIn opt_in;
  const std::string arch = ops::target_for(*device).arch;
  if (!contracts::has_wgmma(arch)) {
    why = arch + " has no wgmma (sm_90a only)";
    return std::nullopt;
  }
  return *device;
}

}  // namespace rudnn::testing
