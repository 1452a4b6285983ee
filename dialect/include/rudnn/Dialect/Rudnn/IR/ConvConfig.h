#pragma once
// The kernel configuration space of the convolution kernels (templates/rudnn/conv/), shared by the
// op verifiers, rudnn-select-kernel-config, the lowering, the variant registry and autotune.
// A kernel_config names the algorithm and its tile:
//   {algorithm = 0 (direct), threads}                              DirectPolicy<threads>
//   {algorithm = 1 (depthwise), tile_h, tile_w, channels[, splits]}
//                                                                  DepthwisePolicy<tile_h, tile_w, channels>;
//                                                                  splits: weight backward, omitted when 1
//   {algorithm = 2 (implicit GEMM), bm, bn, bk, warps_m, warps_n, stages, tensor_core, splits[, wgmma]}
//                                                                  gemm::BlockPolicy<...>; splits: the GEMM's
//                                                                  reduction cut into ordered FP32 split sums
//                                                                  (weight backward: over N·outputs; forward and
//                                                                  data backward: split-K over taps·channels);
//                                                                  wgmma = 1 (omitted when 0): Hopper's warpgroup
//                                                                  MMA, gemm::WgmmaPolicy<bm, bn, bk, stages>
//                                                                  (warps_m = bm / 16: a warp per 16 rows,
//                                                                  warps_n = 1), sm_90a only
// Which algorithm serves which call (and the substitutions): docs/convolution.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/conv.h"

namespace rudnn::dialect::conv_config {

inline constexpr const char* kAlgorithm = "algorithm";
inline constexpr const char* kThreads = "threads";
inline constexpr const char* kTileH = "tile_h";
inline constexpr const char* kTileW = "tile_w";
inline constexpr const char* kChannels = "channels";
inline constexpr const char* kBm = "bm";
inline constexpr const char* kBn = "bn";
inline constexpr const char* kBk = "bk";
inline constexpr const char* kWarpsM = "warps_m";
inline constexpr const char* kWarpsN = "warps_n";
inline constexpr const char* kStages = "stages";
inline constexpr const char* kTensorCore = "tensor_core";
inline constexpr const char* kSplits = "splits";
inline constexpr const char* kWgmma = "wgmma";  // contracts::kWgmmaConfigKey

enum class Algorithm : std::int64_t { Direct = 0, Depthwise = 1, ImplicitGemm = 2 };

struct DepthwiseTile {
  std::int64_t tileH = 8, tileW = 8, channels = 32;
  bool operator==(const DepthwiseTile&) const = default;
};
struct GemmTile {
  std::int64_t bm = 64, bn = 64, bk = 32, warpsM = 2, warpsN = 2, stages = 3;
  bool tensorCore = false;
  bool wgmma = false;  // gemm::WgmmaPolicy (tensorCore too)
  std::int64_t threads() const { return 32 * warpsM * warpsN; }
  bool operator==(const GemmTile&) const = default;
};

// One kernel choice: the algorithm and the fields it uses.
struct Choice {
  Algorithm algorithm = Algorithm::Direct;
  std::int64_t threads = 256;  // direct
  DepthwiseTile depthwise;     // depthwise
  GemmTile gemm;               // implicit GEMM
  std::int64_t splits = 1;     // implicit GEMM / depthwise weight backward: reduction ranges summed in order
};

// The registered tiles (each verified spill-free for sm_80 and sm_90a: tests/nvrtc).
const std::vector<std::int64_t>& directThreads();
const std::vector<DepthwiseTile>& depthwiseTiles();
const std::vector<GemmTile>& gemmTiles();  // tensor-core and plain
inline constexpr std::int64_t kMaxSplits = 32;
// Split sums are FP32: [splits, O, taps·C/G] (weight backward), [splits, N·pixels, columns]
// (forward, data backward); bounded (docs/convolution.md).
inline constexpr std::int64_t kMaxSplitWorkspaceBytes = std::int64_t{64} << 20;

// The batch that batch-dependent choices (split counts) are made for: the power of two at or above
// the call's batch (the plan cache's and autotune's bucket), so every batch of a bucket gets the
// same kernels; 8 when the batch is not known (a graph's dynamic batch; the forward and data
// backward then do not split).
std::int64_t bucketBatch(const contracts::ConvGeometry& g);

// The implicit GEMM of a forward or data backward, per image: the forward's rows are its output
// pixels; the data backward's are the input pixels of its largest stride phase, one GEMM per phase
// (conv/dgrad_phase.cuh; 1 phase for the forward). `columns`: O (forward) or C (data backward).
// The split heuristic and the launch grid (⌈n·rows/BM⌉, ⌈columns/BN⌉, splits·phases) read it.
struct OutputGemm {
  std::int64_t rowsPerImage, columns, phases;
};
OutputGemm outputGemm(contracts::ConvDirection direction, const contracts::ConvGeometry& g);

// The geometry the implicit GEMM runs at: g with C rounded up to whole 16-byte vectors (8 f16/bf16,
// 4 f32 channels) where it is not (a C = 3 stem, odd channel counts). A gather moves 16-byte chunks
// only along whole vectors, else one element per copy with its own address decode; so the lowering
// copies the operand that carries C with zero-padded channels (conv::copy_channels) — x and w
// (forward), w (data backward: dx is made at C' and copied back to C), x (weight backward: dw
// likewise) — for (C' − C)/C more multiply-adds on zeros, which add nothing to the sums. The split
// heuristics and the workspace bound count C'.
contracts::ConvGeometry gemmGeometry(const contracts::ConvGeometry& g, DType dtype);

// Dictionary values ↔ Choice (nothing when a key is missing, extra or not an integer).
std::optional<Choice> choiceOf(const std::vector<std::pair<std::string, std::int64_t>>& values);
std::vector<std::pair<std::string, std::int64_t>> valuesOf(const Choice& c);

// Why `c` cannot run `direction` of geometry `g` with dtype `dtype` (not registered, the algorithm
// does not serve it, the workspace bound), or nothing. `tensorCoresOk`: the target has mma.sync.
std::optional<std::string> checkChoice(const Choice& c, contracts::ConvDirection direction,
                                       const contracts::ConvGeometry& g, DType dtype);

// What serves a call with strategy "direct" / "implicit_gemm" ahead of tuning, and why the
// algorithm is not the preferred one (empty when it is): the documented substitutions.
struct Heuristic {
  Choice choice;
  std::string substitution;
};
// `maxSharedBytes`: the dynamic shared memory a block may opt into on the target
// (KernelTarget::maxSharedBytes); a choice that needs more is not made. The depthwise kernels stage
// a halo that grows with stride and dilation: where no depthwise tile fits, the direct kernel serves
// (it needs none), so every call has a kernel on every target.
Heuristic heuristicChoice(contracts::ConvDirection direction, const contracts::ConvGeometry& g, DType dtype,
                          bool preferImplicitGemm, bool tensorCores, std::int64_t maxSharedBytes);

// Every registered choice that serves the call within `maxSharedBytes` (autotune's candidates),
// tensor-core ones only when the target has them, warpgroup-MMA ones only when it has wgmma.
std::vector<Choice> candidates(contracts::ConvDirection direction, const contracts::ConvGeometry& g, DType dtype,
                               bool tensorCores, std::int64_t maxSharedBytes, bool wgmma);

// Bytes of dynamic shared memory of the choice's main kernel (the direct or depthwise kernel, or
// the implicit GEMM; the weight backward's reduce needs none): the launch's and the heuristics'.
std::int64_t sharedBytes(const Choice& c, contracts::ConvDirection direction, const contracts::ConvGeometry& g,
                         DType dtype);
// The FP32 split sums of the choice (0 for direct and unsplit forward / data backward; a split
// forward / data backward whose batch is not known counts batch 1: from there they grow with it).
std::int64_t splitWorkspaceBytes(const Choice& c, contracts::ConvDirection direction, const contracts::ConvGeometry& g,
                                 DType dtype);

}  // namespace rudnn::dialect::conv_config
