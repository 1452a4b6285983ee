#pragma once
// The routing contracts of SPEC §3 (route) and §4 (route_sigmoid_grouped), written once over plain
// shapes and dtypes. The public entries (rudnn/moe.h) and, once the MoE dialect ops land, the dialect
// verifiers both call them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "contracts/normalization.h"  // NormOperand, kDynamic
#include "rudnn/dtype.h"
#include "rudnn/error.h"
#include "rudnn/moe.h"  // kMaxDispatchExperts
#include "rudnn/tensor.h"

namespace rudnn::contracts {

using MoeOperand = NormOperand;

// Grouped routing limits (SPEC §4).
inline constexpr std::int64_t kMaxGroupedExperts = 1024;
inline constexpr std::int64_t kMaxGroups = 128;
inline constexpr std::int64_t kMaxGroupedTopK = 64;

struct RouteSignature {
  MoeOperand logits;  // [T, E]
  std::int64_t top_k = 1;
  bool renormalize = true;
};

struct GroupRouteSignature {
  MoeOperand logits;               // [T, E]
  std::optional<MoeOperand> bias;  // F32 [E]
  std::int64_t top_k = 1;
  std::int64_t groups = 1;
  std::int64_t selected_groups = 1;
  bool group_top_two = false;
  bool renormalize = true;
  double scale = 1.0;
};

// The first violated contract line, or nothing. Order: logits dtype, rank, E > 0, then options
// in the order SPEC lists them, then bias. A dynamic E (kDynamic) passes the checks needing it.
std::optional<MoeError> check_route(const RouteSignature& sig);
std::optional<MoeError> check_route_sigmoid_grouped(const GroupRouteSignature& sig);

// "logits [16, 256] bf16, bias [256] f32"
std::string describe_call(const RouteSignature& sig);
std::string describe_call(const GroupRouteSignature& sig);

// --- Dispatch, experts and combine (SPEC §3). Rows grouped per expert ("compact rows"): expert e
// owns rows [offsets[e], offsets[e+1]) of an [N, H] tensor, offsets U32 [E + 1]; slots U32 [T, top_k]
// holds the compact row of each (token, k).

// RoutingPlan::dispatch: input [T, H] float, indices U32 [T, top_k], experts ≥ 1.
struct DispatchSignature {
  MoeOperand input;    // [T, H]
  MoeOperand indices;  // [T, top_k] U32
  std::int64_t experts = 1;
};

// SwiGluExperts::new: gate, up [E, I, H], down [E, H, I]; one non-quantized float dtype, one device.
struct ExpertWeights {
  MoeOperand gate, up, down;
};

// One experts call over compact rows [N, H] with offsets [E + 1].
struct ExpertsSignature {
  ExpertWeights weights;
  MoeOperand rows;     // [N, H], the weights' dtype
  MoeOperand offsets;  // [E + 1] U32
};

// Dispatched::combine: expert rows [N, H] with N = T·top_k, slots U32 [T, top_k], routing weights
// [T, top_k] float.
struct CombineSignature {
  MoeOperand expert_rows, slots, weights;
};

// The strategies of the expert GEMMs (GroupedStrategy in the API).
enum class ExpertsStrategy { Scalar, Auto, TensorCore };
std::string_view strategy_name(ExpertsStrategy s);

std::optional<MoeError> check_dispatch(const DispatchSignature& sig);
std::optional<MoeError> check_expert_weights(const ExpertWeights& w);
std::optional<MoeError> check_experts(const ExpertsSignature& sig);
std::optional<MoeError> check_combine(const CombineSignature& sig);

// Why the TensorCore experts cannot serve this call (F16/BF16 weights, H and I multiples of 8 for
// 16-byte async copies, a device with mma.sync m16n8k16: sm_80 or newer, or the host emulation
// device), or nothing. `arch` is the target's arch ("sm_90a", "host-..."); empty skips that check.
std::optional<MoeError> check_tensor_core_experts(const ExpertWeights& w, const std::string& arch);
// The strategy the experts (forward or backward) run with on `arch`: Scalar stays Scalar; TensorCore
// stays, or is check_tensor_core_experts' error where that fails; Auto takes TensorCore where it
// passes and Scalar only then (never to hide a compile or launch failure).
Result<ExpertsStrategy, MoeError> resolve_experts_strategy(ExpertsStrategy requested, const ExpertWeights& w,
                                                           const std::string& arch);

// E, I, H of valid weights.
inline std::int64_t experts_of(const ExpertWeights& w) { return w.gate.shape[0]; }
inline std::int64_t inter_of(const ExpertWeights& w) { return w.gate.shape[1]; }
inline std::int64_t hidden_of(const ExpertWeights& w) { return w.gate.shape[2]; }

std::string describe_call(const DispatchSignature& sig);
std::string describe_call(const ExpertsSignature& sig);
std::string describe_call(const CombineSignature& sig);

}  // namespace rudnn::contracts
