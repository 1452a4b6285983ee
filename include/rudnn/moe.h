#pragma once
// MoE routing (SPEC §3–§4): softmax top-k routing and grouped, limited sigmoid routing
// (DeepSeek-V3 style). A rejected call returns a MoeError and launches nothing.
// Dispatch, experts and combine come later (issue 4); RoutingPlan already carries what dispatch
// needs (indices and weights on the logits' queue, plus the shape of the routing).
#include <cstdint>
#include <optional>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::moe {

using rudnn::MoeError;

struct RoutingOptions {
  std::int64_t top_k = 1;   // 1 ≤ top_k ≤ experts
  bool renormalize = true;  // divide the selected weights by their sum
};

struct GroupRoutingOptions {
  std::int64_t top_k = 8;            // 1..=64, ≤ selected_groups × experts_per_group
  std::int64_t groups = 8;           // 1..=128, divides experts
  std::int64_t selected_groups = 4;  // 1 ≤ selected_groups ≤ groups
  bool group_top_two = true;         // group score: sum of the two largest c (else the largest)
  bool renormalize = true;
  float scale = 1.0f;                // finite, > 0
};

// The routing of T tokens over E experts.
class RUDNN_API RoutingPlan {
 public:
  RoutingPlan(Tensor expert_indices, Tensor weights, std::int64_t experts)
      : indices_(std::move(expert_indices)), weights_(std::move(weights)), experts_(experts) {}
  // [T, top_k] U32: the selected experts of each token, best first (ties: smaller index first).
  const Tensor& expert_indices() const { return indices_; }
  // [T, top_k], the logits' dtype: the weight of each selected expert.
  const Tensor& weights() const { return weights_; }
  std::int64_t tokens() const { return indices_.shape()[0]; }
  std::int64_t top_k() const { return indices_.shape()[1]; }
  std::int64_t experts() const { return experts_; }

 private:
  Tensor indices_, weights_;
  std::int64_t experts_;
};

// logits [T, E] F32/F16/BF16. Softmax over all E in FP32, the top_k experts (ties to the smaller
// index), optionally renormalized, converted to the logits' dtype. A row containing NaN or +inf,
// or of all −inf, gets NaN weights and the indices 0..top_k−1.
RUDNN_API Result<RoutingPlan, MoeError> route(const Tensor& logits, RoutingOptions options);

// logits [T, E] F32/F16/BF16, E ≤ 1024; bias F32 [E] (same device and queue), selection only.
// s = sigmoid(logit) in FP32, c = s + bias; group score = top-two sum or max of c; the
// selected_groups best groups, then the top_k experts by c among them (ties to the smaller index);
// weights = s (optionally renormalized) × scale. A row with a NaN score gets NaN weights and the
// indices 0..top_k−1.
RUDNN_API Result<RoutingPlan, MoeError> route_sigmoid_grouped(const Tensor& logits, const std::optional<Tensor>& bias,
                                                              GroupRoutingOptions options);

}  // namespace rudnn::moe
