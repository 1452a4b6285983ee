#pragma once
// The compiler's entry for the ops layer: one op call in, its lowered kernels out. Internally this
// builds a tiny `rudnn` MLIR module (leading dims dynamic), runs the pass pipeline (verify → resolve
// strategy → select kernel config → lower to launch ops) and emits one CUDA C++ translation unit per
// launch. This header has no MLIR in it.
#include <optional>
#include <string>
#include <vector>

#include "contracts/attention.h"
#include "contracts/gated_delta.h"
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
  ConfigProvider* provider = nullptr;        // asked when `config` is empty (the ops layer's autotune)
};

Result<LoweredOp, RuntimeError> lower_routing(const RouteRequest& request, const Target& target);

// Every kernel config of the routing space ({rows_per_block} ∈ {1, 2, 4, 8}): the registry the
// NVRTC compile tests walk.
std::vector<KernelConfig> routing_variants();

// rudnn.dispatch. Slots: input 0, indices 1, then rows 2, offsets 3, slots 4. Two launches.
struct DispatchRequest {
  contracts::DispatchSignature signature;  // concrete shapes
  std::optional<KernelConfig> config;      // forced (tests); otherwise the heuristic picks
  ConfigProvider* provider = nullptr;      // asked when `config` is empty (the ops layer's autotune)
};
Result<LoweredOp, RuntimeError> lower_dispatch(const DispatchRequest& request, const Target& target);

// rudnn.swiglu_experts. Slots: rows 0, offsets 1, gate 2, up 3, down 4, then out 5; the SwiGLU
// intermediate is a temporary. Two launches. A TensorCore request the target cannot serve is an
// Unsupported error naming the requirement; Auto picks TensorCore where supported.
struct ExpertsRequest {
  contracts::ExpertsSignature signature;  // concrete shapes
  contracts::ExpertsStrategy strategy = contracts::ExpertsStrategy::Scalar;
  std::optional<KernelConfig> config;  // forced (tests, autotune); otherwise the heuristic picks
  std::int64_t rows_per_expert = -1;   // the call's load (sizes the heuristic tile); < 0 unknown
  // Asked by rudnn-resolve-strategy for the tile when `config` is empty and the strategy is
  // concrete (the ops layer passes the autotune provider); null: the heuristic picks.
  ConfigProvider* provider = nullptr;
};
Result<LoweredOp, RuntimeError> lower_experts(const ExpertsRequest& request, const Target& target);

// rudnn.combine. Slots: expert_rows 0, slots 1, weights 2, then out 3. One launch.
struct CombineRequest {
  contracts::CombineSignature signature;  // concrete shapes
  std::optional<KernelConfig> config;
  ConfigProvider* provider = nullptr;  // asked when `config` is empty (the ops layer's autotune)
};
Result<LoweredOp, RuntimeError> lower_combine(const CombineRequest& request, const Target& target);

// The registered configs: the NVRTC compile tests walk them, autotuning times them. The experts'
// warpgroup-MMA tiles only when `wgmma` (contracts::has_wgmma; autotune, which has no target here,
// lists them all and the target refuses them at lowering where it lacks wgmma).
std::vector<KernelConfig> dispatch_variants(DType dtype, std::int64_t hidden);
std::vector<KernelConfig> combine_variants(DType dtype, std::int64_t hidden);
std::vector<KernelConfig> expert_variants(bool tensor_core, bool wgmma = true);

// rudnn.gated_delta (signature.chunk_size 0: the recurrence, else chunked). B, H and T are dynamic
// in the IR. Slots: query 0, key 1, value 2, beta 3, log_decay 4, initial_state 5 (kept when
// absent), then output 6, final_state 7. One launch.
struct GatedDeltaRequest {
  contracts::GatedDeltaSignature signature;  // concrete shapes
  std::optional<KernelConfig> config;        // forced (tests); otherwise the heuristic picks
  ConfigProvider* provider = nullptr;        // asked when `config` is empty (the ops layer's autotune)
};
Result<LoweredOp, RuntimeError> lower_gated_delta(const GatedDeltaRequest& request, const Target& target);

// rudnn.attention. Batch and lengths are dynamic in the IR; heads and head dims static; a mask or
// bias keeps a static 1 in a broadcast dim. Slots: query 0, key 1, value 2, mask 3, attn_bias 4 (kept
// when absent), then output 5; Fallback's score workspace is a temporary.
struct AttentionRequest {
  contracts::AttentionSignature signature;  // concrete shapes
  contracts::AttentionStrategy strategy = contracts::AttentionStrategy::Fallback;
  std::optional<KernelConfig> config;  // forced (tests, autotune); otherwise the heuristic / provider
  ConfigProvider* provider = nullptr;  // asked when `config` is empty (the ops layer's autotune)
  // The query's or output's heads are not Tq rows apart (SPEC §13 views: token-major prefill with
  // Hq > Hkv): the op gets rudnn.head_panels, and the tensor-core kernel one query head per panel.
  bool head_panels = false;
  // The call's panels hold kShortPanelRows or fewer (group·Tq, or Tq with head panels), and the
  // strategy and target are ones the hint is for (attention_hints_short_panels): rudnn.short_panels.
  bool short_panels = false;
};
Result<LoweredOp, RuntimeError> lower_attention(const AttentionRequest& request, const Target& target);

// Panels of at most this many rows (decode with a small group) are short: the attention heuristic
// keeps them off the 128-row warpgroup-MMA tiles, which they would run mostly empty.
inline constexpr std::int64_t kShortPanelRows = 64;
// Whether a call's panels are short: group·Tq rows, or Tq with head panels (one query head each).
inline bool attention_panels_short(std::int64_t q_heads, std::int64_t kv_heads, std::int64_t q_len, bool head_panels) {
  return (head_panels ? 1 : q_heads / kv_heads) * q_len <= kShortPanelRows;
}
// Whether calls of `strategy` on `arch` carry the short-panels hint: where a heuristic could take a
// wgmma tile (FlashBlackboxAccelerated or Autotune on an arch with wgmma). By the arch alone, not the
// RUDNN_WGMMA opt-in, since the public entry asks on every call (no environment read there); on
// sm_90a without the opt-in the hint only splits plans that pick the same kernel. rudnn-precompile
// lowers both sides where this holds.
bool attention_hints_short_panels(contracts::AttentionStrategy strategy, const std::string& arch);

// Every registered attention config for (strategy, dtype, D, Dv): a concrete strategy's tiles, or for
// Autotune those of every strategy that fits; flash_mma's warpgroup-MMA tiles only when `wgmma` (as
// expert_variants).
std::vector<KernelConfig> attention_variants(contracts::AttentionStrategy strategy, DType dtype, std::int64_t head_dim,
                                             std::int64_t value_dim, bool wgmma = true);

// The registered configs of the recurrence (fitting key_dim) or of the chunked kernel (its tensor-core
// tiles only for f16/bf16).
std::vector<KernelConfig> gated_delta_variants(bool chunked, std::int64_t key_dim, DType dtype);

}  // namespace rudnn::compiler
