// The NVRTC backend itself: loading, version, cubin/PTX output, ptxas report parsing, failures.
#include "backends/nvrtc/nvrtc_backend.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace nv = rudnn::compiler::nvrtc;

namespace {

#define REQUIRE_NVRTC()                                                        \
  do {                                                                         \
    if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here"; \
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
    EXPECT_EQ(k->cubin.substr(0, 4), std::string("\x7f"
                                                 "ELF"))
        << arch;
    EXPECT_NE(k->ptx.find(".entry small_kernel"), std::string::npos) << arch;
    EXPECT_TRUE(k->report.found) << k->log;
    EXPECT_GT(k->report.registers, 0) << k->log;
    EXPECT_EQ(k->report.spill_stores_bytes, 0);
  }
}

// Every tensor-core and async-copy wrapper of the CUDA prelude, so that ptxas checks their PTX
// (an unused inline wrapper is never emitted, so row_norm alone would not).
const char* const kWrapperKernel = R"(
#include "rudnn/rudnn.cuh"
RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS(32) wrappers(const rudnn::bf16* g, float* out) {
  using rudnn::u32;
  unsigned char* smem = rudnn::dynamic_shared<unsigned char>();
  const unsigned lane = threadIdx.x;
  rudnn::cp_async_ca<4>(smem + lane * 16, g + lane * 8, 4);
  rudnn::cp_async_ca<8>(smem + 512 + lane * 16, g + lane * 8, 8);
  rudnn::cp_async_ca<16>(smem + 1024 + lane * 16, g + lane * 8);
  rudnn::cp_async_cg16(smem + 1536 + lane * 16, g + lane * 8, lane < 16 ? 16u : 0u);
  rudnn::cp_async_commit();
  rudnn::cp_async_wait<1>();
  rudnn::cp_async_wait_all();
  __syncthreads();
  u32 a1[1], a2[2], a4[4], t1[1], t2[2], t4[4];
  rudnn::ldmatrix_x1(a1, smem + (lane % 8) * 16);
  rudnn::ldmatrix_x2(a2, smem + (lane % 16) * 16);
  rudnn::ldmatrix_x4(a4, smem + lane * 16);
  rudnn::ldmatrix_x1_trans(t1, smem + (lane % 8) * 16);
  rudnn::ldmatrix_x2_trans(t2, smem + (lane % 16) * 16);
  rudnn::ldmatrix_x4_trans(t4, smem + lane * 16);
  const u32 b[2] = {a2[0] ^ t2[0] ^ a1[0], a2[1] ^ t2[1] ^ t1[0]};
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  rudnn::mma_m16n8k16_bf16_f32(acc, a4, b, acc);
  rudnn::mma_m16n8k16_f16_f32(acc, t4, b, acc);
  if (rudnn::is_nan(acc[0]) || rudnn::is_inf(acc[1])) rudnn::trap("non-finite");
  for (int i = 0; i < 4; ++i) out[lane * 4 + i] = acc[i] + rudnn::warp_sum(acc[i]);
}
)";

TEST(NvrtcBackend, PreludeWrappersCompile) {
  REQUIRE_NVRTC();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    auto k = nv::compile(kWrapperKernel, "wrappers", arch);
    ASSERT_TRUE(k.ok()) << k.error().message();
    for (const char* insn :
         {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
          "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
          "cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.wait_group 1", "cp.async.wait_all",
          "cp.async.commit_group"})
      EXPECT_NE(k->ptx.find(insn), std::string::npos) << arch << ": " << insn;
    EXPECT_EQ(k->report.spill_stores_bytes, 0);
  }
}

// Every wgmma wrapper (each N, both input types, SS with and without transposes, RS) and the tile
// header's swizzled panel, so that ptxas checks the generated inline PTX (prelude/wgmma_cuda.cuh).
const char* const kWgmmaKernel = R"(
#include "rudnn/tile/wgmma.cuh"
template <int N>
__device__ void every_form(const rudnn::u64* descs, float* out) {
  using namespace rudnn;
  float d[N / 2];
  u32 a[4] = {static_cast<u32>(descs[2]), static_cast<u32>(descs[3]), 0u, 1u};
  wgmma_fence();
  wgmma_bf16_ss<N>(d, descs[0], descs[1], false);
  wgmma_f16_ss<N, true, true>(d, descs[0], descs[1], true);
  wgmma_bf16_rs<N>(d, a, descs[1], true);
  wgmma_f16_rs<N, true>(d, a, descs[1], true);
  wgmma_commit();
  wgmma_wait<0>();
  wgmma_fence_operand(d);
  for (int i = 0; i < N / 2; ++i) out[threadIdx.x * (N / 2) + i] = d[i];
}
RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS(128) wgmma_wrappers(const rudnn::u64* descs, float* out) {
  using Tile = rudnn::tile::SwizzledKMajor<64, 64>;
  rudnn::bf16* s = rudnn::dynamic_shared<rudnn::bf16>();
  *reinterpret_cast<uint4*>(Tile::chunk(s, threadIdx.x / 8, threadIdx.x % 8)) = make_uint4(0, 0, 0, 0);
  rudnn::fence_proxy_async_shared();
  __syncthreads();
  float p[32];
  rudnn::wgmma_fence();
  rudnn::tile::wgmma_panel<rudnn::bf16, 64, Tile, Tile>(p, s, 0, s, 0, 0, false);
  rudnn::wgmma_commit();
  rudnn::wgmma_wait<0>();
  rudnn::wgmma_fence_operand(p);
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = p[i];
  every_form<64>(descs, out + 4096);
  every_form<128>(descs, out + 8192);
  every_form<256>(descs, out + 16384);
  every_form<32>(descs, out + 32768);
}
)";

TEST(NvrtcBackend, WgmmaWrappersCompileForSm90a) {
  REQUIRE_NVRTC();
  auto k = nv::compile(kWgmmaKernel, "wgmma_wrappers", "sm_90a");
  ASSERT_TRUE(k.ok()) << k.error().message();
  for (const char* insn :
       {"wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16", "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.fence.sync.aligned",
        "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0", "fence.proxy.async.shared::cta"})
    EXPECT_NE(k->ptx.find(insn), std::string::npos) << insn;
  EXPECT_TRUE(k->report.found) << k->log;
  if (std::getenv("RUDNN_SHOW_PTXAS") != nullptr) std::printf("%s\n", k->log.c_str());
}

// Elsewhere the wrappers are a compile error that names the target they need.
TEST(NvrtcBackend, WgmmaNeedsSm90a) {
  REQUIRE_NVRTC();
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto k = nv::compile(kWgmmaKernel, "wgmma_wrappers", arch);
    ASSERT_FALSE(k.ok()) << arch;
    EXPECT_NE(k.error().message().find("wgmma needs the sm_90a target"), std::string::npos) << k.error().message();
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
  auto k = nv::compile("extern \"C\" __global__ void broken(int* p) { p[0] = ; }\n", "broken", "sm_90a");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().kind(), rudnn::ErrorKind::CompileFailure);
  // The whole log travels in the message: file name, line and the compiler's words.
  EXPECT_NE(k.error().message().find("broken.cu(1)"), std::string::npos) << k.error().message();
  EXPECT_NE(k.error().message().find("expected an expression"), std::string::npos) << k.error().message();
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
