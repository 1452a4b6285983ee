// compiler::lower_routing: one launch per routing op with the documented slots, params, grid and
// shared memory; forced configs; contract violations rejected by the verifier.
#include <gtest/gtest.h>

#include "rudnn/compiler/pipeline.h"

namespace {

using namespace rudnn;
using compiler::KernelParam;

compiler::RouteRequest deepseek(bool bias) {
  compiler::RouteRequest r;
  r.grouped = true;
  r.signature.logits = {{16, 256}, DType::BF16, 0};
  if (bias) r.signature.bias = contracts::MoeOperand{{256}, DType::F32, 0};
  r.signature.top_k = 8;
  r.signature.groups = 8;
  r.signature.selected_groups = 4;
  r.signature.group_top_two = true;
  r.signature.scale = 2.5;
  return r;
}

TEST(LowerRouting, SoftmaxRoute) {
  compiler::RouteRequest r;
  r.signature.logits = {{5, 64}, DType::F16, 0};
  r.signature.top_k = 8;
  auto lowered = compiler::lower_routing(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_EQ(lowered->op_name, "rudnn.route");
  ASSERT_EQ(lowered->launches.size(), 1u);
  const auto& l = lowered->launches[0];
  EXPECT_EQ(l.entry, "rudnn_route_f16_r4");
  EXPECT_EQ(l.block[0], 128);
  EXPECT_EQ(l.dynamic_shared_bytes, 0);
  ASSERT_EQ(l.params.size(), 7u);
  EXPECT_EQ(l.params[0].operand, 0);  // logits
  EXPECT_EQ(l.params[1].operand, 1);  // indices
  EXPECT_EQ(l.params[1].c_type, "rudnn::u32*");
  EXPECT_EQ(l.params[2].operand, 2);  // weights
  EXPECT_NE(l.source.find("rudnn/moe/route_softmax_topk.cuh"), std::string::npos);
}

TEST(LowerRouting, GroupedWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    auto lowered = compiler::lower_routing(deepseek(bias), compiler::Target{});
    ASSERT_TRUE(lowered.ok()) << lowered.error().message();
    ASSERT_EQ(lowered->launches.size(), 1u);
    const auto& l = lowered->launches[0];
    EXPECT_EQ(l.entry, "rudnn_route_sigmoid_grouped_bf16_r4");
    EXPECT_EQ(l.dynamic_shared_bytes, 4 * (256 + 2 * 8) * 4);
    ASSERT_EQ(l.params.size(), 12u);
    EXPECT_EQ(l.params[1].kind, bias ? KernelParam::Kind::Buffer : KernelParam::Kind::NullBuffer);
    EXPECT_EQ(l.params[2].operand, 2);  // indices: slot 2 whether or not bias is there
    EXPECT_EQ(l.params[3].operand, 3);
    EXPECT_FLOAT_EQ(l.params[11].f32, 2.5f);
  }
}

TEST(LowerRouting, ForcedConfigAndWideGroupedHeuristic) {
  auto r = deepseek(true);
  r.config = compiler::KernelConfig{{{"rows_per_block", 8}}};
  auto lowered = compiler::lower_routing(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_EQ(lowered->launches[0].entry, "rudnn_route_sigmoid_grouped_bf16_r8");
  EXPECT_EQ(lowered->launches[0].block[0], 256);

  r = deepseek(false);
  r.signature.logits.shape = {3, 1024};
  r.signature.groups = 128;
  r.signature.selected_groups = 64;
  lowered = compiler::lower_routing(r, compiler::Target{});
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  EXPECT_EQ(lowered->launches[0].entry, "rudnn_route_sigmoid_grouped_bf16_r2");

  r = deepseek(true);
  r.config = compiler::KernelConfig{{{"rows_per_block", 3}}};
  auto bad = compiler::lower_routing(r, compiler::Target{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("rows_per_block"), std::string::npos);
}

TEST(LowerRouting, ContractViolationIsRejectedByTheVerifier) {
  auto r = deepseek(true);
  r.signature.groups = 6;
  auto lowered = compiler::lower_routing(r, compiler::Target{});
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.error().kind(), ErrorKind::InvalidValue);
  EXPECT_NE(lowered.error().message().find("groups: expected a divisor of experts (256), got 6"), std::string::npos)
      << lowered.error().message();
  EXPECT_EQ(compiler::routing_variants().size(), 4u);
}

}  // namespace
