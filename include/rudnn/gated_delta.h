#pragma once
// The gated delta rule (SPEC §7; Gated DeltaNet as in Qwen3-Next-style hybrid models). Per step t,
// with the state S (K×V, FP32):
//   S ← S·exp(g_t);  u_t = β_t (v_t − Sᵀk_t);  S ← S + k_t u_tᵀ;  o_t = Sᵀ(query_scale · q_t)
// chunk_gated_delta_rule (prefill) computes it C steps at a time in the WY form; gated_delta_rule
// (decode, and any length) one step at a time. Both equal the recurrence to rounding. A rejected call
// returns a GatedDeltaError and launches nothing; initial_state is never written.
#include <cstdint>
#include <optional>

#include "rudnn/error.h"
#include "rudnn/export.h"
#include "rudnn/tensor.h"

namespace rudnn::gated_delta {

using rudnn::GatedDeltaError;

struct GatedDeltaInput {
  Tensor query;      // [B, H, T, K]  f32/f16/bf16, normalized by the caller
  Tensor key;        // [B, H, T, K]  the query dtype
  Tensor value;      // [B, H, T, V]  the query dtype
  Tensor beta;       // [B, H, T]     the query dtype or f32
  Tensor log_decay;  // [B, H, T]     the dtype of beta; any value (a decay is ≤ 0; others: docs/gated_delta.md)
  std::optional<Tensor> initial_state;  // f32 [B, H, K, V]; absent = zeros
  float query_scale = 1.0f;             // finite
};

struct GatedDeltaOutput {
  Tensor output;       // [B, H, T, V] in the query dtype
  Tensor final_state;  // f32 [B, H, K, V]: the next segment's initial_state
};

// 1 ≤ chunk_size ≤ 1024 (contracts::kMaxChunkSize) with 4·(C² + C) bytes ≤ the device's shared memory per block (and
// the kernel's real need for C and K within it); the tail chunk is zero-padded internally. K, V ≤ 256.
RUDNN_API Result<GatedDeltaOutput, GatedDeltaError> chunk_gated_delta_rule(const GatedDeltaInput& input,
                                                                           std::int64_t chunk_size);
RUDNN_API Result<GatedDeltaOutput, GatedDeltaError> gated_delta_rule(const GatedDeltaInput& input);
// The same into the caller's buffers (SPEC §13): out.output [B, H, T, V] in the query dtype and
// out.final_state f32 [B, H, K, V], contiguous, on the query's device and queue, overlapping no
// input and each other (the state is not updated in place: pass another buffer as initial_state).
// A rejected call names the buffer and writes nothing.
RUDNN_API Status<GatedDeltaError> chunk_gated_delta_rule_into(const GatedDeltaInput& input, std::int64_t chunk_size,
                                                              const GatedDeltaOutput& out);
RUDNN_API Status<GatedDeltaError> gated_delta_rule_into(const GatedDeltaInput& input, const GatedDeltaOutput& out);

}  // namespace rudnn::gated_delta
