#pragma once
// Hopper's warpgroup MMA (wgmma.mma_async m64nNk16, sm_90a) at tile level: the shared-memory
// layout its operands are read in, the 64-bit descriptors that name them, the accumulator's lane
// map, and the issue/wait sequence. The instructions themselves are the preludes' wgmma_* wrappers.
//
// Operand layout (SwizzledKMajor): a Rows x Cols tile of 16-bit elements, K (Cols) contiguous, in
// the 128-byte-swizzled layout: each row's 64-element K panel is one 128-byte line, 8 lines form a
// 1024-byte atom, atoms follow each other down the rows (SBO = 1024) and K panels of 64 follow the
// whole column of atoms. The swizzle permutes the 16-byte chunks of a line by XOR with the line's
// index in its atom, computed from the absolute shared-window address (as the hardware does), so
// the tile's base must be 1024-byte aligned. Stores and cp.async write through chunk(); the same
// XOR makes 8 rows' chunk c land in 8 different bank groups.
//
// Accumulator (the PTX ISA's m64nNk16 D fragment; see runtime/host/wgmma_layout.h): warp w of the
// warpgroup holds rows 16w..16w+15; register i of lane (g = lane/4, t = lane%4) is row
// 16w + g + 8·((i/2)%2), column 8·(i/4) + 2t + i%2 — mma.m16n8k16's C fragment once per 8 columns.
//
// Ordering (PTX ISA "wgmma.fence" and "Async proxy"): threads that wrote operands with generic
// stores or cp.async call fence_proxy_async_shared() and then the block barrier; each k-block's
// wgmma are preceded by wgmma_fence() and followed by wgmma_commit(); the accumulators (and the
// shared memory the group reads) are touched again only after the wgmma_wait covering the group,
// with wgmma_fence_operand() keeping the compiler from moving register uses across it.
#include "rudnn/numeric.cuh"
#include "rudnn/prelude.cuh"

namespace rudnn::tile {

// Bits 62-63 of a descriptor.
enum class WgmmaSwizzle : u64 { None = 0, B128 = 1, B64 = 2, B32 = 3 };

// The 64-bit shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address,
// leading and stride dimension byte offsets, each in 16-byte units over 14 bits; base offset 0.
RUDNN_DEVICE constexpr u64 wgmma_descriptor(u32 start_address, u32 leading_bytes, u32 stride_bytes,
                                            WgmmaSwizzle swizzle) {
  return u64{(start_address & 0x3FFFFu) >> 4} | u64{(leading_bytes & 0x3FFFFu) >> 4} << 16 |
         u64{(stride_bytes & 0x3FFFFu) >> 4} << 32 | static_cast<u64>(swizzle) << 62;
}

// The 128-byte swizzle on a shared-window address: 16-byte chunk bits 4-6 XOR line bits 7-9.
RUDNN_DEVICE constexpr u32 swizzle128(u32 address) { return address ^ (((address >> 7) & 7u) << 4); }

template <int Rows, int Cols>
struct SwizzledKMajor {
  static_assert(Rows % 8 == 0 && Cols % 64 == 0, "rudnn: a swizzled K-major tile is whole 8-row x 64-column atoms");
  static constexpr int kPanelBytes = Rows * 128;  // one 64-column K panel
  static constexpr int kBytes = Rows * Cols * 2;
  static constexpr int kAlignment = 1024;

  // Byte offset of element (row, k) before the swizzle.
  static RUDNN_DEVICE constexpr u32 offset(int row, int k) {
    return static_cast<u32>((k / 64) * kPanelBytes + row * 128 + (k % 64) * 2);
  }
  // The 16-byte chunk holding elements (row, 8c .. 8c + 7): where stores and cp.async go.
  template <class T>
  static RUDNN_DEVICE T* chunk(T* base, int row, int c) {
    static_assert(sizeof(T) == 2, "rudnn: wgmma operands here are 16-bit");
    const u32 at = shared_address(base);
    return base + (swizzle128(at + offset(row, 8 * c)) - at) / 2;
  }
  // The descriptor of the k16 slice at column k0 (a multiple of 16) of rows row0 .. (64 rows for A,
  // N for B; row0 a multiple of 8). Within a panel the slice starts k0·2 bytes into the line: the
  // hardware applies the swizzle to the absolute address, as chunk() does.
  template <class T>
  static RUDNN_DEVICE u64 descriptor(const T* base, int row0, int k0) {
    return wgmma_descriptor(shared_address(base) + offset(row0, k0), 16, 1024, WgmmaSwizzle::B128);
  }
};

// Row and column of accumulator register i of this thread (warp = the warp's index in the block).
struct WgmmaAccumulatorMap {
  int row0, col0;  // of register 0
  RUDNN_DEVICE static WgmmaAccumulatorMap of(int warp, int lane) {
    return {16 * (warp % 4) + lane / 4, 2 * (lane % 4)};
  }
  RUDNN_DEVICE constexpr int row(int i) const { return row0 + 8 * ((i >> 1) & 1); }
  RUDNN_DEVICE constexpr int col(int i) const { return col0 + 8 * (i >> 2) + (i & 1); }
};

// The SS wgmma of T's flavour (T ∈ {f16, bf16}, chosen by the operand pointer's type).
template <int N>
RUDNN_DEVICE void wgmma_ss(const f16*, float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  wgmma_f16_ss<N>(d, a_desc, b_desc, accumulate);
}
template <int N>
RUDNN_DEVICE void wgmma_ss(const bf16*, float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  wgmma_bf16_ss<N>(d, a_desc, b_desc, accumulate);
}

// D (+)= A·B over one 64-column K panel (four k16 steps) of SwizzledKMajor tiles: A 64 x K rows
// a_row0.., B N x K rows b_row0.., T ∈ {f16, bf16}. The first step overwrites D unless `accumulate`.
template <class T, int N, class TileA, class TileB>
RUDNN_DEVICE void wgmma_panel(float (&d)[N / 2], const T* a, int a_row0, const T* b, int b_row0, int k0,
                              bool accumulate) {
  RUDNN_UNROLL
  for (int s = 0; s < 4; ++s) {
    const u64 da = TileA::descriptor(a, a_row0, k0 + 16 * s);
    const u64 db = TileB::descriptor(b, b_row0, k0 + 16 * s);
    wgmma_ss<N>(a, d, da, db, accumulate || s > 0);
  }
}

}  // namespace rudnn::tile
