// The convolution variants (the compiler's registry conv_variants: every registered direct,
// depthwise and implicit-GEMM tile that serves the call) lowered by the compiler and compiled with
// NVRTC for sm_80 and sm_90a: no spills, no stack, no static shared memory. The kernels are
// specialized on the geometry, so a sample of geometries stands for all: a ResNet 3×3 layer (bf16:
// every tile in every direction; f32: the plain tiles), a 3-D 3×3×3 layer (bf16 every tile; f32 the
// heuristic: Direct), depthwise 3×3 (bf16), 7×7 stride 2 (f32) and 3×3 stride 2 multiplier 2 (bf16) with
// every tile and a 3-D depthwise, each in every direction, a strided 7×7 stem with 3 channels (the
// heuristic's choice, f16), the UNet 16×16×1280 3×3 layer (bf16, every tile: few pixels, many
// channels) and the data backward of a stride-2 3×3 (bf16, every tile: four stride phases).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

#if RUDNN_TEST_USE_COMPILER
#include "contracts/arch.h"
#include "rudnn/compiler/conv.h"

namespace nv = rudnn::compiler::nvrtc;
namespace compiler = rudnn::compiler;
namespace contracts = rudnn::contracts;
using rudnn::DType;
using rudnn::Shape;

namespace {

using Variant = rudnn::testing::KernelVariant;

// A config naming Hopper's warpgroup MMA (the key every family uses: contracts::kWgmmaConfigKey).
bool dialect_config_uses_wgmma(const compiler::KernelConfig& config) {
  for (const auto& [key, value] : config.values)
    if (key == contracts::kWgmmaConfigKey && value != 0) return true;
  return false;
}

// A channels-last call of `direction` over x [N, spatial..., C] and w [O, k..., C/groups].
contracts::ConvSignature signature(contracts::ConvDirection direction, const Shape& x, const Shape& w, DType t,
                                   std::vector<std::int64_t> stride, std::vector<std::int64_t> padding,
                                   std::int64_t groups) {
  contracts::ConvSignature sig;
  sig.direction = direction;
  sig.channels_last = true;
  sig.input = {x, t, 0};
  sig.weight = {w, t, 0};
  sig.params = {stride, padding, std::vector<std::int64_t>(stride.size(), 1), groups};
  if (direction != contracts::ConvDirection::Forward) sig.grad_output = {contracts::conv_output_shape(sig), t, 0};
  return sig;
}

std::vector<Variant> conv_variants() {
  const rudnn::testing::ScopedEnv opt_in("RUDNN_WGMMA", "1");  // the wgmma tiles lower for sm_90a only when opted in
  std::vector<Variant> out;
  std::set<std::string> seen;
  auto add = [&](const contracts::ConvSignature& sig, bool every_tile) {
    std::vector<std::optional<compiler::KernelConfig>> configs = {std::nullopt};
    if (every_tile)
      for (auto& c : compiler::conv_variants(sig, true)) configs.push_back(c);
    for (const auto& config : configs) {
      compiler::ConvRequest request{sig, "implicit_gemm", sig.direction == contracts::ConvDirection::WeightBackward,
                                    config, nullptr};
      auto lowered = compiler::lower_conv(request, compiler::Target{});
      EXPECT_TRUE(lowered.ok()) << (lowered.ok() ? "" : lowered.error().message());
      if (!lowered.ok()) continue;
      const bool wgmma = config && dialect_config_uses_wgmma(*config);
      for (const auto& l : lowered->launches)
        if (seen.insert(l.entry).second)
          out.push_back({l.entry, l.source, wgmma && l.entry.find("igemm") != std::string::npos});
    }
  };
  using D = contracts::ConvDirection;
  for (D d : {D::Forward, D::DataBackward, D::WeightBackward}) {
    add(signature(d, {8, 56, 56, 64}, {64, 3, 3, 64}, DType::BF16, {1, 1}, {1, 1}, 1), true);
    add(signature(d, {8, 56, 56, 64}, {64, 3, 3, 64}, DType::F32, {1, 1}, {1, 1}, 1), true);
    add(signature(d, {2, 16, 16, 1280}, {1280, 3, 3, 1280}, DType::BF16, {1, 1}, {1, 1}, 1), true);  // UNet
    add(signature(d, {2, 8, 28, 28, 32}, {32, 3, 3, 3, 32}, DType::BF16, {1, 1, 1}, {1, 1, 1}, 1), true);
    add(signature(d, {2, 8, 28, 28, 32}, {32, 3, 3, 3, 32}, DType::F32, {1, 1, 1}, {1, 1, 1}, 1), false);
    add(signature(d, {4, 112, 112, 3}, {64, 7, 7, 3}, DType::F16, {2, 2}, {3, 3}, 1), false);
  }
  // ResNet's strided 3x3 (28x28x128, stride 2): the data backward's four stride phases in one kernel,
  // every tile.
  add(signature(D::DataBackward, {32, 28, 28, 128}, {128, 3, 3, 128}, DType::BF16, {2, 2}, {1, 1}, 1), true);
  // Depthwise in every direction (the backward ones: depthwise_backward.cuh), multiplier 1 and 2.
  for (D d : {D::Forward, D::DataBackward, D::WeightBackward}) {
    add(signature(d, {8, 56, 56, 512}, {512, 3, 3, 1}, DType::BF16, {1, 1}, {1, 1}, 512), true);
    add(signature(d, {8, 56, 56, 64}, {64, 7, 7, 1}, DType::F32, {2, 2}, {3, 3}, 64), true);
    add(signature(d, {2, 8, 28, 28, 64}, {64, 3, 3, 3, 1}, DType::BF16, {1, 1, 1}, {1, 1, 1}, 64), false);
    add(signature(d, {8, 28, 28, 32}, {64, 3, 3, 1}, DType::BF16, {2, 2}, {1, 1}, 32), true);
  }
  return out;
}

TEST(ConvVariants, EveryRegisteredConfigLowers) {
  const auto variants = conv_variants();
  EXPECT_GE(variants.size(), 30u);
  for (const auto& v : variants) EXPECT_NE(v.source.find(v.entry + "("), std::string::npos);
}

// The warpgroup-MMA tiles are candidates of the sampled 16-bit implicit GEMMs in every direction.
TEST(ConvVariants, WarpgroupMmaTilesAreCandidates) {
  std::size_t wgmma = 0;
  for (const auto& v : conv_variants()) wgmma += v.sm90a_only;
  EXPECT_GE(wgmma, 12u);
}

TEST(ConvVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(conv_variants(), "convolution");
}

}  // namespace
#endif
