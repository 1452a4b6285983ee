// Lane maps of mma.m16n8k16 / ldmatrix / shuffles against independent statements of the PTX ISA
// tables (CuTe's SM80_16x8x16 layouts, EMULATOR-FACTS.md), and the emulated instructions end to end.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "emu_test.h"
#include "host/lane_maps.h"
#include "host/warp_math.h"

namespace emu_test {
namespace {

namespace lanes = rudnn::runtime::host::lanes;

// CuTe (mma_traits_sm80.hpp): ALayout ((4,8),(2,2,2)):((32,1),(16,8,128)) over the col-major 16x16
// (M,K) tile; BLayout ((4,8),(2,2)):((16,1),(8,64)) over (N,K) 8x16; CLayout
// ((4,8),(2,2)):((32,1),(16,8)) over (M,N) 16x8.
lanes::RowCol cute_a(int t, int v) {
  const int idx = 32 * (t % 4) + (t / 4) + 16 * (v % 2) + 8 * ((v / 2) % 2) + 128 * (v / 4);
  return {idx % 16, idx / 16};  // (m, k)
}
lanes::RowCol cute_b(int t, int v) {
  const int idx = 16 * (t % 4) + (t / 4) + 8 * (v % 2) + 64 * (v / 2);
  return {idx / 8, idx % 8};  // (k, n)
}
lanes::RowCol cute_c(int t, int v) {
  const int idx = 32 * (t % 4) + (t / 4) + 16 * (v % 2) + 8 * (v / 2);
  return {idx % 16, idx / 16};  // (m, n)
}

TEST(EmulatorLaneMaps, MmaFragmentsMatchCuteLayouts) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(lanes::mma_a(lane, i).row, cute_a(lane, i).row) << lane << " " << i;
      EXPECT_EQ(lanes::mma_a(lane, i).col, cute_a(lane, i).col) << lane << " " << i;
    }
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(lanes::mma_b(lane, i).row, cute_b(lane, i).row);
      EXPECT_EQ(lanes::mma_b(lane, i).col, cute_b(lane, i).col);
      EXPECT_EQ(lanes::mma_c(lane, i).row, cute_c(lane, i).row);
      EXPECT_EQ(lanes::mma_c(lane, i).col, cute_c(lane, i).col);
    }
  }
  // Every element of each operand is held by exactly one (lane, i).
  int a[16][16] = {}, b[16][8] = {}, c[16][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) ++a[lanes::mma_a(lane, i).row][lanes::mma_a(lane, i).col];
    for (int i = 0; i < 4; ++i) ++b[lanes::mma_b(lane, i).row][lanes::mma_b(lane, i).col];
    for (int i = 0; i < 4; ++i) ++c[lanes::mma_c(lane, i).row][lanes::mma_c(lane, i).col];
  }
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 16; ++k) EXPECT_EQ(a[r][k], 1);
    for (int n = 0; n < 8; ++n) {
      EXPECT_EQ(b[r][n], 1);
      EXPECT_EQ(c[r][n], 1);
    }
  }
}

TEST(EmulatorLaneMaps, ShuffleSourcesMatchFacts) {
  for (int width : {1, 2, 4, 8, 16, 32}) {
    for (int lane = 0; lane < 32; ++lane) {
      const int base = lane & ~(width - 1);
      for (int a = 0; a < 32; ++a) {
        EXPECT_EQ(lanes::shfl_source(0, lane, a, width), base + a % width);
        EXPECT_EQ(lanes::shfl_source(1, lane, a, width), lane % width >= a ? lane - a : lane);
        EXPECT_EQ(lanes::shfl_source(2, lane, a, width), lane % width + a < width ? lane + a : lane);
        const int j = lane ^ a;
        EXPECT_EQ(lanes::shfl_source(3, lane, a, width), j / width > lane / width ? lane : j);
      }
    }
  }
  EXPECT_TRUE(lanes::valid_width(1) && lanes::valid_width(32));
  EXPECT_FALSE(lanes::valid_width(0) || lanes::valid_width(3) || lanes::valid_width(64));
}

TEST(EmulatorLaneMaps, HalfConversions) {
  using rudnn::runtime::host::warp_math::bf16_to_float;
  using rudnn::runtime::host::warp_math::f16_to_float;
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_float(0xC000), -2.0f);
  EXPECT_EQ(f16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float(0x0200), std::ldexp(1.0f, -15));
  EXPECT_TRUE(std::isinf(f16_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_float(0x7E00)));
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC2F7), -123.5f);
}

// Exact for the small integers used here.
std::uint16_t to_f16(float x) {
  if (x == 0.0f) return 0;
  std::uint32_t f;
  std::memcpy(&f, &x, 4);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xFF) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((f >> 13) & 0x3FFu));
}
std::uint16_t to_bf16(float x) {
  std::uint32_t f;
  std::memcpy(&f, &x, 4);
  return static_cast<std::uint16_t>(f >> 16);
}

// A (16x16 row-major halves), B (16x8 [k][n] halves), C (16x8 floats) -> D, fragments built with the
// CuTe layouts; the accumulator is updated in place (d aliases c).
void mma_kernel(void** args) {
  const std::uint16_t* A = ptr<const std::uint16_t>(args, 0);
  const std::uint16_t* B = ptr<const std::uint16_t>(args, 1);
  const float* C = ptr<const float>(args, 2);
  float* D = ptr<float>(args, 3);
  const int bf16 = arg<int>(args, 4);
  const int l = static_cast<int>(threadIdx.x);
  rudnn::u32 a[4] = {}, b[2] = {};
  float acc[4];
  for (int v = 0; v < 8; ++v) {
    const auto mk = cute_a(l, v);
    a[v / 2] |= static_cast<rudnn::u32>(A[mk.row * 16 + mk.col]) << (16 * (v % 2));
  }
  for (int v = 0; v < 4; ++v) {
    const auto kn = cute_b(l, v);
    b[v / 2] |= static_cast<rudnn::u32>(B[kn.row * 8 + kn.col]) << (16 * (v % 2));
    const auto mn = cute_c(l, v);
    acc[v] = C[mn.row * 8 + mn.col];
  }
  if (bf16) {
    rudnn::mma_m16n8k16_bf16_f32(acc, a, b, acc);
  } else {
    rudnn::mma_m16n8k16_f16_f32(acc, a, b, acc);
  }
  for (int v = 0; v < 4; ++v) {
    const auto mn = cute_c(l, v);
    D[mn.row * 8 + mn.col] = acc[v];
  }
}

TEST_F(EmulatorTest, MmaM16N8K16MatchesReference) {
  std::mt19937 rng(7);
  for (int bf16 : {0, 1}) {
    std::vector<float> a(256), b(128), c(128);
    for (float& x : a) x = static_cast<float>(static_cast<int>(rng() % 17) - 8);
    for (float& x : b) x = static_cast<float>(static_cast<int>(rng() % 17) - 8);
    for (float& x : c) x = static_cast<float>(static_cast<int>(rng() % 101) - 50) * 0.5f;
    std::vector<std::uint16_t> ah(256), bh(128);
    for (int i = 0; i < 256; ++i) ah[i] = bf16 ? to_bf16(a[i]) : to_f16(a[i]);
    for (int i = 0; i < 128; ++i) bh[i] = bf16 ? to_bf16(b[i]) : to_f16(b[i]);
    std::vector<float> d(128, -1.0f);
    for (const auto& s : kAllSchedules) {
      EMU_EXPECT_OK(run(mma_kernel, {1, 1, 1}, {32, 1, 1}, 0, s, ah.data(), bh.data(), c.data(), d.data(), &bf16));
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 8; ++n) {
          float want = c[m * 8 + n];
          for (int k = 0; k < 16; ++k) want += a[m * 16 + k] * b[k * 8 + n];
          ASSERT_EQ(d[m * 8 + n], want) << "bf16 " << bf16 << " m " << m << " n " << n;
        }
      }
    }
  }
}

// Shared memory holds 32 rows of 8 halves; row r of matrix j sits at row slot (8j + r) * 5 % 32.
// Each lane passes its row's address; registers are written out per lane.
void ldmatrix_kernel(void** args) {
  rudnn::u32* out = ptr<rudnn::u32>(args, 0);
  const int count = arg<int>(args, 1), trans = arg<int>(args, 2);
  auto* s = rudnn::dynamic_shared<std::uint16_t>();
  const unsigned l = threadIdx.x;
  const unsigned j = l / 8, r = l % 8;
  for (unsigned c = 0; c < 8; ++c)
    s[((8 * j + r) * 5 % 32) * 8 + c] = static_cast<std::uint16_t>(1000 + 64 * j + 8 * r + c);
  __syncwarp();
  const void* row = s + ((8 * j + r) * 5 % 32) * 8;
  rudnn::u32 regs[4] = {0, 0, 0, 0};
  if (count == 1) {
    rudnn::u32 r1[1];
    trans ? rudnn::ldmatrix_x1_trans(r1, row) : rudnn::ldmatrix_x1(r1, row);
    regs[0] = r1[0];
  } else if (count == 2) {
    rudnn::u32 r2[2];
    trans ? rudnn::ldmatrix_x2_trans(r2, row) : rudnn::ldmatrix_x2(r2, row);
    regs[0] = r2[0], regs[1] = r2[1];
  } else {
    trans ? rudnn::ldmatrix_x4_trans(regs, row) : rudnn::ldmatrix_x4(regs, row);
  }
  for (int i = 0; i < 4; ++i) out[4 * l + i] = regs[i];
}

TEST_F(EmulatorTest, LdmatrixMatchesPtxLayout) {
  for (int count : {1, 2, 4}) {
    for (int trans : {0, 1}) {
      std::vector<rudnn::u32> out(128, 0);
      EMU_EXPECT_OK(run(ldmatrix_kernel, {1, 1, 1}, {32, 1, 1}, 32 * 16, kRandom, out.data(), &count, &trans));
      for (unsigned l = 0; l < 32; ++l) {
        for (int j = 0; j < count; ++j) {
          // EMULATOR-FACTS: (row l/4, cols 2(l%4), 2(l%4)+1), or transposed.
          const unsigned r0 = trans ? 2 * (l % 4) : l / 4, c0 = trans ? l / 4 : 2 * (l % 4);
          const unsigned r1 = trans ? r0 + 1 : r0, c1 = trans ? c0 : c0 + 1;
          const rudnn::u32 lo = 1000 + 64 * j + 8 * r0 + c0, hi = 1000 + 64 * j + 8 * r1 + c1;
          ASSERT_EQ(out[4 * l + j], lo | (hi << 16))
              << "x" << count << " trans " << trans << " lane " << l << " reg " << j;
        }
      }
    }
  }
}

void ldmatrix_misaligned_kernel(void**) {
  auto* s = rudnn::dynamic_shared<unsigned char>();
  rudnn::u32 r[1];
  rudnn::ldmatrix_x1(r, s + 16 * (threadIdx.x % 8) + (threadIdx.x == 3 ? 8 : 0));
}

TEST_F(EmulatorTest, LdmatrixChecksAlignment) {
  expect_fault(run(ldmatrix_misaligned_kernel, {1, 1, 1}, {32, 1, 1}, 256, kForward),
               {"misaligned shared memory address", "thread (3,0,0)", "ldmatrix row"});
}

void mma_partial_warp_kernel(void**) {
  rudnn::u32 a[4] = {}, b[2] = {};
  float c[4] = {};
  rudnn::mma_m16n8k16_f16_f32(c, a, b, c);
}

TEST_F(EmulatorTest, MmaNeedsTheWholeWarp) {
  expect_fault(run(mma_partial_warp_kernel, {1, 1, 1}, {16, 1, 1}, 0, kForward), {"do not exist", "mma.sync.m16n8k16"});
}

}  // namespace
}  // namespace emu_test
