// Hopper's warpgroup MMA on the emulator: the lane maps and shared-memory layouts against CuTe's
// statement of the PTX ISA (mma_traits_sm90_gmma.hpp: CLayout_64xN, ALayout_64x16 and the canonical
// GMMA layouts, evaluated here the way CuTe evaluates a layout), whole products through the
// preludes' wrappers and tile/wgmma.cuh against exact integer references, and every misuse the
// emulator reports.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "emu_test.h"
#include "host/wgmma_layout.h"
#include "rudnn/tile/wgmma.cuh"

namespace emu_test {
namespace {

namespace wg = rudnn::runtime::host::wgmma;
namespace lanes = rudnn::runtime::host::lanes;
namespace tile = rudnn::tile;
using rudnn::u32;
using rudnn::u64;

// ---- CuTe's layouts. A layout maps a coordinate to the sum of its digits times the strides; thread
// and value indices are split into digits over the shape, first mode fastest.
int cute_index(int thread, int value, const int (&tshape)[3], const int (&tstride)[3], const int (&vshape)[3],
               const int (&vstride)[3]) {
  int idx = 0;
  for (int i = 0; i < 3; ++i) {
    idx += (thread % tshape[i]) * tstride[i];
    thread /= tshape[i];
  }
  for (int i = 0; i < 3; ++i) {
    idx += (value % vshape[i]) * vstride[i];
    value /= vshape[i];
  }
  return idx;
}

// CLayout_64xN = ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)) over (m, n) -> m + 64·n.
TEST(WgmmaLayout, AccumulatorMatchesCute) {
  for (int n : {8, 64, 136, 256}) {
    std::vector<int> seen(static_cast<std::size_t>(64 * n), 0);
    for (int t = 0; t < 128; ++t) {
      for (int v = 0; v < n / 2; ++v) {
        const int idx = cute_index(t, v, {4, 8, 4}, {128, 1, 16}, {2, 2, n / 8}, {64, 8, 512});
        const lanes::RowCol rc = wg::d_element(t / 32, t % 32, v);
        ASSERT_EQ(rc.row, idx % 64) << "n " << n << " thread " << t << " register " << v;
        ASSERT_EQ(rc.col, idx / 64) << "n " << n << " thread " << t << " register " << v;
        ++seen[static_cast<std::size_t>(idx)];
      }
    }
    for (int s : seen) ASSERT_EQ(s, 1);
  }
}

// ALayout_64x16 = ((4,8,4),(2,2,2)):((128,1,16),(64,8,512)) over (m, k) -> m + 64·k.
TEST(WgmmaLayout, RegisterAMatchesCute) {
  for (int t = 0; t < 128; ++t) {
    for (int v = 0; v < 8; ++v) {
      const int idx = cute_index(t, v, {4, 8, 4}, {128, 1, 16}, {2, 2, 2}, {64, 8, 512});
      const lanes::RowCol rc = wg::a_register_element(t / 32, t % 32, v);
      ASSERT_EQ(rc.row, idx % 64) << t << " " << v;
      ASSERT_EQ(rc.col, idx / 64) << t << " " << v;
    }
  }
}

TEST(WgmmaLayout, DescriptorFieldsRoundTrip) {
  const u64 d = tile::wgmma_descriptor(0x1230, 0x40, 0x400, tile::WgmmaSwizzle::B128);
  EXPECT_EQ(d, 0x4000004000040123ull);
  const wg::Descriptor f = wg::decode(d);
  EXPECT_EQ(f.start, 0x1230u);
  EXPECT_EQ(f.leading, 0x40u);
  EXPECT_EQ(f.stride, 0x400u);
  EXPECT_EQ(f.base_offset, 0u);
  EXPECT_EQ(f.swizzle, wg::Swizzle::B128);
  // The fact sheet's example: K-major 128B, start 0, SBO 1024, LBO encoded 1.
  EXPECT_EQ(tile::wgmma_descriptor(0, 16, 1024, tile::WgmmaSwizzle::B128), 0x4000004000010000ull);
}

// The canonical layouts of the PTX ISA ("Shared Memory Matrix Layout", in CuTe's notation, element
// units, T = 8 elements per 16 bytes), with Swizzle<B,4,3> on the byte address:
//   K-major none:  ((8,m),(T,2)):((T,SBO),(1,LBO))     K-major swizzled: ((8,m),(T,2)):((W/2,SBO),(1,T))
//   MN-major none: ((T,m),(8,2)):((1,SBO),(T,LBO))     MN-major swizzled: ((W/2,m),(8,2)):((1,LBO),(W/2,SBO))
// (W: the swizzle width in bytes; SBO/LBO in elements here.) Evaluated digit by digit.
u32 canonical_address(u32 start, u32 lbo, u32 sbo, int swizzle_bits, bool mn_major, int row, int k) {
  const u32 lbo_e = lbo / 2, sbo_e = sbo / 2;
  const u32 line = swizzle_bits == 0 ? 8 : 8u << swizzle_bits;  // elements per swizzle line
  u32 e;
  if (!mn_major) {
    e = swizzle_bits == 0 ? (row % 8) * 8 + (row / 8) * sbo_e + (k % 8) + (k / 8) * lbo_e
                          : (row % 8) * line + (row / 8) * sbo_e + (k % 8) + (k / 8) * 8;
  } else {
    e = swizzle_bits == 0 ? (row % 8) + (row / 8) * sbo_e + (k % 8) * 8 + (k / 8) * lbo_e
                          : (row % line) + (row / line) * lbo_e + (k % 8) * line + (k / 8) * sbo_e;
  }
  const u32 byte = start + 2 * e;
  const u32 mask = (1u << swizzle_bits) - 1;
  return byte ^ (((byte >> 7) & mask) << 4);
}

TEST(WgmmaLayout, ElementAddressesMatchTheCanonicalLayouts) {
  const struct {
    wg::Swizzle s;
    int bits;
  } swizzles[] = {{wg::Swizzle::None, 0}, {wg::Swizzle::B32, 1}, {wg::Swizzle::B64, 2}, {wg::Swizzle::B128, 3}};
  for (const auto& sw : swizzles) {
    for (bool mn : {false, true}) {
      for (u32 start : {0u, 1024u, 2048u + 32u}) {
        const u32 lbo = 4096, sbo = 1024;
        const u64 d = tile::wgmma_descriptor(start, lbo, sbo, static_cast<tile::WgmmaSwizzle>(static_cast<int>(sw.s)));
        for (u32 row = 0; row < 256; ++row) {
          for (u32 k = 0; k < 16; ++k) {
            ASSERT_EQ(wg::element_address(wg::decode(d), mn, row, k),
                      canonical_address(start, lbo, sbo, sw.bits, mn, static_cast<int>(row), static_cast<int>(k)))
                << "swizzle " << sw.bits << " mn " << mn << " start " << start << " row " << row << " k " << k;
          }
        }
      }
    }
  }
}

// ---- Whole products. Operands are small integers, so every order of summation gives the same f32.

std::uint16_t to_half(float x, bool bf16) {
  std::uint32_t f;
  std::memcpy(&f, &x, 4);
  if (bf16) return static_cast<std::uint16_t>(f >> 16);
  if (x == 0.0f) return 0;
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xFF) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((f >> 13) & 0x3FFu));
}

struct Operands {
  int n, k;
  bool bf16;
  std::vector<float> a, b;  // a: 64 x k, b: n x k (row-major)
  std::vector<std::uint16_t> ah, bh;
  std::vector<float> reference() const {  // D = A·Bᵀ, 64 x n
    std::vector<float> d(static_cast<std::size_t>(64 * n));
    for (int m = 0; m < 64; ++m)
      for (int c = 0; c < n; ++c) {
        float s = 0;
        for (int x = 0; x < k; ++x) s += a[m * k + x] * b[c * k + x];
        d[m * n + c] = s;
      }
    return d;
  }
};

Operands random_operands(int n, int k, bool bf16, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Operands o{n, k, bf16, {}, {}, {}, {}};
  for (int i = 0; i < 64 * k; ++i) o.a.push_back(static_cast<float>(static_cast<int>(rng() % 9) - 4));
  for (int i = 0; i < n * k; ++i) o.b.push_back(static_cast<float>(static_cast<int>(rng() % 9) - 4));
  for (float x : o.a) o.ah.push_back(to_half(x, bf16));
  for (float x : o.b) o.bh.push_back(to_half(x, bf16));
  return o;
}

// The first 1024-byte boundary of the shared window at or after `smem` (the block's dynamic shared
// memory), and in *window its shared-window address. The emulator's window starts at
// RUDNN_EMU_SHARED_WINDOW_BASE, which is no swizzle pattern's boundary (as a GPU's need not be), so a
// swizzled tile is placed as the kernels place their first ones (tile::swizzle_aligned); launches
// give 1024 bytes more.
template <class T>
T* pattern_aligned(T* smem, u32* window) {
  T* aligned = tile::swizzle_aligned(smem);
  *window = rudnn::shared_address(aligned);
  return aligned;
}

// Writes the accumulators through the tile's map into a 64 x N row-major output.
template <int N>
void store_accumulators(const float (&d)[N / 2], float* out) {
  const auto map =
      tile::WgmmaAccumulatorMap::of(static_cast<int>(threadIdx.x / 32), static_cast<int>(threadIdx.x % 32));
  for (int i = 0; i < N / 2; ++i) out[map.row(i) * N + map.col(i)] = d[i];
}

// SS through tile/wgmma.cuh: A 64 x K and B N x K in SwizzledKMajor tiles, K = 128 (two panels).
template <class T, int N>
void swizzled_kernel(void** args) {
  constexpr int K = 128;
  using TileA = tile::SwizzledKMajor<64, K>;
  using TileB = tile::SwizzledKMajor<N, K>;
  const auto* a = ptr<const T>(args, 0);
  const auto* b = ptr<const T>(args, 1);
  float* out = ptr<float>(args, 2);
  u32 window = 0;
  T* sa = pattern_aligned(rudnn::dynamic_shared<T>(), &window);
  T* sb = sa + TileA::kBytes / 2;
  const int tid = static_cast<int>(threadIdx.x);
  for (int c = tid; c < 64 * K / 8; c += 128) std::memcpy(TileA::chunk(sa, c / (K / 8), c % (K / 8)), a + 8 * c, 16);
  for (int c = tid; c < N * K / 8; c += 128) std::memcpy(TileB::chunk(sb, c / (K / 8), c % (K / 8)), b + 8 * c, 16);
  rudnn::fence_proxy_async_shared();
  __syncthreads();
  float d[N / 2];
  rudnn::wgmma_fence();
  tile::wgmma_panel<T, N, TileA, TileB>(d, sa, 0, sb, 0, 0, false);
  tile::wgmma_panel<T, N, TileA, TileB>(d, sa, 0, sb, 0, 64, true);
  rudnn::wgmma_commit();
  rudnn::wgmma_wait<0>();
  rudnn::wgmma_fence_operand(d);
  store_accumulators<N>(d, out);
}

template <class T, int N>
void check_swizzled(bool bf16, std::uint32_t seed) {
  const Operands o = random_operands(N, 128, bf16, seed);
  const std::vector<float> want = o.reference();
  const std::size_t shared = (64 + N) * 128 * 2 + 1024;
  for (const auto& s : kAllSchedules) {
    std::vector<float> d(static_cast<std::size_t>(64 * N), -1.0f);
    EMU_EXPECT_OK(run(swizzled_kernel<T, N>, {1, 1, 1}, {128, 1, 1}, shared, s, o.ah.data(), o.bh.data(), d.data()));
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(d[i], want[i]) << "N " << N << " bf16 " << bf16 << " " << schedule_name(s) << " element " << i;
  }
}

TEST_F(EmulatorTest, WgmmaSwizzledTilesMatchReference) {
  check_swizzled<rudnn::bf16, 64>(true, 1);
  check_swizzled<rudnn::f16, 64>(false, 2);
  check_swizzled<rudnn::bf16, 128>(true, 3);
  check_swizzled<rudnn::bf16, 256>(true, 4);
  check_swizzled<rudnn::f16, 32>(false, 5);
}

// The other layouts, placed by the canonical formulas: A K-major without swizzle (SS) or in
// registers (RS), B MN-major (transposed) without swizzle or 128B-swizzled. One k16 step, N = 128.
constexpr int kN = 128;
constexpr u32 kALbo = 128, kASbo = 256;           // A interleaved: k halves 128 B apart, row groups 256 B
constexpr u32 kBNoneLbo = 2048, kBNoneSbo = 128;  // B MN-major interleaved
constexpr u32 kBSwLbo = 2048, kBSwSbo = 1024;     // B MN-major 128B: 64-row blocks 2 KiB, k groups 1 KiB
constexpr u32 kABytes = 2048, kBBase = 4096;      // B after A, 1024-aligned

void layouts_kernel(void** args) {
  const auto* a = ptr<const std::uint16_t>(args, 0);  // 64 x 16
  const auto* b = ptr<const std::uint16_t>(args, 1);  // 128 x 16
  float* out = ptr<float>(args, 2);
  const int mode = arg<int>(args, 3);  // 0: SS, B interleaved; 1: RS, B swizzled
  u32 w = 0;
  auto* smem = pattern_aligned(rudnn::dynamic_shared<unsigned char>(), &w);
  const int tid = static_cast<int>(threadIdx.x);
  for (int e = tid; e < 64 * 16; e += 128)
    std::memcpy(smem + canonical_address(0, kALbo, kASbo, 0, false, e / 16, e % 16), a + e, 2);
  for (int e = tid; e < kN * 16; e += 128) {
    const u32 at = mode == 0 ? canonical_address(kBBase, kBNoneLbo, kBNoneSbo, 0, true, e / 16, e % 16)
                             : canonical_address(kBBase, kBSwLbo, kBSwSbo, 3, true, e / 16, e % 16);
    std::memcpy(smem + at, b + e, 2);
  }
  __syncthreads();
  float d[kN / 2];
  u32 regs[4] = {0, 0, 0, 0};  // A for the RS form: live until the wait that retires the wgmma
  rudnn::wgmma_fence();
  if (mode == 0) {
    rudnn::wgmma_f16_ss<kN, false, true>(
        d, tile::wgmma_descriptor(w, kALbo, kASbo, tile::WgmmaSwizzle::None),
        tile::wgmma_descriptor(w + kBBase, kBNoneLbo, kBNoneSbo, tile::WgmmaSwizzle::None), false);
  } else {
    for (int v = 0; v < 8; ++v) {
      const lanes::RowCol rc = wg::a_register_element(tid / 32, tid % 32, v);
      regs[v / 2] |= static_cast<u32>(a[rc.row * 16 + rc.col]) << (16 * (v % 2));
    }
    rudnn::wgmma_f16_rs<kN, true>(
        d, regs, tile::wgmma_descriptor(w + kBBase, kBSwLbo, kBSwSbo, tile::WgmmaSwizzle::B128), false);
  }
  rudnn::wgmma_commit();
  rudnn::wgmma_wait<0>();
  store_accumulators<kN>(d, out);
}

TEST_F(EmulatorTest, WgmmaInterleavedTransposedAndRegisterOperands) {
  const Operands o = random_operands(kN, 16, false, 5);
  const std::vector<float> want = o.reference();
  for (int mode : {0, 1}) {
    std::vector<float> d(64 * kN, -1.0f);
    EMU_EXPECT_OK(run(layouts_kernel, {1, 1, 1}, {128, 1, 1}, kBBase + 8192 + 1024, kRandom, o.ah.data(), o.bh.data(),
                      d.data(), &mode));
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(d[i], want[i]) << "mode " << mode << " element " << i;
  }
}

// ---- The asynchronous semantics: operands are read, and D written, when the group is retired.

// Two groups into two accumulators; after wait<1> only the first is done, the second still poisoned;
// after wait<0> both are.
void groups_kernel(void** args) {
  float* out = ptr<float>(args, 0);
  auto* s = rudnn::dynamic_shared<std::uint16_t>();
  const int tid = static_cast<int>(threadIdx.x);
  const std::uint16_t one = 0x3C00;  // f16
  for (int e = tid; e < (64 + 64) * 16; e += 128) s[e] = one;
  __syncthreads();
  // A 64 x 16 interleaved at 0 (row groups 256 B, k halves 128 B); B 64 x 16 likewise at 2048; the
  // descriptors hold shared-window addresses.
  const u32 w = rudnn::shared_address(s);
  const u64 da = tile::wgmma_descriptor(w, 128, 256, tile::WgmmaSwizzle::None);
  const u64 db = tile::wgmma_descriptor(w + 2048, 128, 256, tile::WgmmaSwizzle::None);
  float d0[32], d1[32];
  rudnn::wgmma_fence();
  rudnn::wgmma_f16_ss<64>(d0, da, db, false);
  rudnn::wgmma_commit();
  rudnn::wgmma_f16_ss<64>(d1, da, db, false);
  rudnn::wgmma_commit();
  const float before = d0[0];
  rudnn::wgmma_wait<1>();
  out[tid * 4 + 0] = before;
  out[tid * 4 + 1] = d0[0];
  out[tid * 4 + 2] = d1[0];
  rudnn::wgmma_wait<0>();
  out[tid * 4 + 3] = d1[0];
}

TEST_F(EmulatorTest, WgmmaRetiresGroupsAtTheWait) {
  std::vector<float> out(128 * 4, 0.0f);
  EMU_EXPECT_OK(run(groups_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, out.data()));
  for (int t = 0; t < 128; ++t) {
    EXPECT_TRUE(std::isnan(out[t * 4 + 0])) << "D read before its wait_group is poisoned, thread " << t;
    EXPECT_EQ(out[t * 4 + 1], 16.0f) << t;
    EXPECT_TRUE(std::isnan(out[t * 4 + 2])) << "the second group is still in flight after wait<1>, thread " << t;
    EXPECT_EQ(out[t * 4 + 3], 16.0f) << t;
  }
}

// ---- Misuse. Each kernel takes a `fault` selector; 0 is the correct use.

// Faults 13 and 14: a helper issues and commits a wgmma whose accumulators (13) or A registers (14,
// the RS form) are its own locals, and returns before the caller's wait retires it. Not instrumented
// by ASan, whose use-after-return mode would move the locals off the fiber's stack (where the
// emulator judges them) and then report the retirement's write itself.
[[gnu::noinline, gnu::no_sanitize_address]] void issue_with_own_registers(int fault, float (&caller_d)[32], u64 da,
                                                                          u64 db) {
  float own_d[32];
  // From an argument, so that the array is a stack local (constants could be merged into .rodata).
  const u32 one = static_cast<u32>(db >> 62) == 0 ? 0x3C003C00u : 0u;
  const u32 a[4] = {one, one, one, one};
  rudnn::wgmma_fence();
  if (fault == 13)
    rudnn::wgmma_f16_ss<64>(own_d, da, db, false);
  else
    rudnn::wgmma_f16_rs<64>(caller_d, a, db, false);
  rudnn::wgmma_commit();
}

void misuse_kernel(void** args) {
  const int fault = arg<int>(args, 0);
  const auto* global = ptr<const std::uint16_t>(args, 1);  // fault 8: B's source
  auto* s = rudnn::dynamic_shared<std::uint16_t>();
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  for (int e = tid; e < 128 * 16; e += static_cast<int>(blockDim.x)) s[e] = 0x3C00;
  __syncthreads();
  const u32 w = rudnn::shared_address(s);
  u64 da = tile::wgmma_descriptor(w, 128, 256, tile::WgmmaSwizzle::None);
  u64 db = tile::wgmma_descriptor(w + 2048, 128, 256, tile::WgmmaSwizzle::None);
  if (fault == 1 && tid == 37) db = tile::wgmma_descriptor(w + 2064, 128, 256, tile::WgmmaSwizzle::None);
  if (fault == 2 && warp == 2) db = tile::wgmma_descriptor(w + 2064, 128, 256, tile::WgmmaSwizzle::None);
  if (fault == 3) db = tile::wgmma_descriptor(w + 8192, 128, 256, tile::WgmmaSwizzle::None);
  if (fault == 9) db |= u64{2} << 49;  // a base offset
  if (fault == 10) {                   // 128B-swizzled, starting at the pattern's second row
    const u32 row1 = (w + 1023u) / 1024u * 1024u + 128u;
    db = tile::wgmma_descriptor(row1, 16, 1024, tile::WgmmaSwizzle::B128);
  }
  if (fault == 8) {  // B copied in, but the wgmma issued before the copies have landed
    rudnn::cp_async_ca<16>(s + 1024 + 8 * tid, global + 8 * tid);
    rudnn::cp_async_commit();
  }
  if (fault == 11 || fault == 12) {  // B copied in and landed; 12 (correct) fences it for the async proxy
    rudnn::cp_async_ca<16>(s + 1024 + 8 * tid, global + 8 * tid);
    rudnn::cp_async_commit();
    rudnn::cp_async_wait<0>();
    if (fault == 12 || tid != 70) rudnn::fence_proxy_async_shared();
    __syncthreads();
  }
  float d[32];
  if (fault == 13 || fault == 14) {
    issue_with_own_registers(fault, d, da, db);
    rudnn::wgmma_wait<0>();
    return;
  }
  if (fault != 4) rudnn::wgmma_fence();
  if (fault != 5 || warp != 3) rudnn::wgmma_f16_ss<64>(d, da, db, false);
  rudnn::wgmma_commit();
  if (fault == 7 && tid == 5) s[1024 + 3] = 0x4000;  // B written while the wgmma is in flight
  if (fault == 8) rudnn::cp_async_wait<0>();
  if (fault != 6) rudnn::wgmma_wait<0>();
}

TEST_F(EmulatorTest, WgmmaCorrectUseRuns) {
  const int ok = 0;
  EMU_EXPECT_OK(run(misuse_kernel, {1, 1, 1}, {256, 1, 1}, 4096, kRandom, &ok));
}

TEST_F(EmulatorTest, WgmmaDescriptorsMustAgreeAcrossTheWarp) {
  const int f = 1;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"wgmma descriptors differ between lanes", "lane 5"});
}

TEST_F(EmulatorTest, WgmmaWarpsOfAWarpgroupMustAgree) {
  const int f = 2;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"warps of one warpgroup issue different wgmma", "warp 2"});
}

TEST_F(EmulatorTest, WgmmaOperandsMustBeInSharedMemory) {
  const int f = 3;
  const std::string address = "shared address " + std::to_string(RUDNN_EMU_SHARED_WINDOW_BASE + 8192);
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"wgmma operand outside shared memory", address.c_str(), "4096 bytes"});
}

// The PTX ISA's base offset (for swizzled operands that start off their pattern's first row) is not
// emulated: a descriptor that would need it is a fault, not a guess at the hardware's XOR.
TEST_F(EmulatorTest, WgmmaDescriptorsTheEmulatorDoesNotModelAreFaults) {
  const int base_offset = 9, off_phase = 10;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &base_offset),
               {"wgmma descriptor the emulator does not model", "a nonzero base offset", "descriptor b"});
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &off_phase),
               {"wgmma descriptor the emulator does not model", "off its pattern's first row"});
}

TEST_F(EmulatorTest, WgmmaNeedsAFence) {
  const int f = 4;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"wgmma.mma_async without a wgmma.fence", "m64n64k16.f16"});
}

TEST_F(EmulatorTest, WgmmaEveryWarpOfTheWarpgroupIssues) {
  const int f = 5;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"a warp of a warpgroup skipped a wgmma", "warp 3"});
}

TEST_F(EmulatorTest, WgmmaMustBeRetiredBeforeExit) {
  const int f = 6;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"thread exited with a wgmma in flight", "wait_group"});
}

TEST_F(EmulatorTest, WgmmaOperandsMustNotChangeInFlight) {
  const int f = 7;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f),
               {"wgmma operand changed while the wgmma was in flight", "B element (0, k 3)", "0x3c00 at issue",
                "0x4000 at the wait"});
}

TEST_F(EmulatorTest, WgmmaReadsCopiesThatHaveLanded) {
  const int f = 8;
  std::vector<std::uint16_t> b(128 * 8, 0x3C00);
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &f, b.data()),
               {"wgmma operand changed while the wgmma was in flight", "0xffff at issue"});
}

// cp.async writes through the generic proxy; a wgmma reads through the async proxy, which sees those
// writes only after the writing thread's fence.proxy.async. Here thread 70 skips it: its 16 bytes,
// 1120 bytes into B, are column 38's k 0..7 (B interleaved: 8-column cores 256 bytes apart, a
// column's 16 bytes per k half, k halves 128 bytes apart), the first element named.
TEST_F(EmulatorTest, WgmmaSeesCopiesOnlyAfterTheProxyFence) {
  std::vector<std::uint16_t> b(128 * 8, 0x3C00);
  const int fenced = 12, unfenced = 11;
  EMU_EXPECT_OK(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kRandom, &fenced, b.data()));
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &unfenced, b.data()),
               {"wgmma reads shared memory that a cp.async wrote without fence.proxy.async", "B element (38, k 0)",
                "warp 0's share unfenced", "fence_proxy_async_shared"});
}

// The accumulators and A registers of a wgmma stay alive until the wait that retires it: on the host
// the retirement would otherwise write into (or read from) a frame that has returned.
TEST_F(EmulatorTest, WgmmaRegistersStayInScopeUntilTheWait) {
  const int accumulators = 13, a_registers = 14;
  expect_fault(
      run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &accumulators),
      {"wgmma registers in a frame that returned before their wait", "'s accumulators", "their frame returned"});
  expect_fault(run(misuse_kernel, {1, 1, 1}, {128, 1, 1}, 4096, kForward, &a_registers),
               {"wgmma registers in a frame that returned before their wait", "'s A registers"});
}

TEST_F(EmulatorTest, WgmmaNeedsAWholeWarpgroup) {
  const int ok = 0;
  expect_fault(run(misuse_kernel, {1, 1, 1}, {96, 1, 1}, 4096, kForward, &ok),
               {"wgmma in an incomplete warpgroup", "a block of 96 threads"});
}

}  // namespace
}  // namespace emu_test
