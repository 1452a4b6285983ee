#include "rudnn/Dialect/Rudnn/IR/GatedDeltaConfig.h"

#include <algorithm>
#include <fmt/format.h>

namespace rudnn::dialect::gated_delta_config {

const std::vector<RecurrentTile>& recurrentTiles() {
  static const std::vector<RecurrentTile> tiles = {{4, 4}, {4, 8}, {8, 8}};
  return tiles;
}

const std::vector<ChunkTile>& chunkTiles() {
  // 16-column tensor-core slices (autotune candidates; the heuristic takes 32 where it fits): twice
  // the blocks and ~3/4 of the shared memory (92672 bytes at C = 64, K = 128: two blocks per SM on
  // sm_90, where 32 columns hold one, and the only tile for it on sm_86/sm_89), for the key-only
  // work done twice as often. contracts::smallest_chunk_columns names the narrowest per path.
  static const std::vector<ChunkTile> tiles = {{128, 32, false}, {256, 32, false}, {256, 64, false}, {128, 32, true},
                                               {256, 32, true},  {256, 64, true},  {128, 16, true},  {256, 16, true}};
  return tiles;
}

std::optional<std::string> checkRecurrentTile(const RecurrentTile& t, std::int64_t keyDim) {
  const auto& tiles = recurrentTiles();
  if (std::find(tiles.begin(), tiles.end(), t) == tiles.end())
    return fmt::format("{{warps = {}, rows_per_thread = {}}} is not a registered recurrence tile (4x4, 4x8, 8x8)",
                       t.warps, t.rowsPerThread);
  if (keyDim > t.maxKeyDim())
    return fmt::format("warps = {}, rows_per_thread = {} holds key_dim <= {}, got {}", t.warps, t.rowsPerThread,
                       t.maxKeyDim(), keyDim);
  return std::nullopt;
}

std::optional<std::string> checkChunkTile(const ChunkTile& t, bool halfPrecision) {
  const auto& tiles = chunkTiles();
  if (std::find(tiles.begin(), tiles.end(), t) == tiles.end())
    return fmt::format(
        "{{threads = {}, columns = {}}} is not a registered chunk tile (128x32, 256x32, 256x64; tensor cores also "
        "128x16, 256x16)",
        t.threads, t.columns);
  if (t.tensorCore && !halfPrecision) return std::string("tensor_core = 1 needs f16 or bf16 inputs");
  return std::nullopt;
}

}  // namespace rudnn::dialect::gated_delta_config
