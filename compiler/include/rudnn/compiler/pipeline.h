#pragma once
// The compiler's entry for the ops layer: one op call in, its lowered kernels out. Internally this
// builds a tiny `rudnn` MLIR module (leading dims dynamic), runs the pass pipeline (verify → resolve
// strategy → select kernel config → lower to launch ops) and emits one CUDA C++ translation unit per
// launch. This header has no MLIR in it.
#include <optional>
#include <string>
#include <vector>

#include "contracts/moe.h"
#include "contracts/normalization.h"
#include "rudnn/compiler/config_provider.h"
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

// The target of a GPU that need not be present (rudnn-precompile): its arch and the limits of the
// arch's flagship part, equal to what the device reports in every field lowering reads. Known:
// sm_80, sm_86, sm_89, sm_90, sm_90a; anything else is InvalidValue naming the known ones.
Result<Target, RuntimeError> target_for_arch(const std::string& arch);
std::vector<std::string> known_archs();

struct NormRequest {
  contracts::NormSignature signature;  // concrete shapes; the pipeline makes leading dims dynamic
  bool aligned16 = true;               // every buffer's address is 16-byte aligned
  std::optional<KernelConfig> config;  // forced (autotune, tests); otherwise the heuristic picks
  // Asked by rudnn-resolve-strategy when `config` is empty (the ops layer passes the autotune
  // component's provider); null: the heuristic picks. Must outlive the call.
  ConfigProvider* provider = nullptr;
};

Result<LoweredOp, RuntimeError> lower_normalization(const NormRequest& request, const Target& target);

// Every kernel config the normalization search space holds for (kind, dtype, H): the registry
// that the NVRTC compile tests walk and that autotuning will time.
std::vector<KernelConfig> normalization_variants(contracts::NormKind kind, DType dtype, std::int64_t h);

// MoE routing (rudnn.route when `grouped` is false, else rudnn.route_sigmoid_grouped). For
// rudnn.route only signature.logits, top_k and renormalize are read. The tokens dim is made
// dynamic; one launch, one warp per token row; results (indices, weights) are slots 1, 2 after the
// operand slots (logits, bias): slots logits 0, [bias 1,] indices, weights — bias keeps slot 1
// for grouped routing whether or not it is present.
struct RouteRequest {
  bool grouped = false;
  contracts::GroupRouteSignature signature;  // concrete shapes
  std::optional<KernelConfig> config;        // forced (tests); otherwise the heuristic picks
};

Result<LoweredOp, RuntimeError> lower_routing(const RouteRequest& request, const Target& target);

// Every kernel config of the routing space ({rows_per_block} ∈ {1, 2, 4, 8}): the registry the
// NVRTC compile tests walk.
std::vector<KernelConfig> routing_variants();

}  // namespace rudnn::compiler
