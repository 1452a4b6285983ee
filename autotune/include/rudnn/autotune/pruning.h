#pragma once
// Pruning before timing: a candidate that cannot run (or would run badly for a reason we can
// read statically) is dropped before anything is timed. GPU targets: each launch is compiled with
// NVRTC for the device arch and the ptxas report read (registers, spills, shared memory); the
// host emulation device has no such report, so only the device limits apply there.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/compiler/pipeline.h"
#include "rudnn/device.h"

namespace rudnn::autotune {

// What is known about one launch of a candidate before it runs.
struct StaticFacts {
  std::string entry;
  std::int64_t block_threads = 0;
  std::int64_t dynamic_shared_bytes = 0;
  std::optional<compiler::nvrtc::PtxasReport> ptxas;  // GPU targets only
};

// Why a launch with `facts` cannot run on a device with `limits`, or nothing. Rules: block
// threads > max threads per block; spilled bytes > 0; registers x block threads > registers per
// SM; static + dynamic shared memory > the per-block (opt-in) limit.
std::optional<std::string> prune_reason(const StaticFacts& facts, const DeviceInfo& limits);

// The facts of every launch of `lowered` on `target`: for a GPU target each launch is compiled
// with NVRTC for target.arch (thread-safe, so candidates may be checked in parallel). A compile
// failure is returned as the error (the candidate is then dropped as "does not compile").
Result<std::vector<StaticFacts>, RuntimeError> static_facts(const compiler::LoweredOp& lowered,
                                                            const compiler::Target& target);

}  // namespace rudnn::autotune
