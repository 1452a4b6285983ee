#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rudnn/shared_memory.h"

namespace rudnn::dialect::moe_config {

std::vector<std::int64_t> rowVectorWidths(DType dtype, std::int64_t h) {
  const std::int64_t elemBytes = static_cast<std::int64_t>(dtype_size(dtype));
  if (h < 0 || elemBytes == 0) return {1};
  std::vector<std::int64_t> widths;
  for (std::int64_t w = std::max<std::int64_t>(1, 16 / elemBytes); w >= 1; w /= 2)
    if (h % w == 0) widths.push_back(w);
  return widths;
}

std::optional<std::string> checkRowCopyConfig(const RowCopyConfig& c, DType dtype, std::int64_t h) {
  if (std::find(kRowThreadsChoices.begin(), kRowThreadsChoices.end(), c.threads) == kRowThreadsChoices.end())
    return fmt::format("threads must be 64, 128 or 256, got {}", c.threads);
  const std::vector<std::int64_t> widths = rowVectorWidths(dtype, h);
  if (std::find(widths.begin(), widths.end(), c.vectorWidth) == widths.end())
    return fmt::format("vector_width {} is not legal for {} rows of {} (legal: {})", c.vectorWidth, dtype_name(dtype),
                       h < 0 ? std::string("?") : std::to_string(h), fmt::join(widths, ", "));
  return std::nullopt;
}

const std::vector<ExpertTile>& scalarTiles() {
  static const std::vector<ExpertTile> tiles = {
      {false, 16, 32, 16, 2, 2, 0},  // small loads (decode): 128 threads
      {false, 32, 64, 16, 4, 4, 0},  // 128 threads, 16 outputs per thread
      {false, 64, 64, 16, 4, 4, 0},  // 256 threads
  };
  return tiles;
}

const std::vector<ExpertTile>& tensorCoreTiles() {
  static const std::vector<ExpertTile> tiles = {
      {true, 16, 64, 64, 1, 4, 3},    // decode-like loads: 4 warps side by side over N
      {true, 64, 64, 32, 2, 2, 4},    // 4 warps, 32x32 of C each
      {true, 128, 128, 32, 2, 4, 3},  // prefill: 8 warps, 64x32 of C each (≈244 registers in gate_up)
      // Hopper's warpgroup MMA (sm_90a, contracts::has_wgmma; gate and up in one two-B engine):
      {true, 64, 128, 64, 4, 1, 4, true},   // one warpgroup: mid-size loads
      {true, 128, 128, 64, 8, 1, 4, true},  // two warpgroups: prefill (197632 B of shared memory)
  };
  return tiles;
}

const std::vector<ExpertTile>& backwardTiles() {
  static const std::vector<ExpertTile> tiles = [] {
    std::vector<ExpertTile> t = scalarTiles();
    t.push_back({true, 64, 64, 32, 2, 2, 3});         // 4 warps of 32x32
    t.push_back({true, 128, 64, 32, 4, 2, 3});        // 8 warps of 32x32
    t.push_back({true, 128, 64, 64, 8, 1, 4, true});  // wgmma: 2 warpgroups of 64x64, one group in flight
    return t;
  }();
  return tiles;
}

// ScalarGemmPolicy / MmaGemmPolicy / WgmmaExpertsPolicy::kSharedBytes{GateUp,Down}: the templates'
// own formulas.
namespace {

std::int64_t expertsSharedBytes(const ExpertTile& t, std::int64_t operands) {
  if (t.wgmma) return shared_memory::experts_wgmma(t.stages, t.blockM, t.blockN, t.blockK, operands);
  if (t.tensorCore) return shared_memory::experts_mma(t.stages, t.blockM, t.blockN, t.blockK, operands);
  return shared_memory::experts_scalar(t.blockM, t.blockN, t.blockK, operands);
}

}  // namespace

std::int64_t gateUpSharedBytes(const ExpertTile& t) { return expertsSharedBytes(t, 2); }
std::int64_t downSharedBytes(const ExpertTile& t) { return expertsSharedBytes(t, 1); }

std::optional<std::string> checkExpertTile(const ExpertTile& t) {
  const auto& tiles = t.tensorCore ? tensorCoreTiles() : scalarTiles();
  if (std::find(tiles.begin(), tiles.end(), t) != tiles.end()) return std::nullopt;
  std::vector<std::string> names;
  for (const ExpertTile& k : tiles) names.push_back(describe(k));
  return fmt::format("{} is not a registered tile (registered: {})", describe(t), fmt::join(names, "; "));
}

std::string describe(const ExpertTile& t) {
  if (t.wgmma) return fmt::format("wgmma {}x{}x{} s{}", t.blockM, t.blockN, t.blockK, t.stages);
  if (t.tensorCore)
    return fmt::format("tensor_core {}x{}x{} w{}x{} s{}", t.blockM, t.blockN, t.blockK, t.a, t.b, t.stages);
  return fmt::format("scalar {}x{}x{} t{}x{}", t.blockM, t.blockN, t.blockK, t.a, t.b);
}

}  // namespace rudnn::dialect::moe_config
