// Every registered normalization variant compiles with NVRTC for sm_80 and sm_90a with zero spill
// bytes. Prints one line per variant with its ptxas registers (the numbers tuning looks at).
// Compiles run on RUDNN_TEST_JOBS threads (default 2): NVRTC is thread-safe per program.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "norm_variants.h"
#include "variant_check.h"

namespace nv = rudnn::compiler::nvrtc;

namespace {

struct Outcome {
  std::string entry, arch, source;
  bool ok = false;
  std::string error;
  nv::PtxasReport report;
};

int jobs() {
  if (const char* j = std::getenv("RUDNN_TEST_JOBS"); j && std::atoi(j) > 0) return std::atoi(j);
  return 2;
}

TEST(NormVariants, RegistryIsComplete) {
  const auto variants = rudnn::test::norm_variants();
  if (!rudnn::test::kVariantsFromCompiler) {
    // 3 ops x (15 geometries x (3 widths for f32 + 4 + 4 for f16/bf16)).
    EXPECT_EQ(variants.size(), 3u * 15u * 11u);
  }
  // Every op and dtype, the three geometries the launch heuristics favour, every width.
  for (auto op : {rudnn::test::NormOp::LayerNorm, rudnn::test::NormOp::RmsNorm, rudnn::test::NormOp::Softmax})
    for (auto type : {rudnn::test::NormType::F32, rudnn::test::NormType::F16, rudnn::test::NormType::BF16})
      for (int tpr : {32, 128, 256, 1024})
        for (int vw = 1; vw * rudnn::test::type_bytes(type) <= 16; vw *= 2) {
          bool found = false;
          for (const auto& v : variants)
            found |= v.config.op == op && v.config.type == type && v.config.threads_per_row == tpr &&
                     v.config.vector_width == vw;
          EXPECT_TRUE(found) << rudnn::test::op_name(op) << " " << rudnn::test::type_name(type)
                             << " threads_per_row=" << tpr << " vector_width=" << vw;
        }
  for (const auto& v : variants) {
    EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
    EXPECT_LE(v.config.threads_per_row * v.config.rows_per_block, 1024);
  }
}

TEST(NormVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  const auto variants = rudnn::testing::sampled(rudnn::test::norm_variants(), "normalization");
  const std::vector<std::string> archs = {"sm_80", "sm_90a"};
  std::vector<Outcome> outcomes(variants.size() * archs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < outcomes.size(); i = next++) {
      const auto& v = variants[i / archs.size()];
      Outcome& o = outcomes[i];
      o.entry = v.entry;
      o.source = v.source;
      o.arch = archs[i % archs.size()];
      auto k = nv::compile(v.source, v.entry, o.arch);
      if (!k.ok()) {
        o.error = k.error().message();
        continue;
      }
      o.ok = true;
      o.report = k->report;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < jobs(); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();

  for (const Outcome& o : outcomes) {
    SCOPED_TRACE(o.entry + " " + o.arch);
    ASSERT_TRUE(o.ok) << o.error;
    ASSERT_TRUE(o.report.found);
    EXPECT_EQ(o.report.spill_stores_bytes, 0) << o.source;
    EXPECT_EQ(o.report.spill_loads_bytes, 0);
    EXPECT_EQ(o.report.stack_bytes, 0);
    EXPECT_EQ(o.report.shared_bytes, 0);  // all shared memory is dynamic
    std::printf("%-40s %-7s registers %3d\n", o.entry.c_str(), o.arch.c_str(), o.report.registers);
  }
}

}  // namespace
