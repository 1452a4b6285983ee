#include "host/warp_math.h"

#include <cstring>
#include <vector>

#include "host/lane_maps.h"
#include "host/wgmma_layout.h"
#include "rudnn/prelude/emu_abi.h"

namespace rudnn::runtime::host::warp_math {

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    std::uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {
std::uint16_t half_of(const void* words, int i) {
  std::uint32_t w;
  std::memcpy(&w, static_cast<const char*>(words) + 4 * (i / 2), 4);
  return static_cast<std::uint16_t>(i % 2 == 0 ? (w & 0xFFFFu) : (w >> 16));
}
}  // namespace

void mma_m16n8k16(int type, const void* const a[32], const void* const b[32], const void* const c[32],
                  void* const d[32]) {
  const auto cvt = type == RUDNN_EMU_MMA_BF16 ? bf16_to_float : f16_to_float;
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 8; ++i) {
      const lanes::RowCol rc = lanes::mma_a(l, i);
      A[rc.row][rc.col] = cvt(half_of(a[l], i));
    }
    for (int i = 0; i < 4; ++i) {
      const lanes::RowCol kn = lanes::mma_b(l, i);
      B[kn.row][kn.col] = cvt(half_of(b[l], i));
      const lanes::RowCol rc = lanes::mma_c(l, i);
      std::memcpy(&C[rc.row][rc.col], static_cast<const float*>(c[l]) + i, 4);
    }
  }
  // All of C is read before any D is written: a lane's d may alias its c.
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 4; ++i) {
      const lanes::RowCol rc = lanes::mma_c(l, i);
      float acc = C[rc.row][rc.col];
      for (int k = 0; k < 16; ++k) acc += A[rc.row][k] * B[k][rc.col];
      std::memcpy(static_cast<float*>(d[l]) + i, &acc, 4);
    }
  }
}

void ldmatrix(int count, bool trans, const void* const rows[32], void* const regs[32]) {
  std::uint16_t M[4][8][8];
  for (int j = 0; j < count; ++j)
    for (int r = 0; r < 8; ++r) std::memcpy(M[j][r], rows[8 * j + r], 16);
  for (int l = 0; l < 32; ++l) {
    for (int j = 0; j < count; ++j) {
      const lanes::RowCol lo = lanes::ldmatrix_elem(l, 0, trans);
      const lanes::RowCol hi = lanes::ldmatrix_elem(l, 1, trans);
      const std::uint32_t w =
          static_cast<std::uint32_t>(M[j][lo.row][lo.col]) | (static_cast<std::uint32_t>(M[j][hi.row][hi.col]) << 16);
      std::memcpy(static_cast<char*>(regs[l]) + 4 * j, &w, 4);
    }
  }
}

bool wgmma_operands(int n, int flags, int rank, std::uint64_t a_desc, const void* const a_regs[32],
                    std::uint64_t b_desc, const unsigned char* shared, std::uint32_t window_base,
                    std::size_t shared_bytes, std::vector<std::uint16_t>& out, std::uint32_t* bad_address) {
  out.assign(static_cast<std::size_t>(16 + n) * 16, 0);
  // One 2-byte element of an operand in shared memory; false when it is outside the arena.
  const auto load = [&](const wgmma::Descriptor& desc, bool mn_major, int row, int k, std::uint16_t* h) {
    const std::uint32_t addr =
        wgmma::element_address(desc, mn_major, static_cast<std::uint32_t>(row), static_cast<std::uint32_t>(k));
    if (addr < window_base || std::size_t{addr - window_base} + 2 > shared_bytes) {
      *bad_address = addr;
      return false;
    }
    std::memcpy(h, shared + (addr - window_base), 2);
    return true;
  };
  if (a_regs == nullptr) {
    const wgmma::Descriptor da = wgmma::decode(a_desc);
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 16; ++k)
        if (!load(da, (flags & RUDNN_EMU_WGMMA_TRANS_A) != 0, 16 * rank + r, k, &out[r * 16 + k])) return false;
  } else {
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 8; ++i) {
        const lanes::RowCol rc = lanes::mma_a(l, i);
        out[rc.row * 16 + rc.col] = half_of(a_regs[l], i);
      }
    }
  }
  const wgmma::Descriptor db = wgmma::decode(b_desc);
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < 16; ++k)
      if (!load(db, (flags & RUDNN_EMU_WGMMA_TRANS_B) != 0, c, k, &out[static_cast<std::size_t>(16 + c) * 16 + k]))
        return false;
  return true;
}

void wgmma(int type, int n, int flags, int rank, const std::vector<std::uint16_t>& operands, void* const d[32]) {
  const auto cvt = type == RUDNN_EMU_MMA_BF16 ? bf16_to_float : f16_to_float;
  const float sign_a = (flags & RUDNN_EMU_WGMMA_NEGATE_A) ? -1.0f : 1.0f;
  const float sign_b = (flags & RUDNN_EMU_WGMMA_NEGATE_B) ? -1.0f : 1.0f;
  std::vector<float> v(operands.size());
  for (std::size_t i = 0; i < operands.size(); ++i) v[i] = cvt(operands[i]);
  const float* A = v.data();            // this warp's 16 rows of A, [row][k]
  const float* B = v.data() + 16 * 16;  // [col][k]
  for (int l = 0; l < 32; ++l) {
    auto* acc = static_cast<float*>(d[l]);
    for (int i = 0; i < n / 2; ++i) {
      const lanes::RowCol rc = wgmma::d_element(rank, l, i);
      float sum = (flags & RUDNN_EMU_WGMMA_ACCUMULATE) ? acc[i] : 0.0f;
      for (int k = 0; k < 16; ++k)
        sum += (sign_a * A[(rc.row - 16 * rank) * 16 + k]) * (sign_b * B[static_cast<std::size_t>(rc.col) * 16 + k]);
      acc[i] = sum;
    }
  }
}

}  // namespace rudnn::runtime::host::warp_math
