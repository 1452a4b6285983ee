// The MoE training kernels (router weights and backward for each index dtype, combine backward
// Serial and Plane, dispatch backward, the experts' backward on every scalar and tensor-core tile and
// its row order; the wgmma tile for sm_90a alone) lowered by the compiler and compiled with NVRTC for sm_80 and sm_90a:
// no spills, no stack, no static shared memory. Every extent is a runtime size of these kernels, so one signature per
// dtype combination stands for all shapes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

#if RUDNN_TEST_USE_COMPILER
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/compiler/moe_training.h"

namespace nv = rudnn::compiler::nvrtc;
namespace compiler = rudnn::compiler;
namespace contracts = rudnn::contracts;
using rudnn::DType;

namespace {

using Variant = rudnn::testing::KernelVariant;

std::vector<Variant> moe_training_variants() {
  // The experts backward's wgmma tile lowers for sm_90a only when opted in (compiled for sm_90a alone).
  const rudnn::testing::ScopedEnv opt_in("RUDNN_WGMMA", "1");
  std::vector<Variant> out;
  std::set<std::string> seen;
  auto add = [&](auto lowered) {
    EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
    if (!lowered.ok()) return;
    for (const auto& l : lowered->launches)
      if (seen.insert(l.entry).second) out.push_back({l.entry, l.source, l.entry.find("_wgmma_") != std::string::npos});
  };
  const std::int64_t T = 64, E = 64, K = 8, H = 256, I = 128;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (DType idx : {DType::U32, DType::I32, DType::I64})
      for (bool backward : {false, true}) {
        contracts::RouterWeightsSignature sig;
        sig.logits = {{T, E}, t, 0};
        sig.indices = {{T, K}, idx, 0};
        if (backward) sig.grad_weights = contracts::MoeOperand{{T, K}, DType::F32, 0};
        add(compiler::lower_router_weights({sig, std::nullopt}, compiler::Target{}));
      }
    for (DType w : {t, DType::F32})
      for (bool plane : {false, true}) {
        contracts::CombineBackwardSignature sig{{{{T * K, H}, t, 0}, {{T, K}, DType::U32, 0}, {{T, K}, w, 0}},
                                                {{T, H}, t, 0}};
        add(compiler::lower_combine_backward({sig, plane, std::nullopt}, compiler::Target{}));
      }
    add(compiler::lower_dispatch_backward({{{{T * K, H}, t, 0}, {{T, K}, DType::U32, 0}}, std::nullopt},
                                          compiler::Target{}));
    const auto& tiles = rudnn::dialect::moe_config::backwardTiles();
    for (std::size_t tile = 0; tile < tiles.size(); ++tile) {
      if (tiles[tile].tensorCore && t == DType::F32) continue;  // tensor cores take f16/bf16
      contracts::ExpertsBackwardSignature sig{
          {{{{E, I, H}, t, 0}, {{E, I, H}, t, 0}, {{E, H, I}, t, 0}}, {{T * K, H}, t, 0}, {{E + 1}, DType::U32, 0}},
          {{T, K}, DType::U32, 0},
          {{T * K, H}, t, 0}};
      const auto strategy =
          tiles[tile].tensorCore ? contracts::ExpertsStrategy::TensorCore : contracts::ExpertsStrategy::Scalar;
      add(compiler::lower_experts_backward(
          {sig, strategy, compiler::KernelConfig{{{"tile", static_cast<std::int64_t>(tile)}}}}, compiler::Target{}));
    }
  }
  return out;
}

TEST(MoeTrainingVariants, EveryConfigLowers) {
  const auto variants = moe_training_variants();
  EXPECT_GE(variants.size(), 40u);
  std::size_t wgmma = 0;
  for (const auto& v : variants) wgmma += v.sm90a_only;
  EXPECT_EQ(wgmma, 6u) << "the wgmma tile's hidden, input and weight-gradient kernels for f16 and bf16";
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

TEST(MoeTrainingVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(moe_training_variants(), "MoE training");
}

}  // namespace
#endif
