// Every gated delta variant (the compiler's registry gated_delta_variants: recurrence tiles for
// K = 256 and the chunk tiles; T ∈ {f32, f16, bf16}, gates in T or f32) lowered by the compiler and
// compiled with NVRTC for sm_80 and sm_90a: no spills, no stack, no static shared memory.
#include <gtest/gtest.h>

#include <cstdio>
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

std::vector<Variant> gated_delta_variants() {
  std::vector<Variant> out;
  const std::int64_t k = 128, v = 128;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (DType g : t == DType::F32 ? std::vector<DType>{t} : std::vector<DType>{t, DType::F32}) {
      for (bool chunked : {false, true})
        for (const auto& config : compiler::gated_delta_variants(chunked, chunked ? k : 1, t)) {
          rudnn::contracts::GatedDeltaSignature sig{{{2, 4, 64, k}, t, 0},
                                                    {{2, 4, 64, k}, t, 0},
                                                    {{2, 4, 64, v}, t, 0},
                                                    {{2, 4, 64}, g, 0},
                                                    {{2, 4, 64}, g, 0},
                                                    std::nullopt,
                                                    1.0,
                                                    chunked ? 64 : 0};
          // The recurrence tiles are registered per key_dim; lower each with the largest key it holds.
          if (!chunked) {
            const std::int64_t kk = 4 * config.get("warps") * config.get("rows_per_thread");
            sig.query.shape[3] = sig.key.shape[3] = kk;
          }
          auto lowered = compiler::lower_gated_delta({sig, config}, compiler::Target{});
          EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
          if (!lowered.ok()) continue;
          for (const auto& l : lowered->launches) out.push_back({l.entry, l.source});
        }
    }
  return out;
}

TEST(GatedDeltaVariants, EveryRegisteredConfigLowers) {
  const auto variants = gated_delta_variants();
  EXPECT_GE(variants.size(), 30u);
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

// The contract's shared-memory bound assumes the narrowest registered V slice of each path
// (contracts::smallest_chunk_columns); a tile list that changes it must change the contract too.
TEST(GatedDeltaVariants, TheContractKnowsTheNarrowestSlice) {
  for (bool tensor_core : {false, true}) {
    std::int64_t narrowest = 0;
    for (const auto& config : compiler::gated_delta_variants(true, 128, DType::BF16))
      if ((config.get("tensor_core") != 0) == tensor_core && (narrowest == 0 || config.get("columns") < narrowest))
        narrowest = config.get("columns");
    EXPECT_EQ(narrowest, rudnn::contracts::smallest_chunk_columns(tensor_core)) << "tensor_core " << tensor_core;
  }
}

TEST(GatedDeltaVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(gated_delta_variants(), "gated delta");
}

}  // namespace
#endif
