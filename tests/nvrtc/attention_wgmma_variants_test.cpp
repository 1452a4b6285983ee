// The flash attention kernel on Hopper's warpgroup MMA (attention/flash_wgmma.cuh) compiled with
// NVRTC for sm_90a: every tile of the template test (tests/templates/attention_flash_mma_test.cpp)
// for f16 and bf16, without and with a mask and an f32 bias, group and head panels: no spills, no
// stack, no static shared memory, no wgmma serialized by ptxas. The kernel has no registered config
// yet (docs/wgmma.md), so the sources are instantiated here rather than lowered by the compiler.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

namespace nv = rudnn::compiler::nvrtc;

namespace {

using Variant = rudnn::testing::KernelVariant;

// One instantiation: the 31 kernel parameters of flash_attention_wgmma, passed through.
Variant flash_wgmma(const char* type, int d, int bm, int bn, bool mods, bool head_panels) {
  const std::string t = fmt::format("rudnn::{}", type);
  const std::string mb = mods ? "rudnn::u8" : "void", bb = mods ? "float" : "void";
  const std::string policy =
      fmt::format("rudnn::attention::FlashWgmmaPolicy<{}, {}, {}, {}>", d, bm, bn, head_panels ? "true" : "false");
  const std::string entry = fmt::format("rudnn_flash_wgmma_{}_d{}_{}x{}{}{}", type, d, bm, bn, mods ? "_mods" : "",
                                        head_panels ? "_heads" : "");
  std::string params =
      fmt::format("const {0}* q, const {0}* k, const {0}* v, const {1}* mask, const {2}* bias, {0}* out", t, mb, bb);
  std::string args = "q, k, v, mask, bias, out";
  for (int i = 0; i < 12; ++i) {
    params += fmt::format(", long long s{}", i);
    args += fmt::format(", s{}", i);
  }
  params += ", float scale";
  args += ", scale";
  for (int i = 0; i < 12; ++i) {
    params += fmt::format(", long long r{}", i);
    args += fmt::format(", r{}", i);
  }
  const std::string source = fmt::format(
      "#include \"rudnn/attention/flash_wgmma.cuh\"\n"
      "RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS({}) {}({}) {{\n"
      "  rudnn::attention::flash_attention_wgmma<{}, {}, {}, {}>({});\n}}\n",
      128 * (bm / 64), entry, params, t, mb, bb, policy, args);
  return {entry, source, true};
}

std::vector<Variant> wgmma_variants() {
  std::vector<Variant> out;
  for (const char* type : {"f16", "bf16"})
    for (int d : {64, 128})
      for (bool mods : {false, true})
        for (bool heads : {false, true}) out.push_back(flash_wgmma(type, d, 128, 128, mods, heads));  // the test's tile
  return out;
}

TEST(AttentionWgmmaVariants, CompileForSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(wgmma_variants(), "attention wgmma");
}

}  // namespace
