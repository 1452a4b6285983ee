// The NVRTC backend itself: loading, version, cubin/PTX output, ptxas report parsing, failures.
#include "backends/nvrtc/nvrtc_backend.h"

#include <gtest/gtest.h>

#include <string>

namespace nv = rudnn::compiler::nvrtc;

namespace {

#define REQUIRE_NVRTC()                                                          \
  do {                                                                           \
    if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";   \
  } while (0)

const char* const kSmallKernel = R"(
#include "rudnn/prelude.cuh"
RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS(128) small_kernel(float* x, rudnn::i64 n) {
  const rudnn::i64 i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
)";

TEST(NvrtcBackend, ReportsVersion) {
  REQUIRE_NVRTC();
  auto v = nv::version();
  ASSERT_TRUE(v.ok()) << v.error().message();
  EXPECT_EQ(v->find('.') != std::string::npos, true) << *v;
  EXPECT_GE(std::stoi(*v), 12) << *v;
}

TEST(NvrtcBackend, CompilesCubinAndPtxWithReport) {
  REQUIRE_NVRTC();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    auto k = nv::compile(kSmallKernel, "small_kernel", arch);
    ASSERT_TRUE(k.ok()) << k.error().message();
    ASSERT_GE(k->cubin.size(), 4u);
    EXPECT_EQ(k->cubin.substr(0, 4), std::string("\x7f" "ELF")) << arch;
    EXPECT_NE(k->ptx.find(".entry small_kernel"), std::string::npos) << arch;
    EXPECT_TRUE(k->report.found) << k->log;
    EXPECT_GT(k->report.registers, 0) << k->log;
    EXPECT_EQ(k->report.spill_stores_bytes, 0);
  }
}

TEST(NvrtcBackend, VirtualArchGivesPtxOnly) {
  REQUIRE_NVRTC();
  auto k = nv::compile(kSmallKernel, "small_kernel", "compute_90");
  ASSERT_TRUE(k.ok()) << k.error().message();
  EXPECT_TRUE(k->cubin.empty());
  EXPECT_NE(k->ptx.find(".target sm_90"), std::string::npos);
  EXPECT_FALSE(k->report.found);
}

TEST(NvrtcBackend, SyntaxErrorIsCompileFailureWithLog) {
  REQUIRE_NVRTC();
  auto k = nv::compile("extern \"C\" __global__ void broken(int* p) { p[0] = ; }\n", "broken",
                       "sm_90a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().kind(), rudnn::ErrorKind::CompileFailure);
  // The whole log travels in the message: file name, line and the compiler's words.
  EXPECT_NE(k.error().message().find("broken.cu(1)"), std::string::npos) << k.error().message();
  EXPECT_NE(k.error().message().find("expected an expression"), std::string::npos)
      << k.error().message();
}

TEST(NvrtcBackend, UnknownOptionIsCompileFailure) {
  REQUIRE_NVRTC();
  auto k = nv::compile(kSmallKernel, "small_kernel", "sm_90a", {"--no-such-option"});
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().kind(), rudnn::ErrorKind::CompileFailure);
  EXPECT_NE(k.error().message().find("--no-such-option"), std::string::npos);
}

TEST(NvrtcBackend, BaseOptionsAskForCubinAndPtxasReport) {
  const auto opts = nv::base_options("sm_90a");
  auto has = [&](const std::string& o) {
    for (auto& x : opts)
      if (x == o) return true;
    return false;
  };
  EXPECT_TRUE(has("-arch=sm_90a"));
  EXPECT_TRUE(has("--ptxas-options=-v"));
  EXPECT_FALSE(has("--use_fast_math"));
  EXPECT_FALSE(has("-use_fast_math"));
}

TEST(PtxasReport, ParsesTheEntrysSection) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90a'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k_helper\n"
      "ptxas         .     96 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     752 bytes stack frame, 1236 bytes spill stores, 1468 bytes spill loads\n"
      "ptxas info    : Used 24 registers, used 1 barriers, 752 bytes cumulative stack size, "
      "1200 bytes smem\n"
      "ptxas info    : Compile time = 97.082 ms\n";
  const auto r = nv::parse_ptxas_report(log, "k");
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.registers, 24);
  EXPECT_EQ(r.stack_bytes, 752);
  EXPECT_EQ(r.spill_stores_bytes, 1236);
  EXPECT_EQ(r.spill_loads_bytes, 1468);
  EXPECT_EQ(r.shared_bytes, 1200);

  const auto o = nv::parse_ptxas_report(log, "other");
  EXPECT_TRUE(o.found);
  EXPECT_EQ(o.registers, 40);
  EXPECT_EQ(o.spill_stores_bytes, 4);
  EXPECT_EQ(o.shared_bytes, 0);

  EXPECT_FALSE(nv::parse_ptxas_report(log, "missing").found);
  EXPECT_FALSE(nv::parse_ptxas_report(log, "k_").found);
}

}  // namespace
