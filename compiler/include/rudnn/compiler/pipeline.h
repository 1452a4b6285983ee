#pragma once
// The compiler's entry for the ops layer: one op call in, its lowered kernels out. Internally this
// builds a tiny `rudnn` MLIR module (leading dims dynamic), runs the pass pipeline (verify → select
// kernel config → lower to launch ops) and emits one CUDA C++ translation unit per launch. This
// header has no MLIR in it.
#include <optional>
#include <string>
#include <vector>

#include "contracts/normalization.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/device.h"
#include "rudnn/error.h"

namespace rudnn::compiler {

// What the compiler may know about the device: never the runtime itself.
struct Target {
  std::string arch = "sm_90a";  // the emulator reports a Hopper-like arch too
  bool host_emulation = false;
  DeviceInfo limits;
};

struct NormRequest {
  contracts::NormSignature signature;  // concrete shapes; the pipeline makes leading dims dynamic
  bool aligned16 = true;               // every buffer's address is 16-byte aligned
  std::optional<KernelConfig> config;  // forced (autotune, tests); otherwise the heuristic picks
};

Result<LoweredOp, RuntimeError> lower_normalization(const NormRequest& request, const Target& target);

// Every kernel config the normalization search space holds for (kind, dtype, H): the registry
// that the NVRTC compile tests walk and that autotuning will time.
std::vector<KernelConfig> normalization_variants(contracts::NormKind kind, DType dtype, std::int64_t h);

}  // namespace rudnn::compiler
