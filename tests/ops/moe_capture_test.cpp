// Capture safety of an MoE step (SPEC §13, issue 16 item 3): once warm, routing (softmax top-k and
// DeepSeek's grouped sigmoid), dispatch, the experts (Scalar and TensorCore) and combine — step by
// step and as the whole layer — run inside a (simulated) capture: no plan is made, nothing
// compiles, no module loads and the host never waits for the queue (the routing's selection stays
// on the device; only RoutingPlan::create, for indices made elsewhere, reads them back, and it is
// refused inside a capture). The results equal the eager ones bit for bit. On a GPU,
// tests/gpu/serving_gpu_test.cpp captures and replays a step with the MoE layer in it.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "op_test_util.h"
#include "rudnn/moe.h"
#include "rudnn/stats.h"
#include "simulated_capture.h"

namespace rudnn {
namespace {

using testing::host_bytes;
using testing::SimulatedCapture;

TEST(MoeCapture, WarmStepRunsInsideACaptureWithTheEagerBits) {
  std::mt19937_64 rng(testing::fresh_seed());
  auto made = Queue::create(Device::host());
  ASSERT_TRUE(made.ok());
  const Queue& queue = *made;
  // Dims no other test of this binary uses, so the first step is cold.
  const std::int64_t e = 4, inter = 24, h = 40, tokens = 7;
  const DType dt = DType::BF16;
  auto up = [&](const Shape& s, DType dtype) {
    auto data =
        HostData::from_f64(s, dtype, testing::random_values(static_cast<std::size_t>(element_count(s)), dtype, rng));
    return std::move(Tensor::upload(data, queue).value());
  };
  auto experts = moe::SwiGluExperts::create(up({e, inter, h}, dt), up({e, inter, h}, dt), up({e, h, inter}, dt));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = up({tokens, h}, dt), logits = up({tokens, e}, dt), bias = up({e}, DType::F32);
  const moe::RoutingOptions options{2, true};
  const moe::GroupRoutingOptions grouped{2, 2, 1, true, true, 1.5f};

  // The step's outputs: the combine of each experts strategy, the whole layer, the grouped layer.
  auto step = [&]() -> std::vector<Tensor> {
    std::vector<Tensor> out;
    auto routing = moe::route(logits, options);
    EXPECT_TRUE(routing.ok()) << routing.error().message();
    if (!routing.ok()) return out;
    auto dispatched = routing->dispatch(input);
    EXPECT_TRUE(dispatched.ok()) << dispatched.error().message();
    if (!dispatched.ok()) return out;
    for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore}) {
      auto rows = experts->forward_dispatched_with_strategy(*dispatched, strategy);
      EXPECT_TRUE(rows.ok()) << rows.error().message();
      if (!rows.ok()) return out;
      auto combined = dispatched->combine(*rows);
      EXPECT_TRUE(combined.ok()) << combined.error().message();
      if (combined.ok()) out.push_back(std::move(combined.value()));
    }
    auto layer = experts->forward(input, logits, options);
    EXPECT_TRUE(layer.ok()) << layer.error().message();
    if (layer.ok()) out.push_back(std::move(layer.value()));
    auto deepseek = experts->forward_sigmoid_grouped(input, logits, bias, grouped, moe::GroupedStrategy::Auto);
    EXPECT_TRUE(deepseek.ok()) << deepseek.error().message();
    if (deepseek.ok()) out.push_back(std::move(deepseek.value()));
    return out;
  };

  std::vector<std::vector<std::byte>> eager;
  for (const Tensor& t : step()) eager.push_back(host_bytes(t));  // cold: plans, compiles, module loads
  ASSERT_EQ(eager.size(), 4u);
  std::vector<Tensor> captured;
  const Stats before = stats();
  {
    const SimulatedCapture capture(queue);
    captured = step();
    // Indices made outside the routing ops are read back to be checked: refused inside a capture.
    auto indices = Tensor::empty({tokens, 2}, DType::U32, queue);
    auto weights = Tensor::empty({tokens, 2}, DType::F32, queue);
    ASSERT_TRUE(indices.ok() && weights.ok());
    auto made_elsewhere = moe::RoutingPlan::create(*indices, *weights, e);
    ASSERT_FALSE(made_elsewhere.ok());
    EXPECT_EQ(made_elsewhere.error().kind(), ErrorKind::CaptureViolation) << made_elsewhere.error().message();
  }
  const Stats after = stats();
  EXPECT_EQ(after.host_synchronizations, before.host_synchronizations);
  EXPECT_EQ(after.module_loads, before.module_loads);
  EXPECT_EQ(after.jit_compiles, before.jit_compiles);
  EXPECT_EQ(after.plan_cache_misses, before.plan_cache_misses);
  ASSERT_EQ(captured.size(), eager.size());
  for (std::size_t i = 0; i < captured.size(); ++i) EXPECT_EQ(host_bytes(captured[i]), eager[i]) << "output " << i;
}

}  // namespace
}  // namespace rudnn
