// Dynamic shared memory (poison, limit, alignment), atomics across blocks on several OS threads,
// and cp.async (deferred copies, poisoned destination, zero fill, groups).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "emu_test.h"

namespace emu_test {
namespace {

// Thread 0 of every block checks that the whole arena is poison, then scribbles over it.
void poison_kernel(void** args) {
  int* ok = ptr<int>(args, 0);
  if (threadIdx.x == 0) {
    const auto* bytes = rudnn::dynamic_shared<unsigned char>();
    const std::size_t n = rudnn::emu_detail::thread_info().dynamic_shared_bytes;
    int good = (reinterpret_cast<std::uintptr_t>(bytes) % 16 == 0) ? 1 : 0;
    for (std::size_t i = 0; i < n; ++i) good &= bytes[i] == 0xFF;
    const float f = rudnn::dynamic_shared<float>()[3];
    good &= rudnn::is_nan(f) ? 1 : 0;
    ok[blockIdx.x] = good;
    std::memset(rudnn::dynamic_shared<unsigned char>(), 0, n);
  }
  __syncthreads();
}

TEST_F(EmulatorTest, SharedMemoryIsPoisonedAtEveryBlockStart) {
  for (unsigned workers : {1u, 2u}) {
    host::set_worker_threads(workers);
    std::vector<int> ok(16, -1);
    EMU_EXPECT_OK(run(poison_kernel, {16, 1, 1}, {8, 1, 1}, 4000, kForward, ok.data()));
    for (int b = 0; b < 16; ++b) EXPECT_EQ(ok[b], 1) << "block " << b;
  }
}

TEST_F(EmulatorTest, SharedMemoryLimitIsEnforced) {
  std::vector<int> ok(1);
  EMU_EXPECT_OK(run(poison_kernel, {1, 1, 1}, {8, 1, 1}, 227 * 1024, kForward, ok.data()));
  expect_fault(run(poison_kernel, {1, 1, 1}, {8, 1, 1}, 227 * 1024 + 1, kForward, ok.data()),
               {"dynamic_shared_bytes", "232449 bytes", "shared memory over the limit"});
  host::set_shared_memory_limit(48 * 1024);
  EMU_EXPECT_OK(run(poison_kernel, {1, 1, 1}, {8, 1, 1}, 48 * 1024, kForward, ok.data()));
  expect_fault(run(poison_kernel, {1, 1, 1}, {8, 1, 1}, 48 * 1024 + 16, kForward, ok.data()), {"at most 49152 bytes"});
}

void histogram_kernel(void** args) {
  const unsigned* data = ptr<const unsigned>(args, 0);
  unsigned* hist = ptr<unsigned>(args, 1);
  const unsigned n = arg<unsigned>(args, 2);
  float* fsum = ptr<float>(args, 3);
  int* imax = ptr<int>(args, 4);
  unsigned long long* u64 = ptr<unsigned long long>(args, 5);
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    atomicAdd(&hist[data[i] % 16], 1u);
    atomicAdd(fsum, 1.0f);
    atomicMax(imax, static_cast<int>(data[i] % 100000));
    atomicAdd(u64, static_cast<unsigned long long>(data[i]));
  }
}

TEST_F(EmulatorTest, AtomicsAcrossBlocksOnSeveralThreads) {
  unsigned n = 200000;
  std::vector<unsigned> data(n);
  for (unsigned i = 0; i < n; ++i) data[i] = (i * 2654435761u) ^ (i >> 3);
  std::vector<unsigned> want(16, 0);
  int want_max = 0;
  unsigned long long want_sum = 0;
  for (unsigned v : data) {
    ++want[v % 16];
    want_max = std::max(want_max, static_cast<int>(v % 100000));
    want_sum += v;
  }
  host::set_worker_threads(4);
  std::vector<unsigned> hist(16, 0);
  float fsum = 0;
  int imax = -1;
  unsigned long long u64 = 0;
  EMU_EXPECT_OK(
      run(histogram_kernel, {97, 1, 1}, {128, 1, 1}, 0, kRandom, data.data(), hist.data(), &n, &fsum, &imax, &u64));
  EXPECT_EQ(hist, want);
  EXPECT_EQ(fsum, static_cast<float>(n));
  EXPECT_EQ(imax, want_max);
  EXPECT_EQ(u64, want_sum);
}

void atomic_ops_kernel(void** args) {
  int* v = ptr<int>(args, 0);
  if (threadIdx.x == 0) {
    v[0] = atomicCAS(&v[1], 5, 9);  // v[1] was 5: swapped, returns 5
    v[2] = atomicCAS(&v[3], 4, 9);  // v[3] was 6: unchanged, returns 6
    v[4] = atomicExch(&v[5], 11);   // returns 10
    v[6] = atomicMin(&v[7], -3);    // returns 2
    v[8] = atomicSub(&v[9], 5);     // returns 1
  }
}

TEST_F(EmulatorTest, AtomicReturnValues) {
  int v[10] = {0, 5, 0, 6, 0, 10, 0, 2, 0, 1};
  EMU_EXPECT_OK(run(atomic_ops_kernel, {1, 1, 1}, {1, 1, 1}, 0, kForward, v));
  const int want[10] = {5, 9, 6, 6, 10, 11, 2, -3, 1, -4};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v[i], want[i]) << i;
}

void math_kernel(void** args) {
  float* o = ptr<float>(args, 0);
  if (threadIdx.x != 0) return;
  o[0] = rsqrtf(4.0f);
  o[1] = __fdividef(1.0f, 4.0f);
  o[2] = __expf(0.0f) + exp2f(3.0f);
  o[3] = fmaxf(NAN, 2.0f) + fminf(3.0f, NAN) + fabsf(-1.0f);
  o[4] = rudnn::is_nan(sqrtf(-1.0f)) && rudnn::is_inf(expf(1000.0f)) && !rudnn::is_nan(1.0f) && !rudnn::is_inf(-NAN) &&
         rudnn::is_inf(-static_cast<double>(INFINITY)) && rudnn::is_nan(static_cast<double>(NAN)) &&
         !rudnn::is_nan(1e300);
}

TEST_F(EmulatorTest, MathVocabulary) {
  float o[5] = {};
  EMU_EXPECT_OK(run(math_kernel, {1, 1, 1}, {1, 1, 1}, 0, kForward, o));
  EXPECT_EQ(o[0], 0.5f);
  EXPECT_EQ(o[1], 0.25f);
  EXPECT_EQ(o[2], 9.0f);
  EXPECT_EQ(o[3], 6.0f);
  EXPECT_EQ(o[4], 1.0f);
}

// Each thread copies 16 bytes (threads with odd index only 8, zero-filling the rest); the
// destination reads as poison until the wait.
void cp_async_kernel(void** args) {
  const unsigned char* src = ptr<const unsigned char>(args, 0);
  unsigned char* out = ptr<unsigned char>(args, 1);
  int* poisoned = ptr<int>(args, 2);
  unsigned char* s = rudnn::dynamic_shared<unsigned char>();
  const unsigned t = threadIdx.x;
  s[16 * t] = 0;
  rudnn::cp_async_ca<16>(s + 16 * t, src + 16 * t, t % 2 ? 8u : 16u);
  rudnn::cp_async_commit();
  int p = 1;
  for (int i = 0; i < 16; ++i) p &= s[16 * t + i] == 0xFF;
  poisoned[t] = p;
  rudnn::cp_async_wait<0>();
  __syncthreads();
  for (int i = 0; i < 16; ++i) out[16 * t + i] = s[16 * ((t + 1) % blockDim.x) + i];
}

TEST_F(EmulatorTest, CpAsyncDeferredWithZeroFill) {
  std::vector<unsigned char> src(16 * 64), out(16 * 64, 7);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  std::vector<int> poisoned(64, 0);
  alignas(16) static unsigned char aligned_src[16 * 64];
  std::memcpy(aligned_src, src.data(), src.size());
  EMU_EXPECT_OK(
      run(cp_async_kernel, {1, 1, 1}, {64, 1, 1}, 16 * 64, kReverse, aligned_src, out.data(), poisoned.data()));
  for (unsigned t = 0; t < 64; ++t) {
    EXPECT_EQ(poisoned[t], 1) << t;
    const unsigned from = (t + 1) % 64;
    for (unsigned i = 0; i < 16; ++i) {
      const unsigned char want = (from % 2 && i >= 8) ? 0 : src[16 * from + i];
      ASSERT_EQ(out[16 * t + i], want) << t << " " << i;
    }
  }
}

// Two groups: wait_group 1 retires only the older one.
void cp_async_groups_kernel(void** args) {
  const float* src = ptr<const float>(args, 0);
  float* out = ptr<float>(args, 1);
  float* s = rudnn::dynamic_shared<float>();
  if (threadIdx.x != 0) return;
  rudnn::cp_async_ca<4>(s + 0, src + 0);
  rudnn::cp_async_commit();
  rudnn::cp_async_ca<8>(s + 2, src + 2);
  rudnn::cp_async_commit();
  rudnn::cp_async_wait<1>();
  out[0] = s[0], out[1] = s[2], out[2] = s[3];
  rudnn::cp_async_wait_all();
  out[3] = s[2], out[4] = s[3];
}

TEST_F(EmulatorTest, CpAsyncWaitGroup) {
  alignas(16) float src[4] = {1.5f, 0.0f, 2.5f, 3.5f};
  float out[5] = {};
  EMU_EXPECT_OK(run(cp_async_groups_kernel, {1, 1, 1}, {32, 1, 1}, 64, kForward, src, out));
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 2.5f);
  EXPECT_EQ(out[4], 3.5f);
}

void cp_async_global_dst_kernel(void** args) {
  float* g = ptr<float>(args, 0);
  rudnn::cp_async_ca<4>(g, g + 1);
}

TEST_F(EmulatorTest, CpAsyncIntoGlobalMemoryIsAFault) {
  alignas(16) float g[4] = {};
  expect_fault(run(cp_async_global_dst_kernel, {1, 1, 1}, {1, 1, 1}, 64, kForward, g),
               {"outside shared memory", "cp.async destination", "memory_test.cpp:"});
}

}  // namespace
}  // namespace emu_test

#if defined(__SANITIZE_ADDRESS__)
namespace emu_test {
namespace {

// The arena is allocated with exactly the launch's byte count, so AddressSanitizer catches a kernel
// that indexes past the end of its dynamic shared memory.
void shared_overflow_kernel(void**) {
  float* s = rudnn::dynamic_shared<float>();
  s[threadIdx.x + 1] = 1.0f;  // thread 63 writes one float past the 64
}

TEST_F(EmulatorTest, AddressSanitizerCatchesSharedMemoryOverflow) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        rudnn_emu_bind(host::emulator_api());
        (void)run(shared_overflow_kernel, {1, 1, 1}, {64, 1, 1}, 64 * sizeof(float), kForward);
      },
      "heap-buffer-overflow");
}

}  // namespace
}  // namespace emu_test
#endif
