#pragma once
// The kernel configuration space of rudnn.paged_attention and rudnn.paged_mla, as {tensor_core,
// block_rows, block_keys, row_lanes, max_value_dim}:
//   tensor_core 0  templates/rudnn/paged/unit.cuh, paged::UnitPolicy<block_rows, block_keys,
//                  row_lanes, max_value_dim, value_from_key>: every dtype and dim, MLA
//   tensor_core 1  attention: templates/rudnn/paged/mma.cuh, paged::MmaPolicy<D, block_rows,
//                  block_keys> (4 warps, mma.sync m16n8k16): f16/bf16, D = Dv ∈ {64, 96, 128, 256};
//                  row_lanes 0, max_value_dim = D. With wgmma = 1 (the key omitted when 0):
//                  templates/rudnn/paged/wgmma.cuh, paged::WgmmaPolicy<D, block_keys> on Hopper's
//                  warpgroup MMA (sm_90a only, contracts::has_wgmma): D = Dv ∈ {64, 128, 256},
//                  block_rows 64, block_keys 64 (32 at D = 256).
//                  MLA: templates/rudnn/paged/mla_mma.cuh, paged::MlaMmaPolicy<R, Pr, block_keys>
//                  (8 warps): f16/bf16, R a multiple of 128 up to 512, Pr a multiple of 16 in
//                  16..=256; block_rows 64, block_keys 32 or 64, row_lanes 0, max_value_dim = R. With
//                  wgmma = 1: templates/rudnn/paged/mla_wgmma.cuh, paged::MlaWgmmaPolicy<R, Pr>
//                  (two warpgroups, sm_90a only): R ∈ {128, 256, 512}, R + Pr a multiple of 64,
//                  the tile within 227 KiB (R = 512: Pr = 64); block_rows 64, block_keys 64
// The verifier, rudnn-select-kernel-config, the lowering and the NVRTC variant test share it.
#include "contracts/arch.h"
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rudnn::dialect::paged_config {

inline constexpr const char* kTensorCore = "tensor_core";
inline constexpr const char* kBlockRows = "block_rows";
inline constexpr const char* kBlockKeys = "block_keys";
inline constexpr const char* kRowLanes = "row_lanes";
inline constexpr const char* kMaxValueDim = "max_value_dim";
inline constexpr const char* kWgmma = contracts::kWgmmaConfigKey;

// The largest dynamic shared memory a tile may take (the H100/H200 opt-in limit, 227 KiB): the
// verifier's bound. The heuristic picks within its target's own limit.
inline constexpr std::int64_t kMaxSharedBytes = contracts::kLargestSharedBytes;

struct Tile {
  bool tensorCore = false;
  std::int64_t blockRows = 0, blockKeys = 0, rowLanes = 0, maxValueDim = 0;
  bool wgmma = false;  // tensor_core: paged_attention_wgmma / paged_mla_wgmma (Hopper's warpgroup MMA)
  bool operator==(const Tile&) const = default;
};

// What a tile is chosen for: the group (query heads per kv head), the staged key width (D, plus
// MLA's rope dim) and the value width; `valueFromKey` for MLA (values are the latent rows).
struct Shape {
  std::int64_t group = 1, keyDim = 0, valueDim = 0;
  bool valueFromKey = false;
  bool halfPrecision = false;  // f16 or bf16
};

std::int64_t threads(const Tile& t, const Shape& s);
std::int64_t sharedBytes(const Tile& t, const Shape& s);
// The dynamic shared memory the tensor-core kernels need for `s`: the forward's tile, and the
// larger of the backward's unit and history kernels. The heuristics take tensor cores only on a
// target whose opt-in limit holds it (sm_86 and sm_89 have 99 KiB, less than MLA's kernels need).
std::int64_t mmaSharedBytes(const Shape& s);
std::int64_t backwardMmaSharedBytes(const Shape& s);

// The heuristic, within `maxSharedBytes` (the target's opt-in limit): with `wgmma` (the caller's
// contracts::heuristics_take_wgmma) the wgmma tile where it serves `s` and fits; else the
// tensor-core tile where it serves `s`, fits, and the target has mma.sync m16n8k16 (64 panel rows;
// 64-key tiles, 32 for D = 256 and for MLA); else the plain one: block_rows covers the group (4..16 rows: decode fills
// the block with the heads that share a K/V tile), lanes per row so that a block has 128 threads or
// each lane holds at most 32 value columns, 32-key tiles; where that does not fit, 16-key tiles of
// the same rows, then of 4 rows, then of 2. Nothing when no tile fits (D = Dv = 1024 on sm_86's
// 99 KiB): the ops layer reports that as Unsupported before lowering.
std::optional<Tile> heuristicTile(const Shape& s, bool tensorCores, std::int64_t maxSharedBytes, bool wgmma = false);
// The registered tiles that serve `s` within `maxSharedBytes` (the variant test compiles each),
// heuristic first (with `wgmma`, the opted-in heuristic's); tensor-core ones only with
// `tensorCores`, the wgmma tile only with `wgmma` (the target has it: contracts::has_wgmma).
std::vector<Tile> candidates(const Shape& s, bool tensorCores, std::int64_t maxSharedBytes, bool wgmma = false);
// Why `t` cannot serve `s`, or nothing.
std::optional<std::string> checkTile(const Tile& t, const Shape& s);

// --- rudnn.paged_attention_backward / rudnn.paged_mla_backward: {warps} or {warps, tensor_core}.
//   warps          work items per block of the plain kernels (2, 4 or 8; heuristic 4):
//                  templates/rudnn/paged/backward.cuh paged::BackwardPolicy<warps, key_per_lane,
//                  value_per_lane, value_from_key> with the smallest registered widths that hold the
//                  rows, and the ordered path's history kernel
//   tensor_core 1  dq, the atomic history and the row statistics by templates/rudnn/paged/
//                  backward_mma.cuh, paged::BackwardMmaPolicy<D, 32> (4 warps, mma.sync m16n8k16),
//                  and the ordered path's history kernel, paged::HistoryMmaPolicy<D, compact>:
//                  attention in f16/bf16 with D = Dv ∈ {64, 96, 128}; MLA in f16/bf16 (R a multiple
//                  of 128 up to 512, Pr a multiple of 16 in 16..256, within sm_80's shared memory):
//                  dq, the atomic history and the row statistics by paged/mla_backward_mma.cuh,
//                  paged::MlaBackwardMmaPolicy<R, Pr> (8 warps), the ordered history by
//                  paged::MlaHistoryMmaPolicy<R, Pr, compact>; absent or 0: the plain kernels
inline constexpr const char* kWarps = "warps";
inline constexpr std::int64_t kBackwardHeuristicWarps = 4;
inline constexpr std::int64_t kBackwardMmaKeys = 32;
struct BackwardConfig {
  std::int64_t warps = kBackwardHeuristicWarps;
  bool tensorCore = false;
  bool operator==(const BackwardConfig&) const = default;
};
// Whether the tensor-core backward serves `s`.
bool backwardMmaServes(const Shape& s);
// The heuristic: 4 warps, on tensor cores where they serve and the target has mma.sync m16n8k16.
BackwardConfig heuristicBackward(const Shape& s, bool tensorCores);
// Why `c` cannot serve `s`, or nothing.
std::optional<std::string> checkBackward(const BackwardConfig& c, const Shape& s);
std::vector<std::pair<std::string, std::int64_t>> valuesOf(const BackwardConfig& c);
// The config's values ({warps} or {warps, tensor_core}), or nothing for another key set.
std::optional<BackwardConfig> backwardConfigOf(const std::vector<std::pair<std::string, std::int64_t>>& values);
// Columns per lane of a row `width` wide: the smallest of 4, 8, 16, 24, 32, 40 (values: up to 32)
// with 32 · per_lane ≥ width (keys: D + Pr ≤ 1280; values: Dv ≤ 1024).
std::int64_t backwardColumnsPerLane(std::int64_t width);

std::vector<std::pair<std::string, std::int64_t>> valuesOf(const Tile& t);
std::optional<Tile> tileOf(const std::vector<std::pair<std::string, std::int64_t>>& values);
std::string describe(const Tile& t);

}  // namespace rudnn::dialect::paged_config
