#pragma once
// Oracles for the MoE routing of SPEC §3–§4. Plain C++, no code shared with the templates.
// Selection follows the SPEC's definitions at the precision the SPEC names, ties to the smaller index:
//   softmax routing: "softmax in FP32, then top-k" — the probabilities are computed in FP64 and
//     rounded to FP32, and those floats are ranked. Two logits whose probabilities round to the same
//     float tie (e.g. both underflow to 0). A kernel's own FP32 evaluation can differ from the
//     rounded FP64 value by an ulp or two, so the two orders agree exactly except between
//     probabilities within a few ulps of each other: tests whose inputs avoid such near ties (logits
//     on a coarse grid, or deep underflow) compare indices exactly; tests on arbitrary logits pass a
//     key tolerance to routing_mismatch (docs/moe.md).
//   grouped routing: c = FP32(sigmoid) + bias, computed in FP32 as SPEC §4 defines it; group scores
//     are FP32 sums; a NaN group score (+inf + −inf) ranks above every number (docs/moe.md).
// Weights are computed in FP64.
// Rows with NaN or +inf, or all −inf (softmax routing), or a NaN score (grouped routing): indices
// 0..top_k−1 and NaN weights — the behaviour the templates document.
#include <cstdint>
#include <string>
#include <vector>

namespace rudnn::reference {

struct Routing {
  std::vector<std::uint32_t> indices;  // [rows, top_k]
  std::vector<double> weights;         // [rows, top_k]
  // [rows, experts]: every expert's selection key (the FP64 probability; the FP32 corrected score c),
  // NaN on a poisoned row. Empty when the routing did not come from an oracle.
  std::vector<double> keys;
};

Routing route_softmax_topk(const std::vector<double>& logits, std::int64_t rows, std::int64_t experts,
                           std::int64_t top_k, bool renormalize);

// `bias` empty = none.
Routing route_sigmoid_grouped(const std::vector<double>& logits, const std::vector<float>& bias, std::int64_t rows,
                              std::int64_t experts, std::int64_t top_k, std::int64_t groups,
                              std::int64_t selected_groups, bool group_top_two, bool renormalize, double scale);

// How far a routing from a kernel may be from the oracle's.
struct RoutingTolerance {
  // Weights: |got − want| ≤ weight · (|want| + floor). `floor` is the weight dtype's smallest normal
  // number: below it the format has only absolute precision (and an FP32 probability that
  // underflows is 0 where FP64 still has e.g. 1e-60).
  double weight = 0;
  double floor = 0;
  // Indices: exact when both are 0. Otherwise a slot may hold a different expert than the oracle's
  // when their keys are within key_rel · max(|a|, |b|) + key_abs: a near tie that an FP32
  // evaluation on other hardware (another expf) may break either way.
  double key_rel = 0;
  double key_abs = 0;
};

// "" when `indices` and `weights` ([rows, top_k] each) match `want` for a routing over `experts`
// experts, else a description of the first mismatch. Sizes are checked first; indices must be in
// range and distinct within a row; a poisoned row (NaN oracle weights) must have indices
// 0..top_k−1 and NaN weights.
std::string routing_mismatch(const Routing& want, std::int64_t experts, std::int64_t top_k,
                             const std::vector<std::uint32_t>& indices, const std::vector<double>& weights,
                             const RoutingTolerance& tol);

// SwiGLU experts over compact per-expert rows (SPEC §3): rows [N, H]; expert e owns rows
// [offsets[e], offsets[e+1]); gate, up [E, I, H]; down [E, H, I] (row-major). FP64 throughout.
//   act[r, i] = silu(gate_e[i]·x_r) · (up_e[i]·x_r)        silu(z) = z / (1 + e^−z)
//   out[r, h] = Σ_i down_e[h, i] · act[r, i]
// Tests that check expert_down alone round act to the kernel's storage dtype first.
std::vector<double> swiglu_act(const std::vector<double>& rows, const std::vector<std::uint32_t>& offsets,
                               const std::vector<double>& gate, const std::vector<double>& up, std::int64_t hidden,
                               std::int64_t inter);
std::vector<double> expert_down(const std::vector<double>& act, const std::vector<std::uint32_t>& offsets,
                                const std::vector<double>& down, std::int64_t hidden, std::int64_t inter);

// The whole MoE forward of SPEC §3 on token order: input [T, H], a routing (indices/weights
// [T, top_k]), experts as above → out[t] = Σ_j weights[t, j] · expert_{indices[t, j]}(input[t]).
std::vector<double> moe_forward(const std::vector<double>& input, const Routing& routing, std::int64_t top_k,
                                const std::vector<double>& gate, const std::vector<double>& up,
                                const std::vector<double>& down, std::int64_t experts, std::int64_t hidden,
                                std::int64_t inter);

}  // namespace rudnn::reference
