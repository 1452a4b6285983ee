#pragma once
// The gated delta rule contracts of SPEC §7, written once over plain shapes and dtypes. The public
// entries (rudnn/gated_delta.h) and the dialect verifiers both call them.
#include <cstdint>
#include <optional>
#include <string>

#include "contracts/normalization.h"  // NormOperand, kDynamic
#include "rudnn/shared_memory.h"
#include "rudnn/error.h"

namespace rudnn::contracts {

using GatedDeltaOperand = NormOperand;

// Kernel limits: K and V up to 256 (the recurrence keeps a K×32 slice of the state in registers).
inline constexpr std::int64_t kMaxGatedDeltaDim = 256;
// The largest chunk any device could hold: 4·(C² + C) bytes of scratch alone exceed every GPU's
// shared memory long before this, and the bound keeps every size formula far from overflow.
inline constexpr std::int64_t kMaxChunkSize = 1024;

struct GatedDeltaSignature {
  GatedDeltaOperand query, key;                    // [B, H, T, K], one float dtype
  GatedDeltaOperand value;                         // [B, H, T, V], the query dtype
  GatedDeltaOperand beta, log_decay;               // [B, H, T], the query dtype or f32 (both the same)
  std::optional<GatedDeltaOperand> initial_state;  // f32 [B, H, K, V]; absent = zeros
  double query_scale = 1.0;
  std::int64_t chunk_size = 0;  // 0: the recurrent entry; > 0: chunked
};

// The first violated contract line, or nothing. Order: query, key, value, beta, log_decay,
// initial_state (dtype, rank, extents, device), then query_scale, then chunk_size. Dynamic
// extents (kDynamic) pass the checks needing them. The chunk's shared-memory bound is separate
// (check_chunk_shared_memory) because it needs the device.
std::optional<GatedDeltaError> check_gated_delta(const GatedDeltaSignature& sig);

// SPEC §7: 4·(C² + C) bytes ≤ `shared_limit` (InvalidValue), and the chunked kernel's real need for
// the smallest V slice, chunk_shared_bytes(C, K, smallest_chunk_columns(tensor_core), tensor_core),
// ≤ `shared_limit` (Unsupported). The limit is the device's per-block shared memory with opt-in;
// `tensor_core`: the f16/bf16 path.
std::optional<GatedDeltaError> check_chunk_shared_memory(std::int64_t chunk_size, std::int64_t key_dim,
                                                         std::int64_t shared_limit, bool tensor_core);

// The narrowest V slice of the registered chunk tiles (dialect's gated_delta_config::chunkTiles; a
// test holds the two together): 16 columns on tensor cores, 32 on the plain cores.
inline constexpr std::int64_t smallest_chunk_columns(bool tensor_core) { return tensor_core ? 16 : 32; }

// Bytes of dynamic shared memory gated_delta_chunked needs for chunk C, K and a V slice of `bv`
// columns: the template's own formula (rudnn::shared_memory::gated_delta_chunk, shared with
// ChunkPolicy::shared_bytes, which spells it out). E.g. C = 64, K = 128 on tensor cores: 125440
// bytes at BV = 32, 92672 at BV = 16.
inline std::int64_t chunk_shared_bytes(std::int64_t c, std::int64_t k, std::int64_t bv, bool tensor_core = false) {
  return rudnn::shared_memory::gated_delta_chunk(c, k, bv, tensor_core);
}

// "query [2, 4, 64, 128] bf16, ..., chunk_size 64"
std::string describe_call(const GatedDeltaSignature& sig);

}  // namespace rudnn::contracts
