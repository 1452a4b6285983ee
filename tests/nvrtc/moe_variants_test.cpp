// Every MoE dispatch, combine and expert variant (the compiler's registries dispatch_variants,
// combine_variants, expert_variants) lowered by the compiler and compiled with NVRTC for sm_80 and
// sm_90a: no spills, no stack, no static shared memory. Launch sources shared between variants (the
// rank kernel does not depend on the row dtype) are compiled once. Needs the compiler in the build.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"

#if RUDNN_TEST_USE_COMPILER
#include "rudnn/compiler/pipeline.h"

namespace nv = rudnn::compiler::nvrtc;
namespace compiler = rudnn::compiler;
using rudnn::DType;

namespace {

struct Variant {
  std::string entry, source;
};

void collect(const rudnn::Result<compiler::LoweredOp, rudnn::RuntimeError>& lowered, std::set<std::string>& seen,
             std::vector<Variant>& out) {
  EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
  if (!lowered.ok()) return;
  for (const auto& l : lowered->launches)
    if (seen.insert(l.source).second) out.push_back({l.entry, l.source});
}

std::vector<Variant> moe_variants() {
  std::vector<Variant> out;
  std::set<std::string> seen;
  const compiler::Target target;  // sm_90a; the arch only matters to strategy resolution
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
        sig.weights = {{{experts, inter, hidden}, dtype, 0}, {{experts, inter, hidden}, dtype, 0},
                       {{experts, hidden, inter}, dtype, 0}};
        sig.rows = {{128, hidden}, dtype, 0};
        sig.offsets = {{experts + 1}, DType::U32, 0};
        compiler::ExpertsRequest r{sig,
                                   tc ? rudnn::contracts::ExpertsStrategy::TensorCore
                                      : rudnn::contracts::ExpertsStrategy::Scalar,
                                   config, -1};
        collect(compiler::lower_experts(r, target), seen, out);
      }
    }
  }
  return out;
}

TEST(MoeVariants, EveryRegisteredConfigLowers) {
  const auto variants = moe_variants();
  EXPECT_GT(variants.size(), 40u);
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

TEST(MoeVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  const auto variants = moe_variants();
  struct Row {
    std::string entry, arch, error;
    nv::PtxasReport report;
  };
  std::vector<Row> rows(variants.size() * 2);
  // Two compiler threads (the CI machine has two cores).
  auto work = [&](std::size_t first) {
    for (std::size_t i = first; i < rows.size(); i += 2) {
      const Variant& v = variants[i / 2];
      const char* arch = i % 2 ? "sm_90a" : "sm_80";
      rows[i].entry = v.entry;
      rows[i].arch = arch;
      auto k = nv::compile(v.source, v.entry, arch);
      if (!k.ok()) rows[i].error = k.error().message();
      else rows[i].report = k->report;
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (const Row& r : rows) {
    SCOPED_TRACE(r.entry + " " + r.arch);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_TRUE(r.report.found);
    EXPECT_EQ(r.report.spill_stores_bytes, 0);
    EXPECT_EQ(r.report.spill_loads_bytes, 0);
    EXPECT_EQ(r.report.stack_bytes, 0);
    EXPECT_EQ(r.report.shared_bytes, 0);
    std::printf("%-52s %-7s registers %3d\n", r.entry.c_str(), r.arch.c_str(), r.report.registers);
  }
}

}  // namespace
#endif
