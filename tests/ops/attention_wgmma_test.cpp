// Flash attention on Hopper's warpgroup MMA (attention/flash_wgmma.cuh; AttentionConfig.cpp registers
// it as flash_mma's 128x128 tiles for D = 64 and 128 and 128x32 for D = 256, f16 and bf16) through
// the public entry: the heuristic's kernel of FlashBlackboxAccelerated where the target has wgmma
// (sm_90a with the RUDNN_WGMMA=1 opt-in). The host emulation device reports sm_90a and emulates
// wgmma; on a GPU the same check runs as *OnGpu (scripts/gpu-check step 1b). Against the FP64 oracle
// and against the mma.sync kernel the same call runs without the opt-in; poisoned outputs, fresh
// seeds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "op_test_util.h"
#include "reference/attention.h"
#include "rudnn/attention.h"
#include "rudnn/compiler/pipeline.h"
#include "wgmma_opt_in.h"

namespace rudnn {
namespace {

using attention::AttentionStrategy;
using testing::fresh_seed;
using testing::host_values;

struct WgmmaCase {
  std::int64_t b, hq, hkv, tq, tk, d;
  bool causal, mask, bias;
};

// Prefill with GQA over several row and key tiles (panel rows 4·130 = 520, 300 keys: 3 key tiles, the
// last partial), causal with mask and bias at D = 128, decode rows of a group (Tq = 1), Tq > Tk causal
// (early rows see nothing), a one-key call, and D = 256 (32-key tiles) with GQA, causal and a mask.
// Decode and the one-key call have panels of 64 rows or fewer, which keep the mma.sync kernel under
// the opt-in (the rudnn.short_panels hint); the template test runs decode on the wgmma kernel.
const WgmmaCase kCases[] = {
    {2, 8, 2, 130, 300, 64, true, false, false}, {1, 4, 4, 70, 70, 128, true, true, true},
    {3, 16, 2, 1, 200, 128, false, false, true}, {1, 2, 1, 150, 40, 64, true, false, true},
    {1, 2, 2, 1, 1, 128, false, false, false},   {1, 4, 2, 45, 77, 256, true, true, false},
};

// The call's output; `kernel`: the flash kernel the plan must have launched ("flash_wgmma" /
// "flash_mma").
std::vector<double> run(const Device& device, const WgmmaCase& c, DType dtype, const std::vector<double>& q,
                        const std::vector<double>& k, const std::vector<double>& v,
                        const reference::AttentionExtra& mask, const reference::AttentionExtra& bias,
                        const char* kernel) {
  ops::PlanCache::instance().clear();  // kernel_entries below then names this call's kernels alone
  std::optional<Tensor> tm, tb;
  if (c.mask) tm = testing::upload({c.b, c.hq, c.tq, c.tk}, DType::U8, mask.values, device);
  if (c.bias) tb = testing::upload({c.b, c.hq, c.tq, c.tk}, DType::F32, bias.values, device);
  auto out = attention::attention(testing::upload({c.b, c.hq, c.tq, c.d}, dtype, q, device),
                                  testing::upload({c.b, c.hkv, c.tk, c.d}, dtype, k, device),
                                  testing::upload({c.b, c.hkv, c.tk, c.d}, dtype, v, device), tm, tb,
                                  {std::nullopt, c.causal}, AttentionStrategy::FlashBlackboxAccelerated);
  EXPECT_TRUE(out.ok()) << out.error().message();
  if (!out.ok()) return {};
  std::string entries;
  for (const std::string& entry : ops::PlanCache::instance().kernel_entries("rudnn.attention")) entries += entry + " ";
  const std::string tile = std::string(kernel) == "flash_wgmma"
                               ? fmt::format("_d{}_m128_n{}", c.d, c.d == 256 ? 32 : 128)
                               : fmt::format("_d{}_m", c.d);
  EXPECT_NE(entries.find(fmt::format("rudnn_attention_{}_{}_", kernel, dtype_name(dtype))), std::string::npos)
      << entries;
  EXPECT_NE(entries.find(tile), std::string::npos) << entries;
  EXPECT_EQ(entries.find(std::string(kernel) == "flash_wgmma" ? "_flash_mma_" : "_flash_wgmma_"), std::string::npos)
      << entries;
  return host_values(*out);
}

void check_wgmma_attention(const Device& device, DType dtype) {
  for (const WgmmaCase& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("B={} Hq={} Hkv={} Tq={} Tk={} D={} causal={} mask={} bias={} seed={}", c.b, c.hq, c.hkv,
                             c.tq, c.tk, c.d, c.causal, c.mask, c.bias, seed));
    std::mt19937_64 rng(seed);
    const auto q = testing::random_values(static_cast<std::size_t>(c.b * c.hq * c.tq * c.d), dtype, rng);
    const auto k = testing::random_values(static_cast<std::size_t>(c.b * c.hkv * c.tk * c.d), dtype, rng);
    const auto v = testing::random_values(static_cast<std::size_t>(c.b * c.hkv * c.tk * c.d), dtype, rng);
    reference::AttentionExtra mask, bias;
    if (c.mask) {
      mask.batch = c.b, mask.heads = c.hq;
      std::uniform_real_distribution<double> u(0, 1);
      mask.values.resize(static_cast<std::size_t>(c.b * c.hq * c.tq * c.tk));
      for (double& m : mask.values) m = u(rng) < 0.3 ? 1 : 0;
      for (std::int64_t bh = 0; bh < c.b * c.hq; ++bh)  // row 0 of every (b, h) fully masked: zeros out
        for (std::int64_t j = 0; j < c.tk; ++j) mask.values[static_cast<std::size_t>(bh * c.tq * c.tk + j)] = 1;
    }
    if (c.bias) {
      bias.batch = c.b, bias.heads = c.hq;
      bias.values = testing::random_values(static_cast<std::size_t>(c.b * c.hq * c.tq * c.tk), DType::F32, rng);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    const auto want =
        reference::attention(q, k, v, {c.b, c.hq, c.hkv, c.tq, c.tk, c.d, c.d}, mask, bias, scale, c.causal);
    const bool short_panels = c.hq / c.hkv * c.tq <= compiler::kShortPanelRows;
    std::vector<double> wgmma;
    {
      const testing::WgmmaOptIn opt_in;
      wgmma = run(device, c, dtype, q, k, v, mask, bias, short_panels ? "flash_mma" : "flash_wgmma");
    }
    const auto mma = run(device, c, dtype, q, k, v, mask, bias, "flash_mma");
    if (wgmma.empty() || mma.empty()) continue;
    EXPECT_LE(testing::relative_l2(wgmma, want), 2 * testing::tolerance(dtype));
    EXPECT_LE(testing::relative_l2(wgmma, mma), 2 * testing::tolerance(dtype));
    if (c.mask)  // the fully masked rows are exactly zero
      for (std::int64_t bh = 0; bh < c.b * c.hq; ++bh)
        for (std::int64_t e = 0; e < c.d; ++e) EXPECT_EQ(wgmma[static_cast<std::size_t>(bh * c.tq * c.d + e)], 0.0);
  }
}

TEST(AttentionWgmma, OptInRunsTheWgmmaKernelOnHost) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment (no mma.sync peer)";
  ops::set_poison_outputs(true);
  check_wgmma_attention(Device::host(), DType::BF16);
  check_wgmma_attention(Device::host(), DType::F16);
}

TEST(AttentionWgmma, OptInRunsTheWgmmaKernelOnGpu) {
  if (testing::wgmma_opted_in()) GTEST_SKIP() << "SKIP: RUDNN_WGMMA=1 in the environment (no mma.sync peer)";
  std::string why;
  const auto device = testing::wgmma_gpu(why);
  if (!device) GTEST_SKIP() << "SKIP: " << why;
  check_wgmma_attention(*device, DType::BF16);
}

// Without the opt-in the heuristic keeps the mma.sync kernel, on the host emulation device too; D = 96
// has no wgmma tile and keeps it under the opt-in, as do short panels (rudnn.short_panels).
TEST(AttentionWgmma, WithoutTheOptInOrTileTheMmaKernel) {
  auto entries = [](std::int64_t d, bool short_panels = false) {
    contracts::AttentionSignature sig;
    sig.query = {{2, 8, 64, d}, DType::BF16, 0};
    sig.key = {{2, 2, 64, d}, DType::BF16, 0};
    sig.value = {{2, 2, 64, d}, DType::BF16, 0};
    sig.causal = true;
    compiler::AttentionRequest request{sig, contracts::AttentionStrategy::FlashBlackboxAccelerated, {}, nullptr};
    request.short_panels = short_panels;
    auto lowered = compiler::lower_attention(request, ops::target_for(Device::host()));
    EXPECT_TRUE(lowered.ok()) << lowered.error().message();
    std::string out;
    if (lowered.ok())
      for (const auto& l : lowered->launches) out += l.entry + " ";
    return out;
  };
  if (!testing::wgmma_opted_in())
    for (std::int64_t d : {64, 128, 256}) {
      const std::string e = entries(d);
      EXPECT_NE(e.find("flash_mma"), std::string::npos) << e;
    }
  const testing::WgmmaOptIn opt_in;
  for (std::int64_t d : {64, 128, 256}) {
    const std::string e = entries(d);
    EXPECT_NE(e.find("flash_wgmma"), std::string::npos) << e;
  }
  for (const std::string& e : {entries(96), entries(128, true)}) EXPECT_NE(e.find("flash_mma"), std::string::npos) << e;
}

}  // namespace
}  // namespace rudnn
