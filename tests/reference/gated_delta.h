#pragma once
// FP64 oracle of the gated delta rule (SPEC §7): the token-by-token recurrence, literally, in double.
// No code shared with the kernel templates. Tensors are row-major:
//   query, key [B, H, T, K]; value [B, H, T, V]; beta, log_decay [B, H, T];
//   initial_state [B, H, K, V] (empty = zeros).
// Per (b, h), with S (K×V) = initial_state[b, h], for t = 0 .. T−1:
//   S ← e^{g_t} S;  u_t = β_t (v_t − Sᵀ k_t);  S ← S + k_t u_tᵀ;  o_t = Sᵀ (query_scale · q_t).
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct GatedDeltaResult {
  std::vector<double> output;       // [B, H, T, V]
  std::vector<double> final_state;  // [B, H, K, V]
};

struct GatedDeltaShape {
  std::int64_t batch, heads, seq, key_dim, value_dim;
};

GatedDeltaResult gated_delta(const std::vector<double>& query, const std::vector<double>& key,
                             const std::vector<double>& value, const std::vector<double>& beta,
                             const std::vector<double>& log_decay, const std::vector<double>& initial_state,
                             const GatedDeltaShape& shape, double query_scale);

}  // namespace rudnn::reference
