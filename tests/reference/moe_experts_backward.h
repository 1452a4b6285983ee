#pragma once
// Oracles for the SwiGLU experts' backward of SPEC §10 and for the whole first-order MoE training
// chain (router weights → dispatch → experts → combine → loss Σ out²). Plain C++, FP64 throughout,
// no code shared with the templates.
//   experts backward, for expert e's rows X (rows [offsets[e], offsets[e+1])) and their output
//   gradient dY:
//     A = X·gate_eᵀ, B = X·up_eᵀ, Hh = silu(A) ⊙ B, Y = Hh·down_eᵀ     silu(z) = z·σ(z)
//     dHh = dY·down_e;  dA = dHh ⊙ B ⊙ silu'(A), silu'(z) = σ(z)·(1 + z·(1 − σ(z)));  dB = dHh ⊙ silu(A)
//     dX = dA·gate_e + dB·up_e;  dgate_e = dAᵀX, dup_e = dBᵀX, ddown_e = dYᵀHh  (summed over the rows;
//     an expert with no rows: zeros).
//   chain: weights w = router weights of the fixed selection `indices` (Softmax: softmax over all E,
//     the selected entries; Sigmoid: σ of each selected logit; optionally divided by their sum; times
//     scale); out[t] = Σ_j w[t, j] · expert_{indices[t, j]}(input[t]); loss = Σ out². The gradients
//     are the analytic chain (the tests check them once against central differences of moe_chain_loss).
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct ExpertsGrads {
  std::vector<double> dinput;  // [N, H] in rows order
  std::vector<double> dgate;   // [E, I, H]
  std::vector<double> dup;     // [E, I, H]
  std::vector<double> ddown;   // [E, H, I]
};

// rows, dy [N, H]; offsets [E + 1] (E = offsets.size() − 1); gate, up [E, I, H]; down [E, H, I].
ExpertsGrads swiglu_experts_backward(const std::vector<double>& rows, const std::vector<double>& dy,
                                     const std::vector<std::uint32_t>& offsets, const std::vector<double>& gate,
                                     const std::vector<double>& up, const std::vector<double>& down,
                                     std::int64_t hidden, std::int64_t inter);

// The router weights' definition (RouterWeightOptions).
struct ChainRouter {
  bool sigmoid = false;  // RouterScoring::Sigmoid (else Softmax)
  bool renormalize = true;
  double scale = 1.0;
};

// One MoE layer with a fixed selection.
struct MoeChain {
  std::int64_t tokens = 0, experts = 0, top_k = 0, hidden = 0, inter = 0;
  std::vector<double> input;           // [T, H]
  std::vector<double> logits;          // [T, E]
  std::vector<std::uint32_t> indices;  // [T, top_k], every index < E
  std::vector<double> gate, up, down;  // [E, I, H], [E, I, H], [E, H, I]
  ChainRouter router;
};

std::vector<double> moe_chain_weights(const MoeChain& c);  // [T, top_k]
std::vector<double> moe_chain_output(const MoeChain& c);   // [T, H]
double moe_chain_loss(const MoeChain& c);                  // Σ out²

struct ChainGrads {
  std::vector<double> output;    // [T, H]
  std::vector<double> dlogits;   // [T, E]
  std::vector<double> dinput;    // [T, H]
  std::vector<double> dgate;     // [E, I, H]
  std::vector<double> dup;       // [E, I, H]
  std::vector<double> ddown;     // [E, H, I]
  std::vector<double> dweights;  // [T, top_k]: ∂loss/∂w (what combine_backward returns)
};

ChainGrads moe_chain_backward(const MoeChain& c);

}  // namespace rudnn::reference
