// compiler::lower_dispatch / lower_experts / lower_combine: the documented launches, slots and
// temporaries; strategy resolution (Scalar, TensorCore, Auto) per target; forced and heuristic tiles;
// contract violations rejected by the verifiers.
#include <gtest/gtest.h>

#include "contracts/arch.h"
#include "rudnn/compiler/pipeline.h"

namespace {

using namespace rudnn;
using compiler::KernelParam;
using compiler::SizeRef;

contracts::ExpertsSignature experts_sig(DType dtype, std::int64_t e, std::int64_t i, std::int64_t h) {
  contracts::ExpertsSignature s;
  s.weights = {{{e, i, h}, dtype, 0}, {{e, i, h}, dtype, 0}, {{e, h, i}, dtype, 0}};
  s.rows = {{37, h}, dtype, 0};
  s.offsets = {{e + 1}, DType::U32, 0};
  return s;
}

TEST(LowerMoE, DispatchIsRankThenScatter) {
  compiler::DispatchRequest r{{{{16, 4096}, DType::BF16, 0}, {{16, 8}, DType::U32, 0}, 64}, std::nullopt};
  auto lowered = compiler::lower_dispatch(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  ASSERT_EQ(lowered->launches.size(), 2u);
  EXPECT_TRUE(lowered->temporaries.empty());
  const auto& rank = lowered->launches[0];
  EXPECT_EQ(rank.entry, "rudnn_dispatch_rank_t1024");
  EXPECT_EQ(rank.dynamic_shared_bytes, 272);  // 65 counters rounded up to 16 bytes
  ASSERT_EQ(rank.params.size(), 5u);
  EXPECT_EQ(rank.params[0].operand, 1);  // indices
  EXPECT_EQ(rank.params[1].operand, 3);  // offsets (result 1)
  EXPECT_EQ(rank.params[2].operand, 4);  // slots (result 2)
  const auto& scatter = lowered->launches[1];
  EXPECT_EQ(scatter.entry, "rudnn_dispatch_scatter_bf16_t256_v8");
  EXPECT_EQ(scatter.params[0].operand, 0);  // input
  EXPECT_EQ(scatter.params[1].operand, 4);  // slots, read back from the first launch's result
  EXPECT_EQ(scatter.params[2].operand, 2);  // rows
  // grid.x = assignments = rows(indices) · top_k
  ASSERT_EQ(scatter.grid[0].factors.size(), 2u);
  EXPECT_EQ(scatter.grid[0].factors[0].kind, SizeRef::Kind::Rows);
  EXPECT_EQ(scatter.grid[0].factors[0].operand, 4);
}

TEST(LowerMoE, ExpertsUseATemporaryForTheIntermediate) {
  compiler::ExpertsRequest r{experts_sig(DType::BF16, 8, 1408, 4096), contracts::ExpertsStrategy::TensorCore,
                             std::nullopt, -1};
  auto lowered = compiler::lower_experts(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  ASSERT_EQ(lowered->launches.size(), 2u);
  ASSERT_EQ(lowered->temporaries.size(), 1u);
  EXPECT_EQ(lowered->first_temporary_slot, 6);  // 5 operands, 1 result
  EXPECT_EQ(lowered->temporaries[0].element_bytes, 2);
  EXPECT_EQ(lowered->temporaries[0].shape, (std::vector<std::int64_t>{-1, 1408}));  // [rows, inter]
  const auto& elements = lowered->temporaries[0].elements;                          // rows(rows) · inter
  ASSERT_EQ(elements.factors.size(), 2u);
  EXPECT_EQ(elements.factors[0].kind, SizeRef::Kind::Rows);
  EXPECT_EQ(elements.factors[0].operand, 0);
  EXPECT_EQ(elements.factors[1].value, 1408);
  const auto& gate_up = lowered->launches[0];
  const auto& down = lowered->launches[1];
  EXPECT_NE(gate_up.entry.find("swiglu_gate_up_mma_bf16"), std::string::npos) << gate_up.entry;
  EXPECT_EQ(gate_up.params[4].operand, 6);  // act → the temporary
  EXPECT_EQ(down.params[0].operand, 6);     // act read by down
  EXPECT_EQ(down.params[3].operand, 5);     // out
  EXPECT_EQ(gate_up.config.get("tensor_core"), 1);
}

TEST(LowerMoE, StrategyResolution) {
  auto tile_of = [](const compiler::ExpertsRequest& r, const std::string& arch) -> std::int64_t {
    auto target = compiler::target_for_arch(arch);
    EXPECT_TRUE(target.ok());
    auto lowered = compiler::lower_experts(r, target.value());
    EXPECT_TRUE(lowered.ok()) << lowered.error().message();
    return lowered.ok() ? lowered->launches[0].config.get("tensor_core", -1) : -1;
  };
  compiler::ExpertsRequest bf{experts_sig(DType::BF16, 4, 64, 128), contracts::ExpertsStrategy::Auto, std::nullopt, -1};
  EXPECT_EQ(tile_of(bf, "sm_90a"), 1);
  EXPECT_EQ(tile_of(bf, "sm_80"), 1);
  compiler::ExpertsRequest f32 = bf;
  f32.signature = experts_sig(DType::F32, 4, 64, 128);
  EXPECT_EQ(tile_of(f32, "sm_90a"), 0);  // Auto falls back: f32 has no tensor-core path
  compiler::ExpertsRequest odd = bf;
  odd.signature = experts_sig(DType::BF16, 4, 60, 128);
  EXPECT_EQ(tile_of(odd, "sm_90a"), 0);  // inter not a multiple of 8
  compiler::ExpertsRequest scalar = bf;
  scalar.strategy = contracts::ExpertsStrategy::Scalar;
  EXPECT_EQ(tile_of(scalar, "sm_90a"), 0);
  // An explicit TensorCore request that cannot be served is an error naming the requirement.
  compiler::ExpertsRequest tc = f32;
  tc.strategy = contracts::ExpertsStrategy::TensorCore;
  auto lowered = compiler::lower_experts(tc, compiler::Target{});
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(lowered.error().message().find("f16 or bf16"), std::string::npos) << lowered.error().message();
}

TEST(LowerMoE, HeuristicTileFollowsTheLoad) {
  compiler::ExpertsRequest r{experts_sig(DType::BF16, 64, 256, 512), contracts::ExpertsStrategy::TensorCore,
                             std::nullopt, 2};
  auto small = compiler::lower_experts(r, compiler::Target{});
  r.rows_per_expert = 512;
  auto large = compiler::lower_experts(r, compiler::Target{});
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_LT(small->launches[0].config.get("block_m"), large->launches[0].config.get("block_m"));
}

// Every tile the target runs (the wgmma tiles only where it has wgmma: sm_90a under RUDNN_WGMMA=1,
// lowered by tests/nvrtc/moe_variants_test.cpp).
TEST(LowerMoE, ForcedTileAndEveryVariantLowers) {
  const compiler::Target target;
  for (bool tc : {false, true})
    for (const compiler::KernelConfig& config :
         compiler::expert_variants(tc, contracts::has_wgmma(target.arch, target.host_emulation))) {
      SCOPED_TRACE(config.to_string());
      compiler::ExpertsRequest r{experts_sig(DType::F16, 4, 64, 128),
                                 tc ? contracts::ExpertsStrategy::TensorCore : contracts::ExpertsStrategy::Scalar,
                                 config, -1};
      auto lowered = compiler::lower_experts(r, target);
      ASSERT_TRUE(lowered.ok()) << lowered.error().message();
      EXPECT_EQ(lowered->launches[0].config.to_string(), config.to_string());
    }
}

TEST(LowerMoE, CombineSlots) {
  compiler::CombineRequest r{{{{32, 64}, DType::F16, 0}, {{16, 2}, DType::U32, 0}, {{16, 2}, DType::F32, 0}},
                             std::nullopt};
  auto lowered = compiler::lower_combine(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  ASSERT_EQ(lowered->launches.size(), 1u);
  const auto& l = lowered->launches[0];
  EXPECT_EQ(l.entry, "rudnn_combine_f16_f32_t64_v8");
  EXPECT_EQ(l.params[2].c_type, "const float*");
  EXPECT_EQ(l.params[3].operand, 3);
}

TEST(LowerMoE, VerifierRejectsContractViolations) {
  compiler::CombineRequest r{{{{30, 64}, DType::F16, 0}, {{16, 2}, DType::U32, 0}, {{16, 2}, DType::F32, 0}},
                             std::nullopt};
  // Rows are dynamic in the lowered IR, so the row-count rule is the ops layer's; a dtype is not.
  r.signature.slots.dtype = DType::I32;
  auto lowered = compiler::lower_combine(r, compiler::Target{});
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(lowered.error().message().find("slots: expected u32"), std::string::npos) << lowered.error().message();
}

}  // namespace
