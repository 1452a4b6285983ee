#pragma once
// Oracles for the MoE first-order training of SPEC §10 (router weights and their gradient, combine
// and dispatch backward). Plain C++, FP64 throughout, no code shared with the templates.
//   router weights: logits x [T, E], indices i [T, top_k] (any integers) →
//     Softmax: u_j = softmax(x_t)[i_j] (over all E);  Sigmoid: u_j = sigmoid(x_t[i_j]);
//     w_j = u_j / Σ_j' u_j' when renormalizing (a repeated index counts each time), else u_j;
//     then w_j · scale. A row with an index < 0 or ≥ E: every weight NaN.
//   router backward: g [T, top_k] → ∂(Σ_j g_j w_j)/∂x [T, E], written analytically (the chain
//     through u); a row with an illegal index: all E entries NaN. router_backward_fd is the same
//     gradient by central finite differences of router_weights, to check the analytic one.
//   combine: out[t] = Σ_j w[t, j] · y[slots[t, j]];  its backward for grad_output g [T, H]:
//     dexpert[slots[t, j]] = w[t, j] · g[t];  dweights[t, j] = Σ_h g[t, h] · y[slots[t, j], h].
//   dispatch backward: drows [T·top_k, H] → out[t] = Σ_j drows[slots[t, j]] (no weight).
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct RouterSpec {
  bool sigmoid = false;  // RouterScoring::Sigmoid (else Softmax)
  bool renormalize = true;
  double scale = 1.0;
};

// [rows, top_k].
std::vector<double> router_weights(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                   std::int64_t rows, std::int64_t experts, std::int64_t top_k, const RouterSpec& spec);

// [rows, experts]: the analytic gradient.
std::vector<double> router_backward(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                    const std::vector<double>& grad_weights, std::int64_t rows, std::int64_t experts,
                                    std::int64_t top_k, const RouterSpec& spec);

// [rows, experts]: central differences of Σ_j g_j w_j with step `step` (legal rows only; NaN rows
// as above).
std::vector<double> router_backward_fd(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                       const std::vector<double>& grad_weights, std::int64_t rows, std::int64_t experts,
                                       std::int64_t top_k, const RouterSpec& spec, double step = 1e-6);

// [rows, hidden]; y [rows·top_k, hidden] in slot order.
std::vector<double> combine(const std::vector<double>& expert_output, const std::vector<std::uint32_t>& slots,
                            const std::vector<double>& weights, std::int64_t rows, std::int64_t top_k,
                            std::int64_t hidden);

struct CombineGrads {
  std::vector<double> dexpert;   // [rows·top_k, hidden] in slot order
  std::vector<double> dweights;  // [rows, top_k]
};

CombineGrads combine_backward(const std::vector<double>& expert_output, const std::vector<double>& grad_output,
                              const std::vector<std::uint32_t>& slots, const std::vector<double>& weights,
                              std::int64_t rows, std::int64_t top_k, std::int64_t hidden);

// [rows, hidden].
std::vector<double> dispatch_backward(const std::vector<double>& drows, const std::vector<std::uint32_t>& slots,
                                      std::int64_t rows, std::int64_t top_k, std::int64_t hidden);

}  // namespace rudnn::reference
