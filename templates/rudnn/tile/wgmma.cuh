#pragma once
// Hopper's warpgroup MMA (wgmma.mma_async m64nNk16, sm_90a) at tile level: the shared-memory
// layout its operands are read in, the 64-bit descriptors that name them, the accumulator's lane
// map, and the issue/wait sequence. The instructions themselves are the preludes' wgmma_* wrappers.
//
// Operand layouts, 16-bit elements, 128-byte swizzle (a line of 64 contiguous elements is 128 bytes, 8
// lines form a 1024-byte atom):
//   SwizzledKMajor<Rows, Cols>   rows = M (or N), K (Cols) contiguous: a row's 64-column K panel is one
//                                line, atoms follow down the rows (SBO = 1024), K panels follow the
//                                whole column of atoms (LBO unused). wgmma's K-major operand.
//   SwizzledMNMajor<Rows, Cols>  rows = K, M (or N) (Cols) contiguous: a K row's 64-column MN panel is
//                                one line, atoms of 8 K rows follow each other (SBO = 1024), MN panels
//                                of 64 follow the whole column (LBO = Rows·128). wgmma's MN-major
//                                ("transposed") operand.
// The swizzle permutes a line's 16-byte chunks by XOR with the line's index in its atom, taken from the
// absolute shared-window address, as the hardware takes it; tile bases are kept 1024-byte aligned
// anyway (gemm/wgmma_engine.cuh), the case the PTX ISA's base offset 0 describes. Stores and cp.async
// go through at() / chunk(); the XOR also puts the same chunk of 8 lines in 8 different bank groups.
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

// `smem` rounded up to the next 1024-byte boundary of the shared window (a swizzle atom), where a
// kernel's first swizzled tile goes: the descriptors' base offset is then 0, the case the PTX ISA
// describes. The kernel's shared memory holds shared_memory::kWgmmaAlignmentSlack bytes for it.
template <class T>
RUDNN_DEVICE T* swizzle_aligned(T* smem) {
  const u32 at = shared_address(smem);
  return smem + ((1024u - at % 1024u) % 1024u) / sizeof(T);
}

// The 128-byte swizzle on a shared-window address: 16-byte chunk bits 4-6 XOR line bits 7-9.
RUDNN_DEVICE constexpr u32 swizzle128(u32 address) { return address ^ (((address >> 7) & 7u) << 4); }

// What the two swizzled layouts share: element placement by the pre-swizzle offset of element
// (r, c) (Layout::offset) and the XOR on the absolute address.
template <class Layout>
struct Swizzled128 {
  // The 16-byte chunk holding elements (r, 8q .. 8q + 7): where stores and cp.async go.
  template <class T>
  static RUDNN_DEVICE T* chunk(T* base, int r, int q) {
    static_assert(sizeof(T) == 2, "rudnn: wgmma operands here are 16-bit");
    const u32 at = shared_address(base);
    return base + (swizzle128(at + Layout::offset(r, 8 * q)) - at) / 2;
  }
  // Element (r, c) (the gathers' Layout::at, gemm/gather_tile.cuh).
  template <class T>
  static RUDNN_DEVICE T* at(T* base, int r, int c) {
    return chunk(base, r, c / 8) + c % 8;
  }
};

template <int Rows, int Cols>
struct SwizzledKMajor : Swizzled128<SwizzledKMajor<Rows, Cols>> {
  static_assert(Rows % 8 == 0 && Cols % 64 == 0, "rudnn: a swizzled K-major tile is whole 8-row x 64-column atoms");
  static constexpr int kPanelBytes = Rows * 128;  // one 64-column K panel
  static constexpr int kBytes = Rows * Cols * 2;
  static constexpr int kElems = Rows * Cols;

  // Byte offset of element (row, k) before the swizzle.
  static RUDNN_DEVICE constexpr u32 offset(int row, int k) {
    return static_cast<u32>((k / 64) * kPanelBytes + row * 128 + (k % 64) * 2);
  }
  // The descriptor of the k16 slice at column k0 (a multiple of 16) of rows row0 .. (64 rows for A,
  // N for B; row0 a multiple of 8). Within a panel the slice starts k0·2 bytes into the line: the
  // hardware applies the swizzle to the absolute address, as chunk() does.
  template <class T>
  static RUDNN_DEVICE u64 descriptor(const T* base, int row0, int k0) {
    return wgmma_descriptor(shared_address(base) + offset(row0, k0), 16, 1024, WgmmaSwizzle::B128);
  }
};

template <int Rows, int Cols>
struct SwizzledMNMajor : Swizzled128<SwizzledMNMajor<Rows, Cols>> {
  static_assert(Rows % 8 == 0 && Cols % 64 == 0, "rudnn: a swizzled MN-major tile is whole 8-row x 64-column atoms");
  static constexpr int kPanelBytes = Rows * 128;  // one 64-column MN panel
  static constexpr int kBytes = Rows * Cols * 2;
  static constexpr int kElems = Rows * Cols;

  // Byte offset of element (k, mn) before the swizzle.
  static RUDNN_DEVICE constexpr u32 offset(int k, int mn) {
    return static_cast<u32>((mn / 64) * kPanelBytes + k * 128 + (mn % 64) * 2);
  }
  // The descriptor of the k16 slice at row k0 (a multiple of 16) for the MN columns mn0 .. (64 for
  // A, N for B; mn0 a multiple of 64): the next 64 MN columns are a panel on (LBO), the next 8 K rows
  // an atom on (SBO). Read with the operand's transpose flag.
  template <class T>
  static RUDNN_DEVICE u64 descriptor(const T* base, int k0, int mn0) {
    return wgmma_descriptor(shared_address(base) + offset(k0, mn0), kPanelBytes, 1024, WgmmaSwizzle::B128);
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
template <int N, bool TransA = false, bool TransB = false>
RUDNN_DEVICE void wgmma_ss(const f16*, float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  wgmma_f16_ss<N, TransA, TransB>(d, a_desc, b_desc, accumulate);
}
template <int N, bool TransA = false, bool TransB = false>
RUDNN_DEVICE void wgmma_ss(const bf16*, float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  wgmma_bf16_ss<N, TransA, TransB>(d, a_desc, b_desc, accumulate);
}

// The RS wgmma (A from this thread's 4 registers: mma.sync's A fragment of the warp's 16 rows) of
// T's flavour, chosen by the pointer's type as above.
template <int N, bool TransB = false>
RUDNN_DEVICE void wgmma_rs(const f16*, float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate) {
  wgmma_f16_rs<N, TransB>(d, a, b_desc, accumulate);
}
template <int N, bool TransB = false>
RUDNN_DEVICE void wgmma_rs(const bf16*, float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate) {
  wgmma_bf16_rs<N, TransB>(d, a, b_desc, accumulate);
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
