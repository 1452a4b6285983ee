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

}  // namespace rudnn::reference
