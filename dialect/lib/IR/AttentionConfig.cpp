#include "rudnn/Dialect/Rudnn/IR/AttentionConfig.h"

#include <algorithm>
#include <fmt/format.h>

#include "rudnn/shared_memory.h"

namespace rudnn::dialect::attention_config {

namespace {

// flash_mma tiles per head dim (each spill-free for sm_80 and sm_90a, shared memory within sm_80's
// 163 KiB opt-in): D = 64 <128,64>, 96 <128,32> and <64,64>, 128 <64,64>, 256 <64,32> (flash_mma.cuh says
// why D = 128 has no 128-row tile). Then the wgmma tiles (flash_wgmma.cuh, sm_90a: two warpgroups of
// 64 query rows; 128-key tiles, 32-key ones at D = 256, whose O takes 128 registers; D = 96 has
// none): D = 64 82944 B, D = 128 164864 B, D = 256 132096 B of shared memory, within sm_90's 227 KiB.
struct MmaEntry {
  std::int64_t d, bm, bn;
  bool wgmma;
};
constexpr MmaEntry kMma[] = {{64, 128, 64, false}, {96, 128, 32, false}, {96, 64, 64, false},   {128, 64, 64, false},
                             {256, 64, 32, false}, {64, 128, 128, true}, {128, 128, 128, true}, {256, 128, 32, true}};

// flash_unit: {block_m, block_n, threads_per_row, max_value_dim}; serves D, Dv ≤ max_value_dim.
constexpr std::int64_t kUnit[][4] = {{64, 32, 4, 64}, {32, 32, 8, 128}, {16, 32, 16, 256}};

}  // namespace

std::vector<Tile> tilesFor(Kind kind, DType dtype, std::int64_t d, std::int64_t dv) {
  std::vector<Tile> out;
  switch (kind) {
    case Kind::FlashMma:
      if ((dtype != DType::F16 && dtype != DType::BF16) || d != dv) return out;
      for (const MmaEntry& e : kMma)
        if (e.d == d) out.push_back({Kind::FlashMma, e.bm, e.bn, 0, 0, 0, d, e.wgmma});
      return out;
    case Kind::FlashUnit:
      for (const auto& u : kUnit)
        if (d <= u[3] && dv <= u[3]) out.push_back({Kind::FlashUnit, u[0], u[1], u[2], u[3], 0, 0});
      return out;
    case Kind::Fallback:
      if (d > 1024 || dv > 1024) return out;
      for (std::int64_t bm : {64, 16})
        for (std::int64_t sm : {32, 8, 256}) out.push_back({Kind::Fallback, bm, 64, 0, 0, sm, 0});
      return out;
  }
  return out;
}

std::int64_t threads(const Tile& t) {
  switch (t.kind) {
    case Kind::FlashMma: return t.wgmma ? 128 * (t.blockM / 64) : 128;  // a warpgroup per 64 rows, or 4 warps
    case Kind::FlashUnit: return t.blockM * t.threadsPerRow;
    case Kind::Fallback: return 256;  // both tile policies: (BM/TM)·(BN/TN) = 256
  }
  return 0;
}

std::int64_t flashMmaSharedBytes(const Tile& t) {
  return t.wgmma ? shared_memory::flash_wgmma(t.blockM, t.blockN, t.headDim)
                 : shared_memory::flash_mma(t.blockM, t.blockN, t.headDim);
}

std::int64_t flashUnitSharedBytes(const Tile& t, std::int64_t d, std::int64_t dv) {
  return shared_memory::flash_unit(t.blockM, t.blockN, d, dv);
}

// Both Fallback tile policies are BM × 64 outputs over 16-deep slices.
std::int64_t fallbackTileSharedBytes(const Tile& t) { return shared_memory::fallback_tile(t.blockM, 64, 16); }

// Softmax policies: 32 threads per row × 8 rows, 8 × 32, 256 × 1.
std::int64_t fallbackSoftmaxRows(const Tile& t) { return t.softmaxThreads == 8 ? 32 : t.softmaxThreads == 32 ? 8 : 1; }

std::int64_t fallbackSoftmaxSharedBytes(const Tile& t) {
  return shared_memory::fallback_softmax(t.softmaxThreads, fallbackSoftmaxRows(t));
}

std::optional<std::string> checkTile(const Tile& t, DType dtype, std::int64_t d, std::int64_t dv) {
  for (const Tile& k : tilesFor(t.kind, dtype, d, dv)) {
    Tile probe = t;
    probe.headDim = k.headDim;  // not part of the config
    if (probe == k) return std::nullopt;
  }
  return fmt::format("{} is not a registered tile for {} head_dim {} value_dim {}", describe(t), dtype_name(dtype), d,
                     dv);
}

std::string describe(const Tile& t) {
  switch (t.kind) {
    case Kind::FlashMma: return fmt::format("flash_{} {}x{}", t.wgmma ? "wgmma" : "mma", t.blockM, t.blockN);
    case Kind::FlashUnit:
      return fmt::format("flash_unit {}x{} tpr{} dv{}", t.blockM, t.blockN, t.threadsPerRow, t.maxValueDim);
    case Kind::Fallback: return fmt::format("fallback bm{} softmax{}", t.blockM, t.softmaxThreads);
  }
  return "?";
}

}  // namespace rudnn::dialect::attention_config
