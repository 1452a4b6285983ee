// Every registered attention variant (compiler::attention_variants for each strategy: the tensor-core
// flash kernel per head dim, FlashUnit's tiles, Fallback's three kernels) for f32/f16/bf16, without
// and with a mask and an f32 bias, lowered by the compiler and compiled with NVRTC for sm_80 and
// sm_90a: no spills, no stack, no static shared memory. The tensor-core kernels also with one head
// per panel (rudnn.head_panels); the warpgroup-MMA ones (flash_wgmma, D = 64, 128, 256) for sm_90a
// alone, with no wgmma serialized by ptxas. Shared sources are compiled once.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

#if RUDNN_TEST_USE_COMPILER
#include "rudnn/compiler/pipeline.h"

namespace nv = rudnn::compiler::nvrtc;
namespace compiler = rudnn::compiler;
using rudnn::DType;
using rudnn::contracts::AttentionStrategy;

namespace {

using Variant = rudnn::testing::KernelVariant;

std::vector<Variant> attention_variants() {
  const rudnn::testing::ScopedEnv opt_in("RUDNN_WGMMA", "1");  // the wgmma tiles lower on sm_90a
  std::vector<Variant> out;
  std::set<std::string> seen;
  auto add = [&](DType dtype, std::int64_t d, AttentionStrategy strategy, bool mods) {
    rudnn::contracts::AttentionSignature sig;
    sig.query = {{2, 8, 64, d}, dtype, 0};
    sig.key = {{2, 2, 64, d}, dtype, 0};
    sig.value = {{2, 2, 64, d}, dtype, 0};
    if (mods) {
      sig.mask = rudnn::contracts::AttentionOperand{{1, 8, 64, 64}, DType::U8, 0};
      sig.bias = rudnn::contracts::AttentionOperand{{2, 1, 64, 64}, DType::F32, 0};
    }
    sig.causal = true;
    for (const auto& config : compiler::attention_variants(strategy, dtype, d, d))
      for (bool head_panels : {false, true}) {
        compiler::AttentionRequest request{sig, strategy, config, nullptr};
        request.head_panels = head_panels;
        auto lowered = compiler::lower_attention(request, compiler::Target{});
        EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
        if (!lowered.ok()) continue;
        for (const auto& l : lowered->launches)
          if (seen.insert(l.source).second)
            out.push_back({l.entry, l.source, l.entry.find("_flash_wgmma_") != std::string::npos});
      }
  };
  for (bool mods : {false, true}) {
    for (DType dtype : {DType::F16, DType::BF16})
      for (std::int64_t d : {64, 96, 128, 256}) add(dtype, d, AttentionStrategy::FlashBlackboxAccelerated, mods);
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      for (std::int64_t d : {64, 128, 256}) add(dtype, d, AttentionStrategy::FlashUnit, mods);
      add(dtype, 128, AttentionStrategy::Fallback, mods);
    }
  }
  return out;
}

TEST(AttentionVariants, EveryRegisteredConfigLowers) {
  const auto variants = attention_variants();
  EXPECT_GE(variants.size(), 50u);
  std::size_t wgmma = 0;
  for (const auto& v : variants) {
    EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
    wgmma += v.sm90a_only;
  }
  EXPECT_EQ(wgmma, 24u) << "flash_wgmma for f16 and bf16, D = 64, 128 and 256, without and with mods, both panel kinds";
}

TEST(AttentionVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(attention_variants(), "attention");
}

}  // namespace
#endif
