// Block barriers, scheduling perturbation, fault reporting, geometry and launch limits.
#include <atomic>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "emu_test.h"

namespace emu_test {
namespace {

// Each thread publishes its index and reads its neighbour's, with the barrier left out.
void missing_barrier_kernel(void** args) {
  float* out = ptr<float>(args, 0);
  float* s = rudnn::dynamic_shared<float>();
  const unsigned i = threadIdx.x, n = blockDim.x;
  s[i] = static_cast<float>(i);
  out[blockIdx.x * n + i] = s[(i + 1) % n];
}
void fixed_barrier_kernel(void** args) {
  float* out = ptr<float>(args, 0);
  float* s = rudnn::dynamic_shared<float>();
  const unsigned i = threadIdx.x, n = blockDim.x;
  s[i] = static_cast<float>(i);
  __syncthreads();
  out[blockIdx.x * n + i] = s[(i + 1) % n];
}

std::vector<float> run_neighbour(host::ThreadEntry k, const host::ScheduleOptions& s) {
  std::vector<float> out(4 * 64, -1.0f);
  EMU_EXPECT_OK(run(k, {4, 1, 1}, {64, 1, 1}, 64 * sizeof(float), s, out.data()));
  return out;
}

TEST_F(EmulatorTest, MissingBarrierIsCaughtByScheduleOrder) {
  const auto fwd = run_neighbour(missing_barrier_kernel, kForward);
  const auto rev = run_neighbour(missing_barrier_kernel, kReverse);
  EXPECT_NE(std::memcmp(fwd.data(), rev.data(), fwd.size() * sizeof(float)), 0)
      << "forward and reverse order must disagree on a kernel with a missing barrier";
}

TEST_F(EmulatorTest, FixedKernelAgreesUnderEveryOrder) {
  for (const auto& s : kAllSchedules) {
    const auto out = run_neighbour(fixed_barrier_kernel, s);
    for (unsigned b = 0; b < 4; ++b)
      for (unsigned i = 0; i < 64; ++i)
        ASSERT_EQ(out[b * 64 + i], static_cast<float>((i + 1) % 64)) << schedule_name(s);
  }
}

void divergent_barrier_kernel(void**) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

TEST_F(EmulatorTest, DivergentBarrierIsAFault) {
  for (const auto& s : kAllSchedules) {
    SCOPED_TRACE(schedule_name(s));
    expect_fault(run(divergent_barrier_kernel, {2, 1, 1}, {32, 1, 1}, 0, s),
                 {"divergent barrier", "block (0,0,0)", "barrier_test.cpp:"});
  }
}

void early_exit_kernel(void** args) {
  if (threadIdx.x == arg<unsigned>(args, 0)) return;
  __syncthreads();
}

TEST_F(EmulatorTest, ThreadExitingWhileOthersWaitIsAFault) {
  for (unsigned who : {0u, 5u, 31u}) {
    for (const auto& s : kAllSchedules) {
      SCOPED_TRACE(schedule_name(s) + " exiting thread " + std::to_string(who));
      expect_fault(run(early_exit_kernel, {1, 1, 1}, {32, 1, 1}, 0, s, &who),
                   {"exited", "barrier_test.cpp:", "block (0,0,0)"});
    }
  }
}

void barrier_vs_warp_kernel(void**) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncwarp();
  }
}

TEST_F(EmulatorTest, DeadlockIsReportedNotHung) {
  for (const auto& s : kAllSchedules)
    expect_fault(run(barrier_vs_warp_kernel, {1, 1, 1}, {32, 1, 1}, 0, s),
                 {"deadlock", "__syncthreads()", "__syncwarp(0xffffffff)"});
}

void barrier_reductions_kernel(void** args) {
  int* out = ptr<int>(args, 0);
  const unsigned i = threadIdx.x;
  const int count = __syncthreads_count(i % 3 == 0);
  const int all = __syncthreads_and(i < 1000);
  const int none = __syncthreads_and(i != 7);
  const int any = __syncthreads_or(i == 100);
  const int nothing = __syncthreads_or(0);
  if (i == 0) {
    out[0] = count, out[1] = all, out[2] = none, out[3] = any, out[4] = nothing;
  }
}

TEST_F(EmulatorTest, SyncthreadsCountAndOr) {
  int out[5] = {-1, -1, -1, -1, -1};
  EMU_EXPECT_OK(run(barrier_reductions_kernel, {1, 1, 1}, {200, 1, 1}, 0, kReverse, out));
  EXPECT_EQ(out[0], 67);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 1);
  EXPECT_EQ(out[4], 0);
}

void fault_in_block_kernel(void** args) {
  const unsigned bad = arg<unsigned>(args, 0);
  if (blockIdx.x >= bad && threadIdx.x == 3) rudnn::trap("deliberate trap");
  __syncthreads();
}

TEST_F(EmulatorTest, LowestFaultingBlockIsReportedWithAnyWorkerCount) {
  for (unsigned workers : {1u, 3u}) {
    host::set_worker_threads(workers);
    unsigned bad = 57;
    expect_fault(run(fault_in_block_kernel, {400, 1, 1}, {32, 1, 1}, 0, kForward, &bad),
                 {"block (57,0,0) thread (3,0,0)", "deliberate trap", "barrier_test.cpp:"});
  }
}

void throwing_kernel(void**) {
  if (threadIdx.x == 1) throw std::runtime_error("kernel exception");
}

TEST_F(EmulatorTest, ExceptionBecomesAFault) {
  expect_fault(run(throwing_kernel, {1, 1, 1}, {4, 1, 1}, 0, kForward), {"kernel exception", "thread (1,0,0)"});
}

void geometry_kernel(void** args) {
  unsigned* out = ptr<unsigned>(args, 0);
  const unsigned bx = blockDim.x, by = blockDim.y, bz = blockDim.z;
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned t = threadIdx.x + bx * (threadIdx.y + by * threadIdx.z);
  unsigned* o = out + 8 * (block * bx * by * bz + t);
  o[0] = threadIdx.x, o[1] = threadIdx.y, o[2] = threadIdx.z;
  o[3] = blockIdx.x, o[4] = blockIdx.y, o[5] = blockIdx.z;
  o[6] = gridDim.x * gridDim.y * gridDim.z, o[7] = warpSize;
}

TEST_F(EmulatorTest, ThreeDimensionalGeometry) {
  const host::Dim3 grid{3, 2, 2}, block{4, 3, 2};
  std::vector<unsigned> out(12 * 24 * 8, 999);
  EMU_EXPECT_OK(run(geometry_kernel, grid, block, 0, kRandom, out.data()));
  for (unsigned b = 0; b < 12; ++b) {
    for (unsigned t = 0; t < 24; ++t) {
      const unsigned* o = &out[8 * (b * 24 + t)];
      EXPECT_EQ(o[0], t % 4);
      EXPECT_EQ(o[1], (t / 4) % 3);
      EXPECT_EQ(o[2], t / 12);
      EXPECT_EQ(o[3], b % 3);
      EXPECT_EQ(o[4], (b / 3) % 2);
      EXPECT_EQ(o[5], b / 6);
      EXPECT_EQ(o[6], 12u);
      EXPECT_EQ(o[7], 32u);
    }
  }
}

// Reverses the block's values through shared memory; needs every thread of a 1024-thread block.
void reverse_kernel(void** args) {
  int* data = ptr<int>(args, 0);
  int* s = rudnn::dynamic_shared<int>();
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int* d = data + blockIdx.x * n;
  s[t] = d[t];
  __syncthreads();
  d[t] = s[n - 1 - t];
}

TEST_F(EmulatorTest, ThousandTwentyFourThreadBlocks) {
  for (host::Dim3 block : {host::Dim3{1024, 1, 1}, host::Dim3{32, 32, 1}, host::Dim3{16, 1, 64}}) {
    std::vector<int> data(2 * 1024);
    std::iota(data.begin(), data.end(), 0);
    EMU_EXPECT_OK(run(reverse_kernel, {2, 1, 1}, block, 1024 * sizeof(int), kRandom, data.data()));
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 1024; ++i) ASSERT_EQ(data[b * 1024 + i], b * 1024 + 1023 - i);
  }
}

void nothing_kernel(void**) {}

TEST_F(EmulatorTest, InvalidLaunchConfigurationsAreFaults) {
  expect_fault(run(nothing_kernel, {1, 1, 1}, {1025, 1, 1}, 0, kForward),
               {"block", "1025 threads", "invalid block size"});
  expect_fault(run(nothing_kernel, {1, 1, 1}, {64, 32, 1}, 0, kForward), {"2048 threads"});
  expect_fault(run(nothing_kernel, {1, 1, 1}, {1, 1, 65}, 0, kForward), {"invalid block size"});
  expect_fault(run(nothing_kernel, {0, 1, 1}, {32, 1, 1}, 0, kForward), {"invalid grid size"});
  expect_fault(run(nothing_kernel, {1, 70000, 1}, {32, 1, 1}, 0, kForward), {"invalid grid size"});
}

void block_sum_kernel(void** args) {
  const int* in = ptr<const int>(args, 0);
  int* out = ptr<int>(args, 1);
  int* s = rudnn::dynamic_shared<int>();
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

TEST_F(EmulatorTest, TenThousandBlocks) {
  constexpr unsigned kBlocks = 10000, kThreads = 64;
  std::vector<int> in(kBlocks * kThreads);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>((i * 2654435761u) % 1000);
  for (const auto& s : {kForward, kRandom}) {
    std::vector<int> out(kBlocks, -1);
    EMU_EXPECT_OK(
        run(block_sum_kernel, {kBlocks, 1, 1}, {kThreads, 1, 1}, kThreads * sizeof(int), s, in.data(), out.data()));
    for (unsigned b = 0; b < kBlocks; ++b)
      ASSERT_EQ(out[b], std::accumulate(&in[b * kThreads], &in[(b + 1) * kThreads], 0)) << b;
  }
}

void big_stack_kernel(void** args) {
  volatile int local[4096];  // 16 KiB of "registers" spilled to the fiber's stack
  for (int i = 0; i < 4096; ++i) local[i] = i + static_cast<int>(threadIdx.x);
  __syncthreads();
  int sum = 0;
  for (int i = 0; i < 4096; ++i) sum += local[i];
  ptr<int>(args, 0)[threadIdx.x] = sum;
}

TEST_F(EmulatorTest, FibersHaveRoomForLocalArrays) {
  std::vector<int> out(256);
  EMU_EXPECT_OK(run(big_stack_kernel, {2, 1, 1}, {256, 1, 1}, 0, kForward, out.data()));
  for (int t = 0; t < 256; ++t) EXPECT_EQ(out[t], 4096 * 4095 / 2 + 4096 * t);
}

TEST_F(EmulatorTest, StacksOfAbandonedFibersAreReusedSafely) {
  for (int i = 0; i < 20; ++i) {
    expect_fault(run(divergent_barrier_kernel, {3, 1, 1}, {128, 1, 1}, 0, kRandom), {"divergent barrier"});
    unsigned who = 77;
    expect_fault(run(early_exit_kernel, {2, 1, 1}, {256, 1, 1}, 0, kReverse, &who), {"exited"});
  }
  std::vector<int> out(256);
  EMU_EXPECT_OK(run(big_stack_kernel, {2, 1, 1}, {256, 1, 1}, 0, kRandom, out.data()));
  for (int t = 0; t < 256; ++t) EXPECT_EQ(out[t], 4096 * 4095 / 2 + 4096 * t);
}

TEST_F(EmulatorTest, ConcurrentLaunchesFromSeveralHostThreads) {
  host::set_worker_threads(2);
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([c, &failures] {
      constexpr unsigned kBlocks = 50, kThreads = 64;
      for (int rep = 0; rep < 5; ++rep) {
        std::vector<int> in(kBlocks * kThreads), out(kBlocks, -1);
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 97) + c + rep;
        const auto& schedule = kAllSchedules[(c + rep) % 3];
        if (!run(block_sum_kernel, {kBlocks, 1, 1}, {kThreads, 1, 1}, kThreads * sizeof(int), schedule, in.data(),
                 out.data())
                 .ok())
          ++failures;
        for (unsigned b = 0; b < kBlocks; ++b)
          if (out[b] != std::accumulate(&in[b * kThreads], &in[(b + 1) * kThreads], 0)) ++failures;
        if (run(divergent_barrier_kernel, {4, 1, 1}, {32, 1, 1}, 0, schedule).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(EmulatorSchedule, ParseAndDefault) {
  EXPECT_EQ(host::parse_schedule("forward")->order, host::Schedule::Forward);
  EXPECT_EQ(host::parse_schedule("reverse")->order, host::Schedule::Reverse);
  EXPECT_EQ(host::parse_schedule("random")->order, host::Schedule::Random);
  const auto r = host::parse_schedule("random:42");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->order, host::Schedule::Random);
  EXPECT_EQ(r->seed, 42u);
  EXPECT_FALSE(host::parse_schedule("random:"));
  EXPECT_FALSE(host::parse_schedule("random:4x"));
  EXPECT_FALSE(host::parse_schedule("backwards"));
  const auto saved = host::default_schedule();
  host::set_default_schedule({host::Schedule::Random, 7});
  EXPECT_EQ(host::default_schedule().order, host::Schedule::Random);
  EXPECT_EQ(host::default_schedule().seed, 7u);
  host::set_default_schedule(saved);
}

}  // namespace
}  // namespace emu_test
