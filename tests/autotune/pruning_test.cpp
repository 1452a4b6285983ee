// Pruning from static facts: fake ptxas reports against device limits, a report parsed from a
// ptxas log, and (when NVRTC is present) a real report of a lowered normalization candidate.
#include <gtest/gtest.h>

#include "rudnn/autotune/pruning.h"
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {
namespace {

DeviceInfo h100_like() {
  DeviceInfo d;
  d.max_threads_per_block = 1024;
  d.registers_per_sm = 65536;
  d.shared_memory_per_block_optin = 227 * 1024;
  return d;
}

StaticFacts facts(std::int64_t threads, int registers, int spills = 0, int shared = 0, std::int64_t dynamic = 0) {
  StaticFacts f;
  f.entry = "k";
  f.block_threads = threads;
  f.dynamic_shared_bytes = dynamic;
  compiler::nvrtc::PtxasReport r;
  r.registers = registers;
  r.spill_stores_bytes = spills;
  r.shared_bytes = shared;
  r.found = true;
  f.ptxas = r;
  return f;
}

TEST(Pruning, KeepsWhatFits) { EXPECT_FALSE(prune_reason(facts(256, 32), h100_like())); }

TEST(Pruning, DropsSpills) {
  auto why = prune_reason(facts(128, 255, 16), h100_like());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("spills"), std::string::npos) << *why;
}

TEST(Pruning, DropsMoreRegistersThanAnSmHas) {
  EXPECT_FALSE(prune_reason(facts(1024, 64), h100_like()));  // exactly 65536
  auto why = prune_reason(facts(1024, 72), h100_like());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("registers per SM"), std::string::npos) << *why;
}

TEST(Pruning, DropsTooMuchSharedMemoryStaticPlusDynamic) {
  EXPECT_FALSE(prune_reason(facts(128, 32, 0, 1024, 226 * 1024), h100_like()));
  auto why = prune_reason(facts(128, 32, 0, 2048, 226 * 1024), h100_like());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("shared memory"), std::string::npos) << *why;
}

TEST(Pruning, DropsBlocksLargerThanTheDeviceAllows) {
  DeviceInfo small = h100_like();
  small.max_threads_per_block = 512;
  auto why = prune_reason(facts(1024, 16), small);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("block of 1024"), std::string::npos) << *why;
}

TEST(Pruning, HostDeviceUsesLimitsOnly) {
  StaticFacts f;
  f.entry = "k";
  f.block_threads = 1024;
  f.dynamic_shared_bytes = 64;
  EXPECT_FALSE(prune_reason(f, h100_like()));
  f.dynamic_shared_bytes = 300 * 1024;
  EXPECT_TRUE(prune_reason(f, h100_like()));
}

TEST(Pruning, ReportParsedFromAPtxasLog) {
  const std::string log =
      "ptxas info    : Compiling entry function 'kern' for 'sm_90a'\n"
      "ptxas info    : Function properties for kern\n"
      "    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers, 8 bytes cumulative stack size, 528 bytes cmem[0]\n";
  StaticFacts f;
  f.entry = "kern";
  f.block_threads = 256;
  f.ptxas = compiler::nvrtc::parse_ptxas_report(log, "kern");
  ASSERT_TRUE(f.ptxas->found);
  EXPECT_EQ(f.ptxas->registers, 255);
  auto why = prune_reason(f, h100_like());
  ASSERT_TRUE(why);  // spills, and 255 x 256 registers > 65536
  EXPECT_NE(why->find("spills"), std::string::npos) << *why;
}

TEST(Pruning, RealReportOfALoweredCandidate) {
  if (!compiler::nvrtc::available()) GTEST_SKIP() << "NVRTC not available";
  compiler::NormRequest r;
  r.signature.kind = contracts::NormKind::RmsNorm;
  r.signature.input = {{16, 4096}, DType::BF16, 0};
  r.signature.gamma = contracts::NormOperand{{4096}, DType::F32, 0};
  r.config = compiler::KernelConfig{{{"threads_per_row", 256}, {"rows_per_block", 1}, {"vector_width", 8}}};
  compiler::Target target;
  target.arch = "sm_90a";
  auto lowered = compiler::lower_normalization(r, target);
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  auto f = static_facts(lowered.value(), target);
  ASSERT_TRUE(f.ok()) << f.error().message();
  ASSERT_EQ(f->size(), 1u);
  ASSERT_TRUE(f->front().ptxas && f->front().ptxas->found);
  EXPECT_GT(f->front().ptxas->registers, 0);
  EXPECT_EQ(f->front().block_threads, 256);
  EXPECT_FALSE(prune_reason(f->front(), h100_like())) << *prune_reason(f->front(), h100_like());
}

TEST(SearchSpace, NormalizationKeyAnchorsRowsAndCandidatesComeFromTheRegistry) {
  EXPECT_EQ(anchor(0), 1);
  EXPECT_EQ(anchor(1), 1);
  EXPECT_EQ(anchor(3), 4);
  EXPECT_EQ(anchor(512), 512);
  EXPECT_EQ(anchor(513), 1024);
  compiler::ConfigQuery q;
  q.op_name = "rudnn.rms_norm";
  q.dtypes = {DType::BF16, DType::F32};
  q.shapes = {{-1, -1, 4096}, {4096}};
  q.dynamic_values = {3, 100};
  auto space = search_space_for(q.op_name);
  ASSERT_TRUE(space);
  EXPECT_EQ(space->family(), "normalization");
  auto key = space->key(q);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->static_dims, (std::vector<std::int64_t>{4096}));
  EXPECT_EQ(key->buckets, (std::vector<std::int64_t>{512}));  // 300 rows
  EXPECT_EQ(space->candidates(*key).size(),
            compiler::normalization_variants(contracts::NormKind::RmsNorm, DType::BF16, 4096).size());
  q.dynamic_values.clear();  // unknown sizes: no key, the heuristic decides
  EXPECT_FALSE(space->key(q));
  EXPECT_FALSE(search_space_for("rudnn.unknown_op"));
  EXPECT_EQ(parse_config("threads_per_row=128,vector_width=8")->to_string(), "threads_per_row=128,vector_width=8");
  EXPECT_FALSE(parse_config("threads_per_row=12x"));
  EXPECT_FALSE(parse_config(""));
}

}  // namespace
}  // namespace rudnn::autotune
