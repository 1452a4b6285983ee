#pragma once
// Oracles for the MoE routing of SPEC §3–§4. Plain C++, no code shared with the templates.
// Selection is exact: softmax routing ranks the logits (the exact order of the softmax), grouped
// routing ranks c = FP32(sigmoid) + bias computed in FP32 as SPEC §4 defines it; ties go to the
// smaller index. Weights are computed in FP64.
// Rows with NaN or +inf, or all −inf (softmax routing), or a NaN score (grouped routing): indices
// 0..top_k−1 and NaN weights — the behaviour the templates document.
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct Routing {
  std::vector<std::uint32_t> indices;  // [rows, top_k]
  std::vector<double> weights;         // [rows, top_k]
};

Routing route_softmax_topk(const std::vector<double>& logits, std::int64_t rows, std::int64_t experts,
                           std::int64_t top_k, bool renormalize);

// `bias` empty = none.
Routing route_sigmoid_grouped(const std::vector<double>& logits, const std::vector<float>& bias,
                              std::int64_t rows, std::int64_t experts, std::int64_t top_k, std::int64_t groups,
                              std::int64_t selected_groups, bool group_top_two, bool renormalize, double scale);

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
