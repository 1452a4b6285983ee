// Every MoE dispatch, combine and expert variant (the compiler's registries dispatch_variants,
// combine_variants, expert_variants) lowered by the compiler and compiled with NVRTC for sm_80 and
// sm_90a (the experts' wgmma tiles for sm_90a alone): no spills, no stack, no static shared memory.
// Launch sources shared between variants (the rank kernel does not depend on the row dtype) are
// compiled once. Needs the compiler in the build.
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

namespace {

using Variant = rudnn::testing::KernelVariant;

void collect(const rudnn::Result<compiler::LoweredOp, rudnn::RuntimeError>& lowered, std::set<std::string>& seen,
             std::vector<Variant>& out) {
  EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
  if (!lowered.ok()) return;
  for (const auto& l : lowered->launches)
    if (seen.insert(l.source).second) out.push_back({l.entry, l.source, l.entry.find("_wgmma_") != std::string::npos});
}

std::vector<Variant> moe_variants() {
  const rudnn::testing::ScopedEnv opt_in("RUDNN_WGMMA", "1");  // the experts' wgmma tiles lower on sm_90a
  std::vector<Variant> out;
  std::set<std::string> seen;
  const compiler::Target target;  // sm_90a: strategy resolution, and the wgmma tiles
  const std::int64_t hidden = 4096, inter = 1408, experts = 64;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    for (const auto& config : compiler::dispatch_variants(dtype, hidden)) {
      compiler::DispatchRequest r{{{{16, hidden}, dtype, 0}, {{16, 8}, DType::U32, 0}, experts}, config};
      collect(compiler::lower_dispatch(r, target), seen, out);
    }
    for (DType wtype : {dtype, DType::F32})
      for (const auto& config : compiler::combine_variants(dtype, hidden)) {
        compiler::CombineRequest r{{{{128, hidden}, dtype, 0}, {{16, 8}, DType::U32, 0}, {{16, 8}, wtype, 0}}, config};
        collect(compiler::lower_combine(r, target), seen, out);
      }
    for (bool tc : {false, true}) {
      if (tc && dtype == DType::F32) continue;
      for (const auto& config : compiler::expert_variants(tc)) {
        rudnn::contracts::ExpertsSignature sig;
        sig.weights = {{{experts, inter, hidden}, dtype, 0},
                       {{experts, inter, hidden}, dtype, 0},
                       {{experts, hidden, inter}, dtype, 0}};
        sig.rows = {{128, hidden}, dtype, 0};
        sig.offsets = {{experts + 1}, DType::U32, 0};
        compiler::ExpertsRequest r{
            sig, tc ? rudnn::contracts::ExpertsStrategy::TensorCore : rudnn::contracts::ExpertsStrategy::Scalar, config,
            -1};
        collect(compiler::lower_experts(r, target), seen, out);
      }
    }
  }
  return out;
}

TEST(MoeVariants, EveryRegisteredConfigLowers) {
  const auto variants = moe_variants();
  EXPECT_GT(variants.size(), 40u);
  std::size_t wgmma = 0;
  for (const auto& v : variants) wgmma += v.sm90a_only;
  EXPECT_EQ(wgmma, 8u) << "the two wgmma tiles' gate/up and down kernels for f16 and bf16";
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

TEST(MoeVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(moe_variants(), "MoE");
}

}  // namespace
#endif
