// The families on a GPU with the least shared memory of any supported one (sm_86 / sm_89: 99 KiB a
// block; the host device made to report it, tests/ops/device_limits.h). The host device refuses a
// launch over the limit it reports, as the CUDA driver does, so a call that runs here took only
// kernels that fit. Where the heuristics' kernels fit 99 KiB unchanged (normalization, flash
// attention at D = 256 — exactly 99 KiB —, the MoE experts' largest tensor-core tiles, forward and
// backward, the chunked gated delta rule at chunk 32), the result is the H100-sized device's bit for
// bit: the same kernels. The chunked gated delta rule at chunk 64 changes tile (16 columns) with
// the same bits, tested here; the other calls whose kernels change (convolution, paged attention)
// and the dispatch's expert bound are tested with their families (conv_test, paged_attention_test,
// moe_forward_test).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <random>

#include "device_limits.h"
#include "op_test_util.h"
#include "plan_cache.h"
#include "rudnn/attention.h"
#include "rudnn/gated_delta.h"
#include "rudnn/moe.h"
#include "rudnn/normalization.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using testing::fresh_seed;

// `run` once on the host device as it is (227 KiB) and once reporting sm_86's 99 KiB: both succeed,
// with the same bytes in every output.
void expect_same_on_a_smaller_gpu(const char* what, const std::function<std::vector<Tensor>()>& run) {
  SCOPED_TRACE(what);
  const std::vector<Tensor> large = run();
  std::vector<Tensor> small;
  {
    testing::ScopedSharedMemory sm86(testing::kSm86SharedBytes);
    small = run();
  }
  ASSERT_EQ(large.size(), small.size());
  ASSERT_FALSE(large.empty());
  for (std::size_t i = 0; i < large.size(); ++i)
    EXPECT_EQ(testing::host_bytes(large[i]), testing::host_bytes(small[i])) << "output " << i;
}

// Whether a plan in the cache ran a kernel of `op` whose entry name contains `part`.
bool ran(const char* op, std::string_view part) {
  const auto entries = ops::PlanCache::instance().kernel_entries(op);
  return std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return e.find(part) != e.npos; });
}

// Unwraps a result, failing the test (and returning an empty list) on an error.
template <class R>
bool ok(const R& r) {
  EXPECT_TRUE(r.ok()) << r.error().message();
  return r.ok();
}

class SmallestSharedMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = fresh_seed();
    rng_.seed(seed_);
  }
  Tensor random(const Shape& shape, DType dtype, double lo = -1.0, double hi = 1.0) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return testing::upload(shape, dtype, testing::random_values(static_cast<std::size_t>(n), dtype, rng_, lo, hi),
                           Device::host());
  }
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(SmallestSharedMemory, NormalizationAndFlashAttention) {
  SCOPED_TRACE(fmt::format("seed {}", seed_));
  const Tensor x = random({16, 4096}, DType::BF16), gamma = random({4096}, DType::F32);
  expect_same_on_a_smaller_gpu("rms_norm", [&]() -> std::vector<Tensor> {
    auto y = normalization::rms_norm(x, gamma, 1e-6f);
    return ok(y) ? std::vector<Tensor>{*y} : std::vector<Tensor>{};
  });
  // D = 256 on tensor cores: the 64 × 32 tile needs (64 + 4·32)·(256 + 8)·2 = 101376 bytes, all of it.
  const Tensor q = random({1, 2, 40, 256}, DType::BF16), k = random({1, 2, 37, 256}, DType::BF16),
               v = random({1, 2, 37, 256}, DType::BF16);
  expect_same_on_a_smaller_gpu("flash attention, D = 256", [&]() -> std::vector<Tensor> {
    auto o = attention::attention(q, k, v, std::nullopt, std::nullopt, {},
                                  attention::AttentionStrategy::FlashBlackboxAccelerated);
    return ok(o) ? std::vector<Tensor>{*o} : std::vector<Tensor>{};
  });
}

// 256 tokens, top-2 of 4 experts: ~128 rows an expert, the largest tensor-core tile of the forward
// (128 × 128 × 32 in 3 stages, 90 KiB for gate/up) and the backward's tensor-core kernels.
TEST_F(SmallestSharedMemory, MoeExpertsForwardAndBackwardOnTensorCores) {
  SCOPED_TRACE(fmt::format("seed {}", seed_));
  const std::int64_t tokens = 256, experts = 4, hidden = 64, inter = 128;
  auto made = moe::SwiGluExperts::create(random({experts, inter, hidden}, DType::BF16, -0.2, 0.2),
                                         random({experts, inter, hidden}, DType::BF16, -0.2, 0.2),
                                         random({experts, hidden, inter}, DType::BF16, -0.2, 0.2));
  ASSERT_TRUE(ok(made));
  const moe::SwiGluExperts& layer = *made;
  const Tensor x = random({tokens, hidden}, DType::BF16), logits = random({tokens, experts}, DType::F32);
  const auto run = [&]() -> std::vector<Tensor> {
    auto routing = moe::route(logits, {2, true});
    if (!ok(routing)) return {};
    auto dispatched = routing->dispatch(x);
    if (!ok(dispatched)) return {};
    auto trained = layer.forward_dispatched_training(*dispatched, moe::GroupedStrategy::TensorCore);
    if (!ok(trained)) return {};
    auto grads = trained->cache.backward_with_strategy(trained->output, moe::GroupedStrategy::TensorCore);
    if (!ok(grads)) return {};
    return {trained->output, grads->dinput, grads->dgate, grads->dup, grads->ddown};
  };
  expect_same_on_a_smaller_gpu("experts forward and backward", run);
  // The kernels the comparison was about (the plan cache was cleared when the smaller GPU's scope
  // ended; this run fills it again): under RUDNN_WGMMA=1 the full-size GPU runs the wgmma tiles,
  // which the smaller one has no shared memory for.
  run();
  const bool wgmma = testing::wgmma_opted_in();
  EXPECT_TRUE(
      ran("rudnn.swiglu_experts", wgmma ? "gate_up_mma_bf16_wgmma_128x128x64_s4" : "gate_up_mma_bf16_128x128x32"));
  EXPECT_TRUE(ran("rudnn.swiglu_experts_backward",
                  wgmma ? "weight_grad_bf16_bf16_wgmma_128x64x64_s4" : "weight_grad_bf16_bf16_64x64x32_w2x2_s3"));
}

// Qwen3-Next's shapes (K = V = 128, bf16). Chunk 32 (82304 bytes) runs the same kernel on both GPUs.
// Chunk 64 needs 125440 bytes with 32 state columns, over sm_86/sm_89's 101376, so there the
// heuristic takes the tensor cores' 16-column slices (92672 bytes): each column's sums are the
// same and the splits' scales (the slice's largest |S| and |W|) are powers of two, so bf16 gives
// the same bits. Chunk 128 needs 191232 bytes even at 16 columns: Unsupported, naming chunk_size.
TEST_F(SmallestSharedMemory, ChunkedGatedDeltaRule) {
  SCOPED_TRACE(fmt::format("seed {}", seed_));
  const std::int64_t b = 1, h = 2, t = 70, kd = 128, vd = 128;
  gated_delta::GatedDeltaInput in{random({b, h, t, kd}, DType::BF16, -0.1, 0.1),
                                  random({b, h, t, kd}, DType::BF16, -0.1, 0.1),
                                  random({b, h, t, vd}, DType::BF16),
                                  random({b, h, t}, DType::BF16, 0.0, 1.0),
                                  random({b, h, t}, DType::BF16, -0.5, 0.0),
                                  random({b, h, kd, vd}, DType::F32),
                                  0.088f};
  for (std::int64_t chunk : {32, 64})
    expect_same_on_a_smaller_gpu(chunk == 32 ? "chunk 32" : "chunk 64", [&]() -> std::vector<Tensor> {
      auto out = gated_delta::chunk_gated_delta_rule(in, chunk);
      if (!ok(out)) return {};
      return {out->output, out->final_state};
    });
  testing::ScopedSharedMemory sm86(testing::kSm86SharedBytes);  // clears the plan cache: only this call's kernel
  ASSERT_TRUE(ok(gated_delta::chunk_gated_delta_rule(in, 64)));
  EXPECT_TRUE(ran("rudnn.gated_delta", "_t256_c16_tc"))
      << "chunk 64 on sm_86 did not run the 16-column tensor-core tile";
  auto refused = gated_delta::chunk_gated_delta_rule(in, 128);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::Unsupported) << refused.error().message();
  EXPECT_EQ(refused.error().argument(), "chunk_size");
  EXPECT_NE(refused.error().message().find("101376"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("191232"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace rudnn
