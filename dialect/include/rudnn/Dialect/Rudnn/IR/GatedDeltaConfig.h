#pragma once
// The kernel configuration spaces of the gated delta kernels (templates/rudnn/gated_delta/),
// shared by the op verifier, rudnn-select-kernel-config, the lowering and the variant registry.
//   recurrence: {warps, rows_per_thread} → RecurrentPolicy<warps, rows_per_thread> (8 staged steps);
//               K ≤ 4·warps·rows_per_thread; one block per (b, h, 32 state columns).
//   chunked:    {threads, columns, tensor_core} → ChunkPolicy<threads, columns, tensor_core>; one block per
//               (b, h, columns); tensor_core = 1 (f16/bf16 only) computes the chunk's key products and
//               the state products on mma.sync.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rudnn/shared_memory.h"

namespace rudnn::dialect::gated_delta_config {

inline constexpr const char* kWarps = "warps";
inline constexpr const char* kRowsPerThread = "rows_per_thread";
inline constexpr const char* kThreads = "threads";
inline constexpr const char* kColumns = "columns";
inline constexpr const char* kTensorCore = "tensor_core";

struct RecurrentTile {
  std::int64_t warps = 4, rowsPerThread = 4;
  std::int64_t maxKeyDim() const { return 4 * warps * rowsPerThread; }
  std::int64_t threads() const { return 32 * warps; }
  // RecurrentPolicy::kSharedBytes (8 staged steps).
  std::int64_t sharedBytes() const { return shared_memory::gated_delta_recurrent(warps, rowsPerThread, 8); }
  bool operator==(const RecurrentTile&) const = default;
};

struct ChunkTile {
  std::int64_t threads = 256, columns = 32;
  bool tensorCore = false;
  bool operator==(const ChunkTile&) const = default;
};

// The registered tiles (each verified spill-free for sm_80 and sm_90a).
const std::vector<RecurrentTile>& recurrentTiles();  // K ≤ 64, 128, 256
const std::vector<ChunkTile>& chunkTiles();

// Why the tile cannot serve key_dim (recurrence) or is not registered, or nothing.
std::optional<std::string> checkRecurrentTile(const RecurrentTile& t, std::int64_t keyDim);
std::optional<std::string> checkChunkTile(const ChunkTile& t, bool halfPrecision);

}  // namespace rudnn::dialect::gated_delta_config
