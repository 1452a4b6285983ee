#include "rudnn/Dialect/Rudnn/IR/PagedAttentionConfig.h"

#include <algorithm>
#include <fmt/format.h>

#include "rudnn/paged/shared_memory.h"

namespace rudnn::dialect::paged_config {

namespace {

bool powerOfTwo(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::int64_t nextPowerOfTwo(std::int64_t v) {
  std::int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// The value columns each lane accumulates in registers (the template's bound).
constexpr std::int64_t kMaxValuesPerLane = 64;

// A tile of `rows` × `lanes` with `keys`-key tiles, its max_value_dim fitted to `s`.
Tile fitted(std::int64_t rows, std::int64_t keys, std::int64_t lanes, const Shape& s) {
  return {rows, keys, lanes, std::max(nextPowerOfTwo(s.valueDim), lanes)};
}

}  // namespace

std::int64_t threads(const Tile& t) { return t.blockRows * t.rowLanes; }

std::int64_t sharedBytes(const Tile& t, const Shape& s) {
  return shared_memory::paged_unit(t.blockRows, t.blockKeys, s.keyDim, 0, s.valueDim, s.valueFromKey);
}

Tile heuristicTile(const Shape& s) {
  const std::int64_t rows = std::clamp<std::int64_t>(nextPowerOfTwo(s.group), 4, 16);
  std::int64_t lanes = 128 / rows;
  while (lanes < 32 && nextPowerOfTwo(s.valueDim) > 32 * lanes) lanes *= 2;
  Tile t = fitted(rows, 32, lanes, s);
  if (sharedBytes(t, s) > kMaxSharedBytes) t = fitted(4, 16, 16, s);  // the widest dims: 16-key tiles
  return t;
}

std::vector<Tile> candidates(const Shape& s) {
  std::vector<Tile> out = {heuristicTile(s)};
  const std::int64_t shapes[][3] = {{4, 32, 32}, {8, 32, 16}, {16, 32, 8}, {16, 32, 32}, {32, 32, 4}, {4, 16, 16}};
  for (const auto& c : shapes) {
    const Tile t = fitted(c[0], c[1], c[2], s);
    if (!checkTile(t, s) && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

std::optional<std::string> checkTile(const Tile& t, const Shape& s) {
  if (!powerOfTwo(t.blockRows) || t.blockRows > 64)
    return fmt::format("block_rows: a power of two ≤ 64, got {}", t.blockRows);
  if (!powerOfTwo(t.rowLanes) || t.rowLanes > 32)
    return fmt::format("row_lanes: a power of two ≤ 32, got {}", t.rowLanes);
  if (threads(t) % 32 != 0 || threads(t) > 1024)
    return fmt::format("block_rows · row_lanes: whole warps, at most 1024 threads, got {}", threads(t));
  if (t.blockKeys < 4 || t.blockKeys > 128 || t.blockKeys % 4 != 0 || t.blockKeys % t.rowLanes != 0)
    return fmt::format("block_keys: a multiple of 4 and of row_lanes in 4..=128, got {}", t.blockKeys);
  if (!powerOfTwo(t.maxValueDim) || t.maxValueDim < s.valueDim || t.maxValueDim % t.rowLanes != 0 ||
      t.maxValueDim / t.rowLanes > kMaxValuesPerLane || t.maxValueDim > 1024)
    return fmt::format(
        "max_value_dim: a power of two ≥ value_dim {} and ≥ row_lanes, ≤ 1024, at most {} per lane; got {}", s.valueDim,
        kMaxValuesPerLane, t.maxValueDim);
  if (sharedBytes(t, s) > kMaxSharedBytes)
    return fmt::format("{} needs {} bytes of shared memory for key dim {} value dim {} (at most {})", describe(t),
                       sharedBytes(t, s), s.keyDim, s.valueDim, kMaxSharedBytes);
  return std::nullopt;
}

std::vector<std::pair<std::string, std::int64_t>> valuesOf(const Tile& t) {
  return {{kBlockRows, t.blockRows}, {kBlockKeys, t.blockKeys}, {kRowLanes, t.rowLanes}, {kMaxValueDim, t.maxValueDim}};
}

std::optional<Tile> tileOf(const std::vector<std::pair<std::string, std::int64_t>>& values) {
  Tile t;
  int seen = 0;
  for (const auto& [k, v] : values) {
    if (k == kBlockRows)
      t.blockRows = v;
    else if (k == kBlockKeys)
      t.blockKeys = v;
    else if (k == kRowLanes)
      t.rowLanes = v;
    else if (k == kMaxValueDim)
      t.maxValueDim = v;
    else
      return std::nullopt;
    ++seen;
  }
  if (seen != 4) return std::nullopt;
  return t;
}

std::string describe(const Tile& t) {
  return fmt::format("paged_unit {}x{} lanes{} dv{}", t.blockRows, t.blockKeys, t.rowLanes, t.maxValueDim);
}

}  // namespace rudnn::dialect::paged_config
