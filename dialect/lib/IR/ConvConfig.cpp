#include "rudnn/Dialect/Rudnn/IR/ConvConfig.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <fmt/format.h>

#include "contracts/arch.h"
#include "rudnn/conv/shared_memory.h"

namespace rudnn::dialect::conv_config {

using contracts::ConvDirection;
using contracts::ConvGeometry;

const std::vector<std::int64_t>& directThreads() {
  static const std::vector<std::int64_t> threads = {128, 256};
  return threads;
}

const std::vector<DepthwiseTile>& depthwiseTiles() {
  static const std::vector<DepthwiseTile> tiles = {{8, 8, 32}, {4, 16, 32}, {8, 8, 64}};
  return tiles;
}

const std::vector<GemmTile>& gemmTiles() {
  static const std::vector<GemmTile> tiles = {
      {128, 128, 32, 2, 4, 3, true},
      {64, 128, 32, 2, 2, 3, true},
      {64, 64, 32, 2, 2, 4, true},
      {64, 64, 16, 2, 4, 3, false},
      {32, 32, 16, 2, 2, 2, false},
      // Appended (the heuristic indexes the first five): BK = 64 halves the K-block count (barriers,
      // waits, per-block gather setup) for long K (large C); autotune candidate.
      {128, 128, 64, 2, 4, 3, true},
      // Warp tiles of 64 × 64 / 64 × 32 where the tiles above have 64 × 32 / 32 × 32: an mma.sync
      // m16n8k16 reads its operands from shared memory through ldmatrix, and on sm_90 a 32 × 32
      // warp tile issues 4 ldmatrix.x4 per 8 MMAs, which the shared-memory bandwidth cannot feed
      // (the H200's implicit GEMM ran at 30–110 TFLOP/s); 64 × 64 issues 8 per 32. The 4-warp
      // 128 × 128 is CUTLASS's Ampere conv tile; 128 × 64 is for 64-column layers (ResNet's
      // 64-channel stage). Autotune candidates until a GPU run says which the heuristic should take.
      {128, 128, 32, 2, 2, 4, true},
      {128, 64, 32, 2, 2, 4, true},
      // Hopper's warpgroup MMA (sm_90a; gemm::WgmmaPolicy<bm, bn, bk, stages>, a warpgroup per 64
      // rows): wgmma reads both operands from shared memory, where mma.sync needs an ldmatrix per
      // fragment — the bottleneck named above. Autotune candidates only, on sm_90a, until a GPU run has
      // verified them (emulator-verified so far): the heuristic never picks one.
      {128, 128, 64, 8, 1, 4, true, true},
      {128, 256, 64, 8, 1, 3, true, true},
      {64, 128, 64, 4, 1, 4, true, true},
      {128, 64, 64, 8, 1, 4, true, true},
  };
  return tiles;
}

std::optional<Choice> choiceOf(const std::vector<std::pair<std::string, std::int64_t>>& values) {
  auto get = [&](const char* key) -> std::optional<std::int64_t> {
    for (auto& [k, v] : values)
      if (k == key) return v;
    return std::nullopt;
  };
  auto algorithm = get(kAlgorithm);
  if (!algorithm || *algorithm < 0 || *algorithm > 2) return std::nullopt;
  Choice c;
  c.algorithm = static_cast<Algorithm>(*algorithm);
  std::vector<const char*> keys;
  switch (c.algorithm) {
    case Algorithm::Direct: keys = {kAlgorithm, kThreads}; break;
    case Algorithm::Depthwise:  // splits: weight backward only, omitted when 1
      keys = {kAlgorithm, kTileH, kTileW, kChannels};
      if (get(kSplits)) keys.push_back(kSplits);
      break;
    case Algorithm::ImplicitGemm:  // wgmma: only when 1
      keys = {kAlgorithm, kBm, kBn, kBk, kWarpsM, kWarpsN, kStages, kTensorCore, kSplits};
      if (get(kWgmma)) keys.push_back(kWgmma);
      break;
  }
  if (values.size() != keys.size()) return std::nullopt;
  for (const char* k : keys)
    if (!get(k)) return std::nullopt;
  if (c.algorithm == Algorithm::Direct) c.threads = *get(kThreads);
  if (c.algorithm == Algorithm::Depthwise) {
    c.depthwise = {*get(kTileH), *get(kTileW), *get(kChannels)};
    c.splits = get(kSplits).value_or(1);
  }
  if (c.algorithm == Algorithm::ImplicitGemm) {
    c.gemm = {*get(kBm),
              *get(kBn),
              *get(kBk),
              *get(kWarpsM),
              *get(kWarpsN),
              *get(kStages),
              *get(kTensorCore) != 0,
              get(kWgmma).value_or(0) != 0};
    c.splits = *get(kSplits);
  }
  return c;
}

std::vector<std::pair<std::string, std::int64_t>> valuesOf(const Choice& c) {
  switch (c.algorithm) {
    case Algorithm::Direct: return {{kAlgorithm, 0}, {kThreads, c.threads}};
    case Algorithm::Depthwise: {
      std::vector<std::pair<std::string, std::int64_t>> v = {
          {kAlgorithm, 1}, {kTileH, c.depthwise.tileH}, {kTileW, c.depthwise.tileW}, {kChannels, c.depthwise.channels}};
      if (c.splits != 1) v.push_back({kSplits, c.splits});
      return v;
    }
    case Algorithm::ImplicitGemm: break;
  }
  const GemmTile& t = c.gemm;
  std::vector<std::pair<std::string, std::int64_t>> v = {
      {kAlgorithm, 2},     {kBm, t.bm},         {kBn, t.bn},         {kBk, t.bk},
      {kWarpsM, t.warpsM}, {kWarpsN, t.warpsN}, {kStages, t.stages}, {kTensorCore, t.tensorCore ? 1 : 0},
      {kSplits, c.splits}};
  if (t.wgmma) v.push_back({kWgmma, 1});
  return v;
}

namespace {

// The tiled kernels' 32-bit index bound (pixels of an image, filter columns).
constexpr double kIndexBound = static_cast<double>(std::int64_t{1} << 30);

// The tiled kernels (depthwise, implicit GEMM) index inside one image in 32-bit integers (pixel
// counts, window and halo origins, stride · position): an image whose input or output pixels, padded
// extent or stride · output extent reach 2^30 runs the direct kernel, which indexes in 64 bits. (The
// contract bounds each extent by 2^31, not their products.) Unknown extents are decided at lowering.
std::optional<std::string> imageIndexServes(const ConvGeometry& g) {
  const double in = static_cast<double>(g.input[0]) * static_cast<double>(g.input[1]) * static_cast<double>(g.input[2]);
  const double out =
      static_cast<double>(g.output[0]) * static_cast<double>(g.output[1]) * static_cast<double>(g.output[2]);
  bool large = in >= kIndexBound || out >= kIndexBound;
  for (int d = 0; d < 3; ++d) {
    if (!contracts::known(g.input[d]) || !contracts::known(g.output[d])) return std::nullopt;
    large = large || static_cast<double>(g.input[d]) + 2.0 * static_cast<double>(g.padding[d]) >= kIndexBound ||
            static_cast<double>(g.output[d]) * static_cast<double>(g.stride[d]) >= kIndexBound;
  }
  if (large)
    return fmt::format(
        "the tiled kernels index one image in 32 bits: input and output pixels, padded extents and "
        "stride x output extents below 2^30, got input {}x{}x{} -> output {}x{}x{}",
        g.input[0], g.input[1], g.input[2], g.output[0], g.output[1], g.output[2]);
  return std::nullopt;
}

// The ImplicitGemm kernels serve ungrouped convolutions (grouped ones run Direct). Their K loop
// counts GEMM columns (tap, channel) in 32 bits as well: the filter's taps · C (forward, weight
// backward; C as the kernels see it, rounded up to whole 16-byte vectors by gemmGeometry) and
// taps · O (data backward) stay below 2^30.
std::optional<std::string> gemmServes(const ConvGeometry& g, DType dtype) {
  if (g.groups != 1) return fmt::format("implicit GEMM serves groups = 1, got groups = {}", g.groups);
  const double taps = static_cast<double>(g.taps());
  const std::int64_t channels = gemmGeometry(g, dtype).channels;
  if (taps * static_cast<double>(std::max(channels, g.out_channels)) >= kIndexBound)
    return fmt::format(
        "the implicit GEMM counts filter columns in 32 bits: taps x channels below 2^30 (input channels rounded up "
        "to whole 16-byte vectors), got {} taps x {} input / {} output channels",
        g.taps(), channels, g.out_channels);
  return imageIndexServes(g);
}

// The depthwise kernels (forward, data and weight backward): groups = C > 1 (one input channel per
// group).
std::optional<std::string> depthwiseServes(ConvDirection /*direction*/, const ConvGeometry& g) {
  if (!g.depthwise())
    return fmt::format("the depthwise kernel needs groups = C > 1, got groups {} with C {}", g.groups, g.channels);
  return imageIndexServes(g);
}

// The split count: 1..kMaxSplits for the implicit GEMM (every direction) and the depthwise weight
// backward, 1 elsewhere, within the workspace bound (a forward or data backward's split sums grow
// with the batch: checked where the batch is known).
std::optional<std::string> checkSplits(const Choice& c, ConvDirection direction, const ConvGeometry& g, DType dtype) {
  if (c.splits < 1 || c.splits > kMaxSplits) return fmt::format("splits in 1..={}, got {}", kMaxSplits, c.splits);
  if (c.algorithm != Algorithm::ImplicitGemm && direction != ConvDirection::WeightBackward && c.splits != 1)
    return fmt::format("splits = 1 outside the weight backward and the implicit GEMM, got {}", c.splits);
  if (const std::int64_t bytes = splitWorkspaceBytes(c, direction, g, dtype); bytes > kMaxSplitWorkspaceBytes)
    return fmt::format("a split workspace <= {} bytes, got {} bytes ({} splits)", kMaxSplitWorkspaceBytes, bytes,
                       c.splits);
  return std::nullopt;
}

// Within the largest target's shared memory (a smaller target's heuristic picks within its own).
std::optional<std::string> checkShared(const Choice& c, ConvDirection direction, const ConvGeometry& g, DType dtype) {
  const std::int64_t bytes = sharedBytes(c, direction, g, dtype);
  if (bytes < 0 || bytes > contracts::kLargestSharedBytes)
    return fmt::format("a kernel within {} bytes of shared memory per block, got {} bytes",
                       contracts::kLargestSharedBytes, bytes);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkChoice(const Choice& c, ConvDirection direction, const ConvGeometry& g, DType dtype) {
  switch (c.algorithm) {
    case Algorithm::Direct: {
      const auto& t = directThreads();
      if (std::find(t.begin(), t.end(), c.threads) == t.end())
        return fmt::format("threads = {} is not a registered direct tile (128, 256)", c.threads);
      return std::nullopt;
    }
    case Algorithm::Depthwise: {
      const auto& t = depthwiseTiles();
      if (std::find(t.begin(), t.end(), c.depthwise) == t.end())
        return fmt::format("{{tile_h = {}, tile_w = {}, channels = {}}} is not a registered depthwise tile",
                           c.depthwise.tileH, c.depthwise.tileW, c.depthwise.channels);
      if (auto why = depthwiseServes(direction, g)) return why;
      if (auto why = checkSplits(c, direction, g, dtype)) return why;
      return checkShared(c, direction, g, dtype);
    }
    case Algorithm::ImplicitGemm: break;
  }
  const auto& t = gemmTiles();
  if (std::find(t.begin(), t.end(), c.gemm) == t.end())
    return fmt::format(
        "{{bm = {}, bn = {}, bk = {}, warps {}x{}, stages = {}, tensor_core = {}, wgmma = {}}} is not a registered "
        "implicit GEMM tile",
        c.gemm.bm, c.gemm.bn, c.gemm.bk, c.gemm.warpsM, c.gemm.warpsN, c.gemm.stages, c.gemm.tensorCore ? 1 : 0,
        c.gemm.wgmma ? 1 : 0);
  if (c.gemm.tensorCore && dtype == DType::F32) return std::string("tensor_core = 1 needs f16 or bf16");
  if (auto why = gemmServes(g, dtype)) return why;
  if (auto why = checkSplits(c, direction, g, dtype)) return why;
  return checkShared(c, direction, g, dtype);
}

namespace {

// Block slots of a large GPU (132 SMs × 2 resident blocks): what the split heuristics fill.
constexpr std::int64_t kBlockSlots = 264;

// Splits of the weight backward's reduction: enough blocks to fill a large GPU when the weight
// tiles alone are few, each split keeping at least 256 rows of N·outputs, within the workspace
// bound.
std::int64_t heuristicSplits(const GemmTile& t, const ConvGeometry& g) {
  const std::int64_t filter = g.taps() * g.channels;
  const std::int64_t tiles = ((g.out_channels + t.bm - 1) / t.bm) * ((filter + t.bn - 1) / t.bn);
  const std::int64_t rows = bucketBatch(g) * g.output_pixels();
  std::int64_t splits = std::clamp<std::int64_t>(kBlockSlots / std::max<std::int64_t>(tiles, 1), 1, kMaxSplits);
  splits = std::min(splits, std::max<std::int64_t>(rows / 256, 1));
  while (splits > 1 && splits * g.out_channels * filter * 4 > kMaxSplitWorkspaceBytes) --splits;
  return splits;
}

// Split-K of the forward / data backward: where the bucket's output tiles fill less than half the
// block slots (a 7×7 ResNet stage, a UNet bottleneck at batch 2), the K blocks are cut so that
// tiles × splits approach the slots, each split keeping at least 8 K blocks, within the workspace
// bound (checked at the bucket's largest batch). 1 when the batch is not known.
// The data backward counts its stride phases' tiles (conv/dgrad_phase.cuh) and their average depth.
std::int64_t outputSplits(const GemmTile& t, ConvDirection direction, const ConvGeometry& g) {
  if (!contracts::known(g.batch)) return 1;
  const bool forward = direction == ConvDirection::Forward;
  const std::int64_t batch = bucketBatch(g);
  const OutputGemm gemm = outputGemm(direction, g);
  const std::int64_t depth = g.taps() * (forward ? g.channels : g.out_channels) / gemm.phases;
  const std::int64_t tiles =
      gemm.phases * ((batch * gemm.rowsPerImage + t.bm - 1) / t.bm) * ((gemm.columns + t.bn - 1) / t.bn);
  if (tiles * 2 >= kBlockSlots) return 1;
  std::int64_t splits = std::clamp<std::int64_t>(kBlockSlots / std::max<std::int64_t>(tiles, 1), 1, kMaxSplits);
  splits = std::min(splits, std::max<std::int64_t>((depth + t.bk - 1) / t.bk / 8, 1));
  const std::int64_t rows = batch * (forward ? g.output_pixels() : g.input_pixels());
  while (splits > 1 && splits * rows * gemm.columns * 4 > kMaxSplitWorkspaceBytes) --splits;
  return splits;
}

// The depthwise weight backward: ceil(O / channels) blocks per split; the same targets.
std::int64_t depthwiseSplits(const DepthwiseTile& t, const ConvGeometry& g) {
  const std::int64_t chunks = (g.out_channels + t.channels - 1) / t.channels;
  const std::int64_t rows = bucketBatch(g) * g.output_pixels();
  std::int64_t splits = std::clamp<std::int64_t>(kBlockSlots / std::max<std::int64_t>(chunks, 1), 1, kMaxSplits);
  splits = std::min(splits, std::max<std::int64_t>(rows / 256, 1));
  while (splits > 1 && splits * g.out_channels * g.taps() * 4 > kMaxSplitWorkspaceBytes) --splits;
  return splits;
}

Choice depthwiseChoice(const DepthwiseTile& t, ConvDirection direction, const ConvGeometry& g) {
  Choice c;
  c.algorithm = Algorithm::Depthwise;
  c.depthwise = t;
  c.splits = direction == ConvDirection::WeightBackward ? depthwiseSplits(t, g) : 1;
  return c;
}

Choice gemmChoice(const GemmTile& t, ConvDirection direction, const ConvGeometry& g, DType dtype) {
  Choice c;
  c.algorithm = Algorithm::ImplicitGemm;
  c.gemm = t;
  const ConvGeometry k = gemmGeometry(g, dtype);
  c.splits = direction == ConvDirection::WeightBackward ? heuristicSplits(t, k) : outputSplits(t, direction, k);
  return c;
}

}  // namespace

std::int64_t sharedBytes(const Choice& c, ConvDirection direction, const ConvGeometry& g, DType dtype) {
  namespace smem = conv::shared_memory;
  const std::int64_t eb = static_cast<std::int64_t>(dtype_size(dtype));
  const bool forward = direction == ConvDirection::Forward, weights = direction == ConvDirection::WeightBackward;
  switch (c.algorithm) {
    case Algorithm::Direct: return weights ? smem::wgrad_direct(c.threads) : 0;
    case Algorithm::Depthwise: {
      const DepthwiseTile& t = c.depthwise;
      if (weights)
        return smem::depthwise_wgrad(smem::depthwise_threads(t.tileH, t.tileW, t.channels),
                                     smem::depthwise_vector(g.channels, g.out_channels, t.channels, eb));
      const std::int64_t m = g.out_channels / g.channels;
      // A halo past 2^20 pixels a side (contrived strides and dilations) fits no GPU: saturate rather
      // than let the product overflow.
      const std::int64_t h = forward ? smem::depthwise_halo(t.tileH, g.kernel[1], g.stride[1], g.dilation[1])
                                     : smem::depthwise_dgrad_halo(t.tileH, g.kernel[1], g.stride[1], g.dilation[1]);
      const std::int64_t w = forward ? smem::depthwise_halo(t.tileW, g.kernel[2], g.stride[2], g.dilation[2])
                                     : smem::depthwise_dgrad_halo(t.tileW, g.kernel[2], g.stride[2], g.dilation[2]);
      if (h > (1 << 20) || w > (1 << 20) || m > (1 << 20)) return std::numeric_limits<std::int64_t>::max();
      return forward ? smem::depthwise(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2], g.dilation[1], g.dilation[2],
                                       m, t.tileH, t.tileW, t.channels, eb)
                     : smem::depthwise_dgrad(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2], g.dilation[1],
                                             g.dilation[2], m, t.tileH, t.tileW, t.channels, eb);
    }
    case Algorithm::ImplicitGemm: {
      const GemmTile& t = c.gemm;
      return forward   ? smem::igemm_fprop(t.stages, t.bm, t.bn, t.bk, eb, t.wgmma)
             : weights ? smem::igemm_wgrad(t.stages, t.bm, t.bn, t.bk, eb, t.wgmma)
                       : smem::igemm_dgrad(t.stages, t.bm, t.bn, t.bk, eb, t.wgmma);
    }
  }
  return 0;
}

namespace {

// The first registered depthwise tile whose kernel fits, else the direct kernel (256 threads).
Choice depthwiseOrDirect(ConvDirection direction, const ConvGeometry& g, DType dtype, std::int64_t maxSharedBytes) {
  for (const DepthwiseTile& t : depthwiseTiles()) {
    Choice c = depthwiseChoice(t, direction, g);
    if (sharedBytes(c, direction, g, dtype) <= maxSharedBytes) return c;
  }
  return Choice{};
}

}  // namespace

Heuristic heuristicChoice(ConvDirection direction, const ConvGeometry& g, DType dtype, bool preferImplicitGemm,
                          bool tensorCores, std::int64_t maxSharedBytes) {
  Heuristic h;
  const bool depthwise = !depthwiseServes(direction, g);
  if (!preferImplicitGemm) {
    if (depthwise) h.choice = depthwiseOrDirect(direction, g, dtype, maxSharedBytes);
    return h;  // Direct, 256 threads
  }
  // ImplicitGemm preferred: the guide's substitutions first.
  if (g.groups != 1) {
    h.substitution = fmt::format("grouped convolution (groups = {}) with ImplicitGemm runs Direct", g.groups);
  } else if (dtype == DType::F32 && g.spatial_dims == 3) {
    h.substitution = "3-D f32 convolution runs Direct";
  } else if (auto why = gemmServes(g, dtype)) {  // groups = 1 here: the index bounds
    h.substitution = *why + "; runs Direct";
  } else {
    const bool tc = tensorCores && dtype != DType::F32;
    // The GEMM's column count: 128-wide tiles only when there are columns to fill them.
    const std::int64_t columns = direction == ConvDirection::Forward        ? g.out_channels
                                 : direction == ConvDirection::DataBackward ? g.channels
                                                                            : g.taps() * g.channels;
    const auto& tiles = gemmTiles();
    const GemmTile& tile = !tc ? tiles[3] : columns >= 128 ? tiles[0] : tiles[2];  // plain: 64x64
    h.choice = gemmChoice(tile, direction, g, dtype);
    // Every heuristic tile fits 99 KiB (sm_86/sm_89); a smaller target runs Direct.
    if (sharedBytes(h.choice, direction, g, dtype) > maxSharedBytes) {
      h.choice = Choice{};
      h.substitution =
          fmt::format("the implicit GEMM tile needs more than the target's {} bytes of shared memory", maxSharedBytes);
    }
    return h;
  }
  if (depthwise) h.choice = depthwiseOrDirect(direction, g, dtype, maxSharedBytes);
  return h;
}

std::vector<Choice> candidates(ConvDirection direction, const ConvGeometry& g, DType dtype, bool tensorCores,
                               std::int64_t maxSharedBytes, bool wgmma) {
  std::vector<Choice> out;
  for (std::int64_t t : directThreads()) {
    Choice c;
    c.threads = t;
    out.push_back(c);
  }
  for (const DepthwiseTile& t : depthwiseTiles()) {
    // The weight backward uses the channel count alone: one candidate per distinct channel count.
    if (direction == ConvDirection::WeightBackward && std::any_of(out.begin(), out.end(), [&](const Choice& o) {
          return o.algorithm == Algorithm::Depthwise && o.depthwise.channels == t.channels;
        }))
      continue;
    Choice c = depthwiseChoice(t, direction, g);
    if (!checkChoice(c, direction, g, dtype) && sharedBytes(c, direction, g, dtype) <= maxSharedBytes) out.push_back(c);
  }
  for (const GemmTile& t : gemmTiles()) {
    if ((t.tensorCore && !tensorCores) || (t.wgmma && !wgmma)) continue;
    Choice c = gemmChoice(t, direction, g, dtype);
    if (checkChoice(c, direction, g, dtype) || sharedBytes(c, direction, g, dtype) > maxSharedBytes) continue;
    out.push_back(c);
    // A split forward / data backward is timed against the same tile unsplit.
    if (direction != ConvDirection::WeightBackward && c.splits > 1) {
      c.splits = 1;
      out.push_back(c);
    }
  }
  return out;
}

ConvGeometry gemmGeometry(const ConvGeometry& g, DType dtype) {
  const std::int64_t vector = 16 / static_cast<std::int64_t>(dtype_size(dtype));
  ConvGeometry k = g;
  if (g.groups == 1 && contracts::known(g.channels)) k.channels = (g.channels + vector - 1) / vector * vector;
  return k;
}

OutputGemm outputGemm(ConvDirection direction, const ConvGeometry& g) {
  namespace smem = conv::shared_memory;
  if (direction == ConvDirection::Forward) return {g.output_pixels(), g.out_channels, 1};
  return {smem::dgrad_phase_pixels(g.input[0], g.input[1], g.input[2], g.stride[0], g.stride[1], g.stride[2]),
          g.channels, smem::dgrad_phases(g.stride[0], g.stride[1], g.stride[2])};
}

std::int64_t bucketBatch(const ConvGeometry& g) {
  if (!contracts::known(g.batch)) return 8;
  // A hand-written rudnn.batch_hint may be any i64: past 2^31 (the contract's bound on an extent)
  // saturate, so neither bit_ceil nor the heuristics' row counts overflow.
  constexpr std::int64_t kLargest = std::int64_t{1} << 31;
  if (g.batch > kLargest) return kLargest;
  return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(std::max<std::int64_t>(g.batch, 1))));
}

std::int64_t splitWorkspaceBytes(const Choice& c, ConvDirection direction, const ConvGeometry& unpadded, DType dtype) {
  if (c.algorithm == Algorithm::Direct) return 0;
  const ConvGeometry g = c.algorithm == Algorithm::ImplicitGemm ? gemmGeometry(unpadded, dtype) : unpadded;
  if (direction == ConvDirection::WeightBackward)
    return c.splits * g.out_channels * g.taps() * (g.channels / g.groups) * 4;
  // The forward / data backward: FP32 [splits, N·pixels, columns] when split; a dynamic batch is
  // counted as 1 (the workspace grows with it from there).
  if (c.splits == 1) return 0;
  const bool forward = direction == ConvDirection::Forward;
  const std::int64_t batch = contracts::known(g.batch) ? std::max<std::int64_t>(g.batch, 1) : 1;
  const std::int64_t rows = batch * (forward ? g.output_pixels() : g.input_pixels());
  const std::int64_t columns = forward ? g.out_channels : g.channels;
  // Past the bound (and no overflow) for contrived extents: each factor is < 2^31 (the contract).
  if (rows > (std::int64_t{1} << 40) / std::max<std::int64_t>(columns, 1))
    return std::numeric_limits<std::int64_t>::max();
  return c.splits * rows * columns * 4;
}

}  // namespace rudnn::dialect::conv_config
