#pragma once
// Pure arithmetic of Hopper's warpgroup MMA (wgmma.mma_async m64nNk16 with 16-bit inputs and f32
// accumulators): which (row, column) each lane's registers hold, how a 64-bit shared-memory matrix
// descriptor decodes, and which shared-memory byte holds element (row, k) of an operand. Kept apart
// from the scheduler, like lane_maps.h, so the unit tests can hold it against a second statement of
// the PTX ISA (CuTe's GMMA layouts, written independently in tests/emulator/wgmma_test.cpp).
#include <cstdint>

#include "host/lane_maps.h"

namespace rudnn::runtime::host::wgmma {

// The accumulator D (64 x N, f32): register i (0 .. N/2-1) of `lane` in the warpgroup's warp `rank`
// (0..3). Each warp owns 16 rows; within them the m16n8 C fragment repeats once per 8 columns.
constexpr lanes::RowCol d_element(int rank, int lane, int i) {
  const lanes::RowCol c = lanes::mma_c(lane, i & 3);
  return {16 * rank + c.row, 8 * (i >> 2) + c.col};
}

// A from registers (the RS form, 64 x 16): half i (0..7) of the lane's 4 b32 registers, the m16n8k16
// A fragment over the warp's 16 rows.
constexpr lanes::RowCol a_register_element(int rank, int lane, int i) {
  const lanes::RowCol a = lanes::mma_a(lane, i);
  return {16 * rank + a.row, a.col};
}

// Bits 62-63 of a descriptor.
enum class Swizzle : int { None = 0, B128 = 1, B64 = 2, B32 = 3 };

struct Descriptor {
  std::uint32_t start;        // byte address in the shared window (bits 0-13, in 16-byte units)
  std::uint32_t leading;      // leading dimension byte offset (bits 16-29, 16-byte units)
  std::uint32_t stride;       // stride dimension byte offset (bits 32-45, 16-byte units)
  std::uint32_t base_offset;  // bits 49-51
  Swizzle swizzle;
};

constexpr Descriptor decode(std::uint64_t d) {
  return {static_cast<std::uint32_t>(d & 0x3FFFu) << 4, static_cast<std::uint32_t>((d >> 16) & 0x3FFFu) << 4,
          static_cast<std::uint32_t>((d >> 32) & 0x3FFFu) << 4, static_cast<std::uint32_t>((d >> 49) & 0x7u),
          static_cast<Swizzle>((d >> 62) & 0x3u)};
}

// Width in bytes of one swizzle row (the span the XOR permutes 16-byte chunks within); 16 for
// none, where a core matrix's row is one 16-byte chunk.
constexpr std::uint32_t swizzle_bytes(Swizzle s) {
  return s == Swizzle::B128 ? 128u : s == Swizzle::B64 ? 64u : s == Swizzle::B32 ? 32u : 16u;
}

// The swizzle on a shared-window byte address: the 16-byte chunk index (bits 4..) is XORed with the
// row index within the 8-row pattern (bits 7..), over log2(width / 16) bits. It acts on the absolute
// address, so a pattern's rows line up only when the tile's base is aligned to 8 rows x width bytes.
constexpr std::uint32_t swizzle_address(std::uint32_t addr, Swizzle s) {
  const std::uint32_t bits = s == Swizzle::B128 ? 7u : s == Swizzle::B64 ? 3u : s == Swizzle::B32 ? 1u : 0u;
  return addr ^ (((addr >> 7) & bits) << 4);
}

// Why the emulator cannot read descriptor `d` as the hardware would, or nullptr. It models base
// offset 0 only, the case where a swizzled operand starts at its pattern's first row (address bits
// 7.. within the 8-row pattern zero: 1024-, 512- or 256-byte phase for 128-, 64- or 32-byte swizzle);
// the PTX ISA's base offset for other starts is not modelled, so such a descriptor is a fault rather
// than a guess at the hardware's XOR.
constexpr const char* unmodelled(const Descriptor& d) {
  if (d.base_offset != 0) return "a nonzero base offset";
  const std::uint32_t phase_bits = d.swizzle == Swizzle::B128  ? 7u
                                   : d.swizzle == Swizzle::B64 ? 3u
                                   : d.swizzle == Swizzle::B32 ? 1u
                                                               : 0u;
  if (((d.start >> 7) & phase_bits) != 0) return "a swizzled start address off its pattern's first row";
  return nullptr;
}

// Byte address of element (row, k) of an operand (row: M for A, N for B; k: 0..15 of this
// instruction's K slice) of 2-byte elements.
//   K-major (no transpose): 8 x 16-byte core matrices. Without swizzle a core matrix's 8 rows are
//     contiguous, the two k halves are `leading` bytes apart and row groups of 8 `stride` apart. With
//     a swizzle a row is `width` bytes of consecutive k, 8 rows form the pattern, row groups of 8 are
//     `stride` apart and `leading` is unused.
//   MN-major (transposed): consecutive rows are contiguous. Without swizzle a core matrix is 8 rows
//     (16 bytes) x 8 k; row groups of 8 are `stride` apart and the two k halves `leading` apart. With
//     a swizzle a k line holds width/2 rows, 8 k lines form the pattern, the next width/2 rows are
//     `leading` bytes on and the two k halves `stride` apart.
constexpr std::uint32_t element_address(const Descriptor& d, bool mn_major, std::uint32_t row, std::uint32_t k) {
  const std::uint32_t width = swizzle_bytes(d.swizzle);
  std::uint32_t offset;
  if (!mn_major) {
    offset = (row / 8) * d.stride + (row % 8) * width + (k % 8) * 2 +
             (d.swizzle == Swizzle::None ? (k / 8) * d.leading : (k / 8) * 16);
  } else if (d.swizzle == Swizzle::None) {
    offset = (row % 8) * 2 + (row / 8) * d.stride + (k % 8) * 16 + (k / 8) * d.leading;
  } else {
    const std::uint32_t line = width / 2;  // rows per k line
    offset = (row % line) * 2 + (row / line) * d.leading + (k % 8) * width + (k / 8) * d.stride;
  }
  return swizzle_address(d.start + offset, d.swizzle);
}

}  // namespace rudnn::runtime::host::wgmma
