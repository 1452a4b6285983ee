#pragma once
// The arithmetic of the warp-wide matrix instructions, on the 32 lanes' operands gathered by the
// emulator's rendezvous. Separate from the scheduler so it can be read next to the PTX ISA tables.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rudnn::runtime::host::warp_math {

float f16_to_float(std::uint16_t h);
float bf16_to_float(std::uint16_t h);

// mma.sync.aligned.m16n8k16.row.col.f32.{f16|bf16}: `type` is rudnn_emu_mma_type. Lane l's
// operands: a[l] -> 4 x b32, b[l] -> 2 x b32, c[l] -> 4 x f32, d[l] -> 4 x f32 (may alias c[l]).
// Gathers A (16x16), B (16x8), C (16x8) by the PTX fragment maps, computes D = A*B + C in FP32
// (k in increasing order) and scatters D.
void mma_m16n8k16(int type, const void* const a[32], const void* const b[32], const void* const c[32],
                  void* const d[32]);

// ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16: rows[8*j + r] is row r of matrix j
// (16 bytes, already checked); regs[l] receives `count` b32 registers.
void ldmatrix(int count, bool trans, const void* const rows[32], void* const regs[32]);

// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16|bf16} for the warp `rank` (0..3) of its
// warpgroup, in two steps so the emulator can read the operands twice (at issue and at retirement).
// wgmma_operands: the raw 16-bit operands the warp reads — its 16 rows of A ([row][k]) then B
// ([col][k], n columns) — as the PTX ISA's descriptors lay them out in shared memory
// (host/wgmma_layout.h), or A from a_regs[l] (4 b32 per lane) when a_regs is non-null. `shared` is the
// block's arena, whose first byte is shared-window address `window_base`. False when an element lies
// outside it (*bad_address: its shared-window address). `flags` are rudnn_emu_wgmma_flags.
bool wgmma_operands(int n, int flags, int rank, std::uint64_t a_desc, const void* const a_regs[32],
                    std::uint64_t b_desc, const unsigned char* shared, std::uint32_t window_base,
                    std::size_t shared_bytes, std::vector<std::uint16_t>& out, std::uint32_t* bad_address);
// wgmma: rows 16·rank .. 16·rank+15 of D = A·B (+ D with RUDNN_EMU_WGMMA_ACCUMULATE) from those
// operands; d[l] -> n/2 floats. Sums in FP32, k in increasing order.
void wgmma(int type, int n, int flags, int rank, const std::vector<std::uint16_t>& operands, void* const d[32]);

}  // namespace rudnn::runtime::host::warp_math
