// Capture safety of the paged calls (SPEC §8, issue 13 item 3): after DevicePlan::upload and
// SplitWorkspace::create, warm attention, mla, *_with_workspace and append (in place) calls allocate
// no device memory, never wait for the queue and load no module — what a CUDA graph capture needs —
// as the statistics counters see it on the host emulation device. (On a GPU the GPU test also
// captures and replays a graph.)
#include <gtest/gtest.h>

#include <random>

#include "op_test_util.h"
#include "rudnn/paged_attention.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using paged_attention::DevicePlan;
using paged_attention::HostPlan;
using paged_attention::SplitWorkspace;

TEST(PagedCapture, WarmCallsAllocateNothingSynchronizeNothingLoadNothing) {
  const Device host = Device::host();
  std::mt19937_64 rng(testing::fresh_seed());
  const std::int64_t pages = 6, ps = 4, hq = 4, hkv = 2, d = 8, r = 16, p = 4;
  // Two sequences (lengths 9 and 5), one decode row each.
  auto hp =
      HostPlan::create(ps, pages, std::vector<std::vector<std::int32_t>>{{4, 1, 3}, {0, 5}}, {9, 5}, {0, 1}, {8, 4});
  ASSERT_TRUE(hp.ok()) << hp.error().message();
  const DType dt = DType::BF16;
  auto up = [&](const Shape& s) {
    return testing::upload(s, dt, testing::random_values(static_cast<std::size_t>(element_count(s)), dt, rng), host);
  };
  Tensor q = up({2, hq, d}), k = up({pages, ps, hkv, d}), v = up({pages, ps, hkv, d});
  Tensor mq = up({2, hq, r}), mqp = up({2, hq, p}), latent = up({pages, ps, 1, r}), kp = up({pages, ps, 1, p});
  Tensor nk = up({2, hkv, d}), nv = up({2, hkv, d});
  auto plan = DevicePlan::upload(*hp, q);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  auto ws = SplitWorkspace::create(q, 2, hq, d, 4);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  auto mws = SplitWorkspace::create(q, 2, hq, r, 4);
  ASSERT_TRUE(mws.ok()) << mws.error().message();

  auto all_calls = [&] {
    ASSERT_TRUE(plan->attention(q, k, v, 0.3f, true).ok());
    ASSERT_TRUE(plan->attention_with_workspace(q, k, v, 0.3f, true, *ws).ok());
    ASSERT_TRUE(plan->mla(mq, mqp, latent, kp, 0.2f, false).ok());
    ASSERT_TRUE(plan->mla_with_workspace(mq, mqp, latent, kp, 0.2f, false, *mws).ok());
    // In place: the caches are handed over (std::move), so no copy is needed.
    auto appended = plan->append(nk, nv, std::move(k), std::move(v));
    ASSERT_TRUE(appended.ok()) << appended.error().message();
    k = std::move(appended->key_cache);
    v = std::move(appended->value_cache);
  };
  all_calls();  // cold: plans, compiles, module loads
  const Stats before = stats();
  all_calls();  // warm
  const Stats after = stats();
  // The outputs of attention and mla are fresh tensors (the caller's results): 4 allocations, and
  // nothing else — no workspace, no temporaries, no cache copies.
  EXPECT_EQ(after.device_allocations - before.device_allocations, 4u);
  EXPECT_EQ(after.module_loads, before.module_loads);
  EXPECT_EQ(after.host_synchronizations, before.host_synchronizations);
  EXPECT_EQ(after.jit_compiles, before.jit_compiles);
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
  EXPECT_EQ(after.plan_cache_hits - before.plan_cache_hits, 5u);
}

}  // namespace
}  // namespace rudnn
