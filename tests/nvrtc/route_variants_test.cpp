// Every MoE routing variant (route / route_sigmoid_grouped with and without bias, f32/f16/bf16,
// rows_per_block ∈ compiler::routing_variants()) lowered by the compiler and compiled with NVRTC for
// sm_80 and sm_90a: no spills, no stack, no static shared memory. Needs the compiler in the build.
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

namespace {

struct Variant {
  std::string entry, source;
};

std::vector<Variant> route_variants() {
  std::vector<Variant> out;
  auto target = compiler::target_for_arch("sm_90a");
  EXPECT_TRUE(target.ok());
  for (rudnn::DType dtype : {rudnn::DType::F32, rudnn::DType::F16, rudnn::DType::BF16})
    for (const compiler::KernelConfig& config : compiler::routing_variants())
      for (int kind = 0; kind < 3; ++kind) {  // route, grouped + bias, grouped without bias
        compiler::RouteRequest r;
        r.grouped = kind > 0;
        r.signature.logits = {{16, 256}, dtype, 0};
        r.signature.top_k = 8;
        r.signature.groups = 8;
        r.signature.selected_groups = 4;
        r.signature.group_top_two = true;
        r.signature.scale = 2.5;
        if (kind == 1) r.signature.bias = rudnn::contracts::MoeOperand{{256}, rudnn::DType::F32, 0};
        r.config = config;
        auto lowered = compiler::lower_routing(r, target.value());
        EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
        if (!lowered.ok()) continue;
        EXPECT_EQ(lowered->launches.size(), 1u);
        for (const auto& l : lowered->launches) out.push_back({l.entry, l.source});
      }
  return out;
}

TEST(RouteVariants, LowerToOneLaunchEach) {
  const auto variants = route_variants();
  EXPECT_EQ(variants.size(), 3u * compiler::routing_variants().size() * 3u);
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

TEST(RouteVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  for (const auto& v : rudnn::testing::sampled(route_variants(), "routing"))
    for (const char* arch : {"sm_80", "sm_90a"}) {
      SCOPED_TRACE(v.entry + " " + arch);
      auto k = nv::compile(v.source, v.entry, arch);
      ASSERT_TRUE(k.ok()) << k.error().message() << "\n" << v.source;
      ASSERT_TRUE(k->report.found);
      EXPECT_EQ(k->report.spill_stores_bytes, 0);
      EXPECT_EQ(k->report.spill_loads_bytes, 0);
      EXPECT_EQ(k->report.stack_bytes, 0);
      EXPECT_EQ(k->report.shared_bytes, 0);
      std::printf("%-40s %-7s registers %3d\n", v.entry.c_str(), arch, k->report.registers);
    }
}

}  // namespace
#endif
