// Warp collectives: shuffles at segment edges, votes with partial masks, __syncwarp, warp faults,
// and the typical block reduction (warp shuffles + shared memory).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "emu_test.h"

namespace emu_test {
namespace {

// Expected source lane straight from EMULATOR-FACTS.md (or -1: the caller's own value).
int facts_source(int mode, int lane, int a, int width) {
  const int base = lane & ~(width - 1);
  switch (mode) {
    case 0: return base + (a % width);
    case 1: return (lane % width) >= a ? lane - a : -1;
    case 2: return (lane % width) + a < width ? lane + a : -1;
    case 3: {
      const int j = lane ^ a;
      return (j / width) > (lane / width) ? -1 : j;  // a later segment: own value
    }
  }
  return -2;
}

template <class T>
T lane_value(int lane) {
  if constexpr (sizeof(T) == 8) {
    return static_cast<T>(0x1234567800000000ull * static_cast<unsigned long long>(lane + 1) + 77);
  } else {
    return static_cast<T>(lane * 10 + 7);
  }
}

template <class T>
void shuffle_kernel(void** args) {
  const int mode = arg<int>(args, 0), a = arg<int>(args, 1), width = arg<int>(args, 2);
  T* out = ptr<T>(args, 3);
  const int lane = static_cast<int>(threadIdx.x);
  const T v = lane_value<T>(lane);
  T r{};
  switch (mode) {
    case 0: r = __shfl_sync(0xffffffffu, v, a, width); break;
    case 1: r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(a), width); break;
    case 2: r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(a), width); break;
    case 3: r = __shfl_xor_sync(0xffffffffu, v, a, width); break;
  }
  out[lane] = r;
}

template <class T>
void check_shuffles() {
  for (int width : {4, 8, 16, 32}) {
    for (int mode = 0; mode < 4; ++mode) {
      const int max_arg = mode == 0 ? 40 : mode == 3 ? 31 : width;
      for (int a = 0; a <= max_arg; ++a) {
        std::vector<T> out(32);
        EMU_EXPECT_OK(run(shuffle_kernel<T>, {1, 1, 1}, {32, 1, 1}, 0, kReverse, &mode, &a, &width, out.data()));
        for (int lane = 0; lane < 32; ++lane) {
          const int src = facts_source(mode, lane, a, width);
          const T want = lane_value<T>(src < 0 ? lane : src);
          ASSERT_EQ(out[lane], want) << "mode " << mode << " arg " << a << " width " << width << " lane " << lane;
        }
      }
    }
  }
}

TEST_F(EmulatorTest, ShuffleSegmentEdgesInt) { check_shuffles<int>(); }
TEST_F(EmulatorTest, ShuffleSegmentEdgesFloat) { check_shuffles<float>(); }
TEST_F(EmulatorTest, ShuffleSegmentEdgesDouble) { check_shuffles<double>(); }
TEST_F(EmulatorTest, ShuffleSegmentEdgesU64) { check_shuffles<unsigned long long>(); }

// Lanes 0..15 shuffle among themselves; reading lanes 16..31 (outside the mask) yields poison.
void partial_mask_shuffle_kernel(void** args) {
  float* out = ptr<float>(args, 0);
  const unsigned lane = threadIdx.x;
  if (lane < 16) {
    const float v = static_cast<float>(lane);
    out[lane] = __shfl_xor_sync(0x0000ffffu, v, 1);        // stays inside the mask
    out[32 + lane] = __shfl_xor_sync(0x0000ffffu, v, 16);  // reads a lane outside the mask
    out[64 + lane] = __shfl_down_sync(0x0000ffffu, v, 4, 16);
  }
}

TEST_F(EmulatorTest, ShuffleReadingOutsideMaskIsPoisoned) {
  std::vector<float> out(96, -1.0f);
  EMU_EXPECT_OK(run(partial_mask_shuffle_kernel, {1, 1, 1}, {32, 1, 1}, 0, kForward, out.data()));
  for (unsigned lane = 0; lane < 16; ++lane) {
    EXPECT_EQ(out[lane], static_cast<float>(lane ^ 1));
    EXPECT_TRUE(std::isnan(out[32 + lane])) << lane;
    EXPECT_EQ(out[64 + lane], static_cast<float>(lane + 4 < 16 ? lane + 4 : lane));
  }
}

void reduce_kernel(void** args) {
  int* out = ptr<int>(args, 0);
  const unsigned lane = threadIdx.x;
  const int v = static_cast<int>(lane) - 20;  // negative and positive values
  if (lane % 3 == 0) {                        // lanes 0, 3, ..., 30: a partial mask
    const unsigned m = 0x49249249u;
    const int add = __reduce_add_sync(m, v);
    const int mn = __reduce_min_sync(m, v);
    const int mx = __reduce_max_sync(m, v);
    const unsigned umin = __reduce_min_sync(m, static_cast<unsigned>(v));
    const unsigned umax = __reduce_max_sync(m, static_cast<unsigned>(v));
    const unsigned a = __reduce_and_sync(m, lane | 0x100u);
    const unsigned o = __reduce_or_sync(m, lane);
    const unsigned x = __reduce_xor_sync(m, lane);
    if (lane == 3) {
      out[0] = add, out[1] = mn, out[2] = mx, out[3] = static_cast<int>(umin);
      out[4] = static_cast<int>(umax), out[5] = static_cast<int>(a), out[6] = static_cast<int>(o);
      out[7] = static_cast<int>(x);
    }
  }
}

TEST_F(EmulatorTest, WarpReductionsOverPartialMasks) {
  int out[8] = {};
  EMU_EXPECT_OK(run(reduce_kernel, {1, 1, 1}, {32, 1, 1}, 0, kRandom, out));
  int add = 0, mn = 1000, mx = -1000;
  unsigned umin = ~0u, umax = 0, a = ~0u, o = 0, x = 0;
  for (unsigned l = 0; l < 32; l += 3) {
    const int v = static_cast<int>(l) - 20;
    add += v, mn = std::min(mn, v), mx = std::max(mx, v);
    umin = std::min(umin, static_cast<unsigned>(v)), umax = std::max(umax, static_cast<unsigned>(v));
    a &= l | 0x100u, o |= l, x ^= l;
  }
  EXPECT_EQ(out[0], add);
  EXPECT_EQ(out[1], mn);
  EXPECT_EQ(out[2], mx);
  EXPECT_EQ(static_cast<unsigned>(out[3]), umin);
  EXPECT_EQ(static_cast<unsigned>(out[4]), umax);
  EXPECT_EQ(static_cast<unsigned>(out[5]), a);
  EXPECT_EQ(static_cast<unsigned>(out[6]), o);
  EXPECT_EQ(static_cast<unsigned>(out[7]), x);
}

void not_in_mask_kernel(void**) { (void)__shfl_sync(0xfffffffeu, 1, 0); }

TEST_F(EmulatorTest, LaneNotInItsOwnMaskIsAFault) {
  expect_fault(run(not_in_mask_kernel, {1, 1, 1}, {32, 1, 1}, 0, kForward),
               {"lane not in its own mask", "thread (0,0,0)", "warp_test.cpp:"});
}

void bad_width_kernel(void**) { (void)__shfl_sync(0xffffffffu, 1.0f, 0, 12); }

TEST_F(EmulatorTest, InvalidShuffleWidthIsAFault) {
  expect_fault(run(bad_width_kernel, {1, 1, 1}, {32, 1, 1}, 0, kForward), {"width 12"});
}

void vote_kernel(void** args) {
  unsigned* out = ptr<unsigned>(args, 0);
  const unsigned lane = threadIdx.x;
  // Even and odd lanes vote in two diverged groups at once.
  if (lane % 2 == 0) {
    const unsigned m = 0x55555555u;
    const unsigned b = __ballot_sync(m, lane % 4 == 0);
    const int any = __any_sync(m, lane == 6);
    const int all = __all_sync(m, lane < 32);
    const int all_not = __all_sync(m, lane != 30);
    const int any_not = __any_sync(m, lane == 7);  // lane 7 is not in the mask
    if (lane == 0) out[0] = b, out[1] = any, out[2] = all, out[3] = all_not, out[4] = any_not;
  } else {
    const unsigned b = __ballot_sync(0xaaaaaaaau, 1);
    if (lane == 1) out[5] = b;
  }
}

TEST_F(EmulatorTest, VotesConsiderOnlyTheMask) {
  for (const auto& s : kAllSchedules) {
    unsigned out[6] = {};
    EMU_EXPECT_OK(run(vote_kernel, {1, 1, 1}, {32, 1, 1}, 0, s, out));
    EXPECT_EQ(out[0], 0x11111111u);
    EXPECT_EQ(out[1], 1u);
    EXPECT_EQ(out[2], 1u);
    EXPECT_EQ(out[3], 0u);
    EXPECT_EQ(out[4], 0u);
    EXPECT_EQ(out[5], 0xaaaaaaaau);
  }
}

// __syncwarp orders shared-memory traffic within a warp; halves sync separately, then together.
void syncwarp_kernel(void** args) {
  int* out = ptr<int>(args, 0);
  int* s = rudnn::dynamic_shared<int>();
  const unsigned lane = threadIdx.x;
  s[lane] = static_cast<int>(lane) * 3;
  __syncwarp(lane < 16 ? 0x0000ffffu : 0xffff0000u);
  const int mine = s[lane ^ 1];
  __syncwarp();
  out[lane] = mine + s[31 - lane];
}

TEST_F(EmulatorTest, SyncwarpWithDivergedHalves) {
  for (const auto& s : kAllSchedules) {
    int out[32] = {};
    EMU_EXPECT_OK(run(syncwarp_kernel, {1, 1, 1}, {32, 1, 1}, 32 * sizeof(int), s, out));
    for (int l = 0; l < 32; ++l) EXPECT_EQ(out[l], 3 * (l ^ 1) + 3 * (31 - l));
  }
}

void exited_lane_kernel(void**) {
  if (threadIdx.x == 9) return;
  __syncwarp();
}

TEST_F(EmulatorTest, MaskNamingAnExitedLaneIsAFault) {
  for (const auto& s : kAllSchedules) expect_fault(run(exited_lane_kernel, {1, 1, 1}, {32, 1, 1}, 0, s), {"exited"});
}

void mixed_collectives_kernel(void**) {
  if (threadIdx.x < 8) {
    (void)__ballot_sync(0xffffffffu, 1);
  } else {
    (void)__shfl_sync(0xffffffffu, 1, 0);
  }
}

TEST_F(EmulatorTest, DifferentCollectivesOnOneMaskAreAFault) {
  expect_fault(run(mixed_collectives_kernel, {1, 1, 1}, {32, 1, 1}, 0, kForward),
               {"different warp collectives", "__ballot_sync", "__shfl_sync"});
}

void partial_warp_kernel(void** args) {
  int* out = ptr<int>(args, 0);
  const unsigned mask = arg<unsigned>(args, 1);
  if (threadIdx.x >= 32) out[threadIdx.x] = __shfl_down_sync(mask, static_cast<int>(threadIdx.x), 1, 16);
}

TEST_F(EmulatorTest, PartialLastWarp) {
  std::vector<int> out(48, 0);
  unsigned good = 0x0000ffffu, bad = 0xffffffffu;
  EMU_EXPECT_OK(run(partial_warp_kernel, {1, 1, 1}, {48, 1, 1}, 0, kForward, out.data(), &good));
  for (int t = 32; t < 48; ++t) EXPECT_EQ(out[t], t < 47 ? t + 1 : t);
  expect_fault(run(partial_warp_kernel, {1, 1, 1}, {48, 1, 1}, 0, kForward, out.data(), &bad), {"do not exist"});
}

// The typical block reduction: shuffle-reduce each warp, warp sums through shared memory, the
// first warp reduces those, one atomic per block.
template <class T>
void block_reduce_kernel(void** args) {
  const T* in = ptr<const T>(args, 0);
  T* total = ptr<T>(args, 1);
  const unsigned n = arg<unsigned>(args, 2);
  T* warp_sums = rudnn::dynamic_shared<T>();
  const unsigned t = threadIdx.x, lane = t % warpSize, warp = t / warpSize;
  const unsigned warps = blockDim.x / warpSize;
  T v = 0;
  for (unsigned i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) v += in[i];
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? warp_sums[lane] : T(0);
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) atomicAdd(total, v);
  }
}

TEST_F(EmulatorTest, BlockReductionGivesTheSum) {
  unsigned n = 100003;
  std::mt19937 rng(20261202);
  std::vector<int> ints(n);
  std::vector<float> floats(n);
  for (unsigned i = 0; i < n; ++i) {
    ints[i] = static_cast<int>(rng() % 2001) - 1000;
    floats[i] = static_cast<float>(static_cast<int>(rng() % 201) - 100) / 64.0f;
  }
  long long want_int = 0;
  double want_float = 0;
  for (unsigned i = 0; i < n; ++i) want_int += ints[i], want_float += floats[i];
  for (unsigned workers : {1u, 4u}) {
    host::set_worker_threads(workers);
    for (const auto& s : kAllSchedules) {
      int got_int = 0;
      float got_float = 0;
      EMU_EXPECT_OK(
          run(block_reduce_kernel<int>, {37, 1, 1}, {256, 1, 1}, 8 * sizeof(int), s, ints.data(), &got_int, &n));
      EMU_EXPECT_OK(run(block_reduce_kernel<float>, {37, 1, 1}, {256, 1, 1}, 8 * sizeof(float), s, floats.data(),
                        &got_float, &n));
      EXPECT_EQ(got_int, want_int) << schedule_name(s);
      // Multiples of 1/64 whose sums stay below 2^24/64 in magnitude: every partial sum is exact.
      EXPECT_EQ(static_cast<double>(got_float), want_float) << schedule_name(s);
    }
  }
}

}  // namespace
}  // namespace emu_test
