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

// A plain tile of `rows` × `lanes` with `keys`-key tiles, its max_value_dim fitted to `s`.
Tile fitted(std::int64_t rows, std::int64_t keys, std::int64_t lanes, const Shape& s) {
  return {false, rows, keys, lanes, std::max(nextPowerOfTwo(s.valueDim), lanes)};
}

// The head dims the tensor-core attention kernel is built for (attention/flash_mma's).
bool mmaHeadDim(std::int64_t d) { return d == 64 || d == 96 || d == 128 || d == 256; }
// MLA on tensor cores (paged/mla_mma.cuh, MlaMmaPolicy): R a multiple of 128 up to 512 (8 warps of
// R / 8 output columns, whole n16 pairs), Pr a multiple of 16 in 16..=256, and the 32-key tile
// within sm_80's 163 KiB of shared memory (R = 512: Pr ≤ 96), so that no sm_80+ target the
// heuristic sends there refuses the launch.
constexpr std::int64_t kSm80SharedBytes = 163 * 1024;
std::int64_t ropeDim(const Shape& s) { return s.keyDim - s.valueDim; }
bool mlaMmaServes(const Shape& s) {
  const std::int64_t rope = ropeDim(s);
  return s.valueDim % 128 == 0 && s.valueDim <= 512 && rope % 16 == 0 && rope >= 16 && rope <= 256 &&
         shared_memory::paged_mla_mma(32, s.valueDim, rope) <= kSm80SharedBytes;
}
bool mmaServes(const Shape& s) {
  if (!s.halfPrecision) return false;
  if (s.valueFromKey) return mlaMmaServes(s);
  return s.keyDim == s.valueDim && mmaHeadDim(s.keyDim);
}
// Attention: 64 panel rows (one m16 tile per warp); 64-key tiles, 32 at D = 256
// (attention/flash_mma.cuh's register table: 64 keys at D = 256 need sm_90's shared memory).
// MLA: 64 panel rows, 32-key tiles (two stages of 576-column rows next to Q fit sm_80's 163 KiB).
Tile mmaTile(const Shape& s) {
  if (s.valueFromKey) return {true, 64, 32, 0, s.valueDim};
  return {true, 64, s.keyDim == 256 ? 32 : 64, 0, s.keyDim};
}
// The wgmma kernels. Attention (paged/wgmma.cuh): D = Dv in whole 64-column swizzle panels, one
// warpgroup of 64 panel rows, the mma.sync tile's key tiles (at D = 256 O alone is 128 registers).
// MLA (paged/mla_wgmma.cuh): two warpgroups of R / 2 output columns each (the wrappers' N: 64, 128
// or 256), R + Pr whole swizzle panels, 64-key tiles within the largest shared memory (R = 512:
// Pr = 64 only, DeepSeek's).
bool mlaWgmmaServes(const Shape& s) {
  const std::int64_t rope = ropeDim(s);
  return (s.valueDim == 128 || s.valueDim == 256 || s.valueDim == 512) && rope % 16 == 0 && rope >= 16 && rope <= 256 &&
         s.keyDim % 64 == 0 && shared_memory::paged_mla_wgmma(s.valueDim, rope) <= kMaxSharedBytes;
}
bool wgmmaServes(const Shape& s) {
  if (!s.halfPrecision) return false;
  if (s.valueFromKey) return mlaWgmmaServes(s);
  return s.keyDim == s.valueDim && (s.keyDim == 64 || s.keyDim == 128 || s.keyDim == 256);
}
Tile wgmmaTile(const Shape& s) {
  Tile t = s.valueFromKey ? Tile{true, 64, 64, 0, s.valueDim} : mmaTile(s);
  t.wgmma = true;
  return t;
}

}  // namespace

std::int64_t threads(const Tile& t, const Shape& s) {
  if (t.tensorCore) return s.valueFromKey ? 256 : 128;
  return t.blockRows * t.rowLanes;
}

std::int64_t mmaSharedBytes(const Shape& s) { return sharedBytes(mmaTile(s), s); }

std::int64_t backwardMmaSharedBytes(const Shape& s) {
  if (s.valueFromKey)
    return std::max(shared_memory::paged_mla_backward_mma(s.valueDim, ropeDim(s)),
                    shared_memory::paged_mla_history_mma(s.valueDim, ropeDim(s)));
  return std::max(shared_memory::paged_backward_mma(kBackwardMmaKeys, s.keyDim),
                  shared_memory::paged_history_mma(s.keyDim));
}

std::int64_t sharedBytes(const Tile& t, const Shape& s) {
  if (t.wgmma && s.valueFromKey) return shared_memory::paged_mla_wgmma(s.valueDim, ropeDim(s));
  if (t.wgmma) return shared_memory::flash_wgmma(t.blockRows, t.blockKeys, s.keyDim);
  if (t.tensorCore && s.valueFromKey) return shared_memory::paged_mla_mma(t.blockKeys, s.valueDim, ropeDim(s));
  if (t.tensorCore) return shared_memory::flash_mma(t.blockRows, t.blockKeys, s.keyDim);
  return shared_memory::paged_unit(t.blockRows, t.blockKeys, s.keyDim, 0, s.valueDim, s.valueFromKey);
}

std::optional<Tile> heuristicTile(const Shape& s, bool tensorCores, std::int64_t maxSharedBytes, bool wgmma) {
  if (wgmma && wgmmaServes(s) && sharedBytes(wgmmaTile(s), s) <= maxSharedBytes) return wgmmaTile(s);
  if (tensorCores && mmaServes(s) && sharedBytes(mmaTile(s), s) <= maxSharedBytes) return mmaTile(s);
  const std::int64_t rows = std::clamp<std::int64_t>(nextPowerOfTwo(s.group), 4, 16);
  std::int64_t lanes = 128 / rows;
  while (lanes < 32 && nextPowerOfTwo(s.valueDim) > 32 * lanes) lanes *= 2;
  // Where that does not fit, 16-key tiles (at most 16 lanes, which hold 1024 value columns) for the
  // whole group, then for 4 rows, then for 2.
  const std::int64_t narrow = std::min<std::int64_t>(lanes, 16);
  for (const Tile& t :
       {fitted(rows, 32, lanes, s), fitted(rows, 16, narrow, s), fitted(4, 16, 16, s), fitted(2, 16, 16, s)})
    if (!checkTile(t, s) && sharedBytes(t, s) <= maxSharedBytes) return t;
  return std::nullopt;
}

std::vector<Tile> candidates(const Shape& s, bool tensorCores, std::int64_t maxSharedBytes, bool wgmma) {
  std::vector<Tile> out;
  // With `wgmma` the heuristic's tile is the wgmma one wherever it serves and fits.
  if (auto t = heuristicTile(s, tensorCores, maxSharedBytes, wgmma)) out.push_back(*t);
  // Tensor cores: the 64-row tile only (every 128-row tile spills: S and O of 2 m16 tiles per warp
  // exceed 255 registers with the gather addresses live).
  if (tensorCores && mmaServes(s) && sharedBytes(mmaTile(s), s) <= maxSharedBytes &&
      std::find(out.begin(), out.end(), mmaTile(s)) == out.end())
    out.push_back(mmaTile(s));
  const std::int64_t shapes[][3] = {{4, 32, 32}, {8, 32, 16}, {16, 32, 8}, {16, 32, 32}, {32, 32, 4}, {4, 16, 16}};
  for (const auto& c : shapes) {
    const Tile t = fitted(c[0], c[1], c[2], s);
    if (!checkTile(t, s) && sharedBytes(t, s) <= maxSharedBytes && std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(t);
  }
  return out;
}

std::optional<std::string> checkTile(const Tile& t, const Shape& s) {
  if (t.wgmma) {
    if (!t.tensorCore) return fmt::format("{}: wgmma 1 needs tensor_core 1", describe(t));
    if (s.valueFromKey && !wgmmaServes(s))
      return fmt::format(
          "wgmma 1 for MLA needs f16/bf16, R in {{128, 256, 512}}, Pr a multiple of 16 in 16..=256, R + Pr a "
          "multiple of 64 and the 64-key tile within {} bytes of shared memory; got R {} Pr {}",
          kMaxSharedBytes, s.valueDim, ropeDim(s));
    if (!wgmmaServes(s))
      return fmt::format(
          "wgmma 1 needs attention in f16/bf16 with D = Dv in {{64, 128, 256}}; got key dim {} value "
          "dim {}",
          s.keyDim, s.valueDim);
    // The registered tile only (ptxas spilled wider key tiles at D = 256 in the flash kernel; others
    // are neither compiled nor tested). It fits: wgmmaServes bounds MLA's shared memory, and the
    // attention tiles take at most 99328 bytes.
    if (t != wgmmaTile(s))
      return fmt::format("{}: expected block_rows 64, block_keys {}, row_lanes 0, max_value_dim {}{}", describe(t),
                         wgmmaTile(s).blockKeys, wgmmaTile(s).maxValueDim, s.valueFromKey ? " (R)" : "");
    return std::nullopt;
  }
  if (t.tensorCore && s.valueFromKey) {
    if (!mmaServes(s))
      return fmt::format(
          "tensor_core 1 for MLA needs f16/bf16, R a multiple of 128 up to 512, Pr a multiple of 16 in 16..=256 "
          "and a 32-key tile within 163 KiB of shared memory; got R {} Pr {}",
          s.valueDim, ropeDim(s));
    if (t.blockRows != 64 || (t.blockKeys != 32 && t.blockKeys != 64) || t.rowLanes != 0 || t.maxValueDim != s.valueDim)
      return fmt::format("{}: expected block_rows 64, block_keys 32 or 64, row_lanes 0, max_value_dim {} (R)",
                         describe(t), s.valueDim);
    if (sharedBytes(t, s) > kMaxSharedBytes)
      return fmt::format("{} needs {} bytes of shared memory (at most {})", describe(t), sharedBytes(t, s),
                         kMaxSharedBytes);
    return std::nullopt;
  }
  if (t.tensorCore) {
    if (!mmaServes(s))
      return fmt::format("tensor_core 1 needs f16/bf16 and D = Dv in {{64, 96, 128, 256}}; got key dim {} value dim {}",
                         s.keyDim, s.valueDim);
    if ((t.blockRows != 64 && t.blockRows != 128) || t.blockKeys % 16 != 0 || t.blockKeys < 16 || t.blockKeys > 128 ||
        t.rowLanes != 0 || t.maxValueDim != s.keyDim)
      return fmt::format(
          "{}: expected block_rows 64 or 128, block_keys a multiple of 16 in 16..=128, row_lanes 0, "
          "max_value_dim {}",
          describe(t), s.keyDim);
    if (sharedBytes(t, s) > kMaxSharedBytes)
      return fmt::format("{} needs {} bytes of shared memory (at most {})", describe(t), sharedBytes(t, s),
                         kMaxSharedBytes);
    return std::nullopt;
  }
  if (!powerOfTwo(t.blockRows) || t.blockRows > 64)
    return fmt::format("block_rows: a power of two ≤ 64, got {}", t.blockRows);
  if (!powerOfTwo(t.rowLanes) || t.rowLanes > 32)
    return fmt::format("row_lanes: a power of two ≤ 32, got {}", t.rowLanes);
  if (threads(t, s) % 32 != 0 || threads(t, s) > 1024)
    return fmt::format("block_rows · row_lanes: whole warps, at most 1024 threads, got {}", threads(t, s));
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
  std::vector<std::pair<std::string, std::int64_t>> out = {{kTensorCore, t.tensorCore ? 1 : 0},
                                                           {kBlockRows, t.blockRows},
                                                           {kBlockKeys, t.blockKeys},
                                                           {kRowLanes, t.rowLanes},
                                                           {kMaxValueDim, t.maxValueDim}};
  if (t.wgmma) out.emplace_back(kWgmma, 1);
  return out;
}

std::optional<Tile> tileOf(const std::vector<std::pair<std::string, std::int64_t>>& values) {
  Tile t;
  int seen = 0;
  for (const auto& [k, v] : values) {
    std::int64_t* field = k == kBlockRows     ? &t.blockRows
                          : k == kBlockKeys   ? &t.blockKeys
                          : k == kRowLanes    ? &t.rowLanes
                          : k == kMaxValueDim ? &t.maxValueDim
                                              : nullptr;
    if (field)
      *field = v;
    else if (k == kTensorCore && (v == 0 || v == 1))
      t.tensorCore = v == 1;
    else if (k == kWgmma && (v == 0 || v == 1))  // 0 parses as absent
      t.wgmma = v == 1;
    else
      return std::nullopt;
    if (k != kWgmma) ++seen;
  }
  if (seen != 5) return std::nullopt;
  return t;
}

std::string describe(const Tile& t) {
  if (t.tensorCore)
    return fmt::format("paged_{} {}x{} d{}", t.wgmma ? "wgmma" : "mma", t.blockRows, t.blockKeys, t.maxValueDim);
  return fmt::format("paged_unit {}x{} lanes{} dv{}", t.blockRows, t.blockKeys, t.rowLanes, t.maxValueDim);
}

std::int64_t backwardColumnsPerLane(std::int64_t width) {
  for (std::int64_t perLane : {4, 8, 16, 24, 32, 40})
    if (32 * perLane >= width) return perLane;
  return 40;  // the contract bounds D + Pr by 1024 + 256
}

bool backwardMmaServes(const Shape& s) {
  if (!s.halfPrecision) return false;
  // MLA (paged/mla_backward_mma.cuh, MlaBackwardMmaPolicy): the forward's R and Pr rules, and its
  // 32-row chunk with two key stages within sm_80's shared memory (R = 512: Pr ≤ 80).
  if (s.valueFromKey) {
    const std::int64_t rope = ropeDim(s);
    return s.valueDim % 128 == 0 && s.valueDim <= 512 && rope % 16 == 0 && rope >= 16 && rope <= 256 &&
           shared_memory::paged_mla_backward_mma(s.valueDim, rope) <= kSm80SharedBytes;
  }
  return s.keyDim == s.valueDim && (s.keyDim == 64 || s.keyDim == 96 || s.keyDim == 128);
}

BackwardConfig heuristicBackward(const Shape& s, bool tensorCores) {
  return {kBackwardHeuristicWarps, tensorCores && backwardMmaServes(s)};
}

std::optional<std::string> checkBackward(const BackwardConfig& c, const Shape& s) {
  if (c.warps != 2 && c.warps != 4 && c.warps != 8) return fmt::format("warps: expected 2, 4 or 8, got {}", c.warps);
  if (c.tensorCore && !backwardMmaServes(s))
    return fmt::format(
        "tensor_core 1 needs f16/bf16 with attention's D = Dv in {{64, 96, 128}} or MLA's R a multiple of 128 up to "
        "512, Pr a multiple of 16 in 16..256 and {} bytes of shared memory at most; got {}key dim {} value dim {}{}",
        kSm80SharedBytes, s.halfPrecision ? "" : "a 32-bit dtype, ", s.keyDim, s.valueDim,
        s.valueFromKey ? " (MLA)" : "");
  return std::nullopt;
}

std::vector<std::pair<std::string, std::int64_t>> valuesOf(const BackwardConfig& c) {
  return {{kWarps, c.warps}, {kTensorCore, c.tensorCore ? 1 : 0}};
}

std::optional<BackwardConfig> backwardConfigOf(const std::vector<std::pair<std::string, std::int64_t>>& values) {
  BackwardConfig c;
  bool warps = false;
  for (const auto& [k, v] : values) {
    if (k == kWarps) {
      c.warps = v;
      warps = true;
    } else if (k == kTensorCore && (v == 0 || v == 1)) {
      c.tensorCore = v == 1;
    } else {
      return std::nullopt;
    }
  }
  if (!warps) return std::nullopt;
  return c;
}

}  // namespace rudnn::dialect::paged_config
