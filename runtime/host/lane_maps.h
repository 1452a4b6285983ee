#pragma once
// Pure lane arithmetic of the warp-level instructions the emulator implements, kept apart from the
// scheduler so that unit tests can check every (lane, element) pair against the PTX ISA tables.
// Lane = 0..31; g = lane >> 2 ("groupID"), t = lane % 4 ("threadID_in_group").

namespace rudnn::runtime::host::lanes {

// Valid shuffle widths are powers of two in [1, 32].
constexpr bool valid_width(int width) { return width >= 1 && width <= 32 && (width & (width - 1)) == 0; }

// The lane a shuffle reads, or `lane` itself where CUDA returns the caller's own value. Written as
// the PTX ISA pseudo-code of shfl.sync with the `c` operand that CUDA's __shfl_*_sync pass
// (segmask = 32 - width, clamp 0 for up and 31 otherwise); only the low 5 bits of the lane/delta
// argument matter, as in hardware.
// mode: 0 idx, 1 up, 2 down, 3 xor (rudnn_emu_shfl_mode).
constexpr int shfl_source(int mode, int lane, int arg, int width) {
  const int bval = arg & 31;
  const int segmask = (32 - width) & 31;
  const int cval = mode == 1 ? 0 : 31;
  const int max_lane = (lane & segmask) | (cval & ~segmask);
  const int min_lane = lane & segmask;
  int j = lane;
  bool pval = true;
  switch (mode) {
    case 0: j = min_lane | (bval & ~segmask); break;
    case 1:
      j = lane - bval;
      pval = j >= max_lane;
      break;
    case 2:
      j = lane + bval;
      pval = j <= max_lane;
      break;
    case 3:
      j = lane ^ bval;
      pval = j <= max_lane;
      break;
    default: break;
  }
  return pval ? j : lane;
}

struct RowCol {
  int row, col;
};

// mma.m16n8k16 A fragment (16x16, row-major): element i (0..7) of lane -> (row, col).
constexpr RowCol mma_a(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  return {g + (((i >> 1) & 1) ? 8 : 0), 2 * t + (i & 1) + (i >= 4 ? 8 : 0)};
}
// B fragment (16x8, K x N): element i (0..3) of lane -> (k, n).
constexpr RowCol mma_b(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  return {2 * t + (i & 1) + (i >= 2 ? 8 : 0), g};
}
// C/D fragment (16x8): element i (0..3) of lane -> (row, col).
constexpr RowCol mma_c(int lane, int i) {
  const int g = lane >> 2, t = lane & 3;
  return {g + (i >= 2 ? 8 : 0), 2 * t + (i & 1)};
}

// ldmatrix m8n8.b16: the element of an 8x8 matrix that lands in half `h` (0 = low 16 bits,
// 1 = high) of the register of lane `lane`.
constexpr RowCol ldmatrix_elem(int lane, int h, bool trans) {
  if (!trans) return {lane / 4, 2 * (lane % 4) + h};
  return {2 * (lane % 4) + h, lane / 4};
}

}  // namespace rudnn::runtime::host::lanes
