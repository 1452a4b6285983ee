#pragma once
// The kernel configuration space of rudnn.attention (templates/rudnn/attention/): the strategy that
// runs and its tile, shared by the verifier, rudnn-select-kernel-config, rudnn-resolve-strategy,
// the lowering and the variant registry. The shared-memory formulas mirror the policies' own.
//   strategy 0 flash_mma:  FlashMmaPolicy<D, block_m, block_n>            {strategy, block_m, block_n}
//                          or, with wgmma = 1 (the key omitted when 0), FlashWgmmaPolicy<D, block_m,
//                          block_n> on Hopper's warpgroup MMA (sm_90a only, contracts::has_wgmma)
//                                                {strategy, block_m, block_n, wgmma}
//   strategy 1 flash_unit: FlashUnitPolicy<block_m, block_n, threads_per_row, max_value_dim>
//                                                {strategy, block_m, block_n, threads_per_row, max_value_dim}
//   strategy 2 fallback:   scores/weighted sum FallbackTilePolicy (block_m 64: <64,64,16,4,4>, 16:
//                          <16,64,16,1,4>), softmax FallbackSoftmaxPolicy<softmax_threads, 256/...>
//                                                {strategy, block_m, softmax_threads}
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/arch.h"
#include "rudnn/dtype.h"

namespace rudnn::dialect::attention_config {

inline constexpr const char* kStrategy = "strategy";
inline constexpr const char* kBlockM = "block_m";
inline constexpr const char* kBlockN = "block_n";
inline constexpr const char* kThreadsPerRow = "threads_per_row";
inline constexpr const char* kMaxValueDim = "max_value_dim";
inline constexpr const char* kSoftmaxThreads = "softmax_threads";
inline constexpr const char* kWgmma = contracts::kWgmmaConfigKey;

enum class Kind : std::int64_t { FlashMma = 0, FlashUnit = 1, Fallback = 2 };

struct Tile {
  Kind kind = Kind::Fallback;
  std::int64_t blockM = 0, blockN = 0;              // flash_mma, flash_unit; fallback: block_m only
  std::int64_t threadsPerRow = 0, maxValueDim = 0;  // flash_unit
  std::int64_t softmaxThreads = 0;                  // fallback: threads per score row in the softmax
  std::int64_t headDim = 0;                         // flash_mma: the D it is registered for (not a key)
  bool wgmma = false;                               // flash_mma: flash_attention_wgmma (FlashWgmmaPolicy)
  bool operator==(const Tile&) const = default;
};

// Every registered tile that serves (dtype, D, Dv), fastest-first by expectation, the wgmma tiles of
// flash_mma last; the heuristic takes the first of the first strategy that fits (flash_mma, then
// flash_unit, then fallback), a wgmma tile first where the target has wgmma.
std::vector<Tile> tilesFor(Kind kind, DType dtype, std::int64_t headDim, std::int64_t valueDim);

// The threads of the strategy's main kernel and the dynamic shared memory of each launch.
std::int64_t threads(const Tile& t);
std::int64_t flashMmaSharedBytes(const Tile& t);  // shared_memory::flash_mma, or flash_wgmma
std::int64_t flashUnitSharedBytes(const Tile& t, std::int64_t headDim, std::int64_t valueDim);
std::int64_t fallbackTileSharedBytes(const Tile& t);  // (BM + BN + 8)·BK·4
std::int64_t fallbackSoftmaxRows(const Tile& t);      // rows per block
std::int64_t fallbackSoftmaxSharedBytes(const Tile& t);

// Why `t` cannot serve (dtype, D, Dv), or nothing.
std::optional<std::string> checkTile(const Tile& t, DType dtype, std::int64_t headDim, std::int64_t valueDim);

std::string describe(const Tile& t);

}  // namespace rudnn::dialect::attention_config
