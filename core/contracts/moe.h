#pragma once
// The routing contracts of SPEC §3 (route) and §4 (route_sigmoid_grouped), written once over plain
// shapes and dtypes. The public entries (rudnn/moe.h) and, once the MoE dialect ops land, the dialect
// verifiers both call them.
#include <cstdint>
#include <optional>
#include <string>

#include "contracts/normalization.h"  // NormOperand, kDynamic
#include "rudnn/dtype.h"
#include "rudnn/error.h"
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

}  // namespace rudnn::contracts
