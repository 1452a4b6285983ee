// The plain-core convolution templates (conv/direct.cuh, conv/depthwise.cuh, conv/layout.cuh)
// compiled with NVRTC for sm_80 and sm_90a on ResNet-like geometries: no spills, no stack, no static
// shared memory. One f32 and one bf16 instantiation of each kernel, each behind the extern "C"
// entry the compiler's emitter writes (compiler/Emitter/KernelSource.cpp); the entries are written
// here by hand, so the check does not wait for the conversion code.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "variant_check.h"

namespace {

namespace nv = rudnn::compiler::nvrtc;
using Variant = rudnn::testing::KernelVariant;

// Geometry<C, O, G, D, H, W, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW>
const char* const kResnet3x3 = "rudnn::conv::Geometry<64, 64, 1, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>";
const char* const kVideo3x3x3 = "rudnn::conv::Geometry<32, 32, 1, 8, 16, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>";
const char* const kDepthwise3x3 = "rudnn::conv::Geometry<64, 64, 64, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>";
const char* const kDepthwise7x7s2 = "rudnn::conv::Geometry<64, 64, 64, 1, 56, 56, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>";
const char* const kDepthwise3x3x3 = "rudnn::conv::Geometry<32, 32, 32, 8, 16, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>";
const char* const kDepthwise1d = "rudnn::conv::Geometry<64, 64, 64, 1, 1, 1024, 1, 1, 4, 1, 1, 1, 0, 0, 2, 1, 1, 1>";

struct Type {
  const char *name, *cpp;
};
const Type kTypes[] = {{"f32", "float"}, {"bf16", "rudnn::bf16"}};

Variant make(const std::string& header, const std::string& entry, int threads, const std::string& params,
             const std::string& call) {
  return {entry, "#include \"" + header + "\"\nRUDNN_KERNEL RUDNN_LAUNCH_BOUNDS(" + std::to_string(threads) +
                     ") void " + entry + "(" + params + ") {\n  " + call + ";\n}\n"};
}

std::vector<Variant> conv_direct_variants() {
  std::vector<Variant> out;
  for (const Type& t : kTypes) {
    const std::string T = t.cpp, tn = t.name;
    for (auto [gname, geometry, threads] :
         {std::tuple{"resnet3x3", kResnet3x3, 256}, std::tuple{"video3x3x3", kVideo3x3x3, 128}}) {
      const std::string G = geometry, P = "rudnn::conv::DirectPolicy<" + std::to_string(threads) + ">";
      const std::string suffix = std::string("_") + tn + "_" + gname + "_t" + std::to_string(threads);
      out.push_back(
          make("rudnn/conv/direct.cuh", "conv_fprop_direct" + suffix, threads,
               "const " + T + "* x, const " + T + "* w, const " + T + "* bias, " + T + "* y, rudnn::i64 n",
               "rudnn::conv::conv_fprop_direct<" + T + ", " + T + ", " + G + ", " + P + ">(x, w, bias, y, n)"));
      out.push_back(make("rudnn/conv/direct.cuh", "conv_dgrad_direct" + suffix, threads,
                         "const " + T + "* dy, const " + T + "* w, " + T + "* dx, rudnn::i64 n",
                         "rudnn::conv::conv_dgrad_direct<" + T + ", " + G + ", " + P + ">(dy, w, dx, n)"));
      out.push_back(make("rudnn/conv/direct.cuh", "conv_wgrad_direct" + suffix, threads,
                         "const " + T + "* x, const " + T + "* dy, " + T + "* dw, rudnn::i64 n",
                         "rudnn::conv::conv_wgrad_direct<" + T + ", " + G + ", " + P + ">(x, dy, dw, n)"));
      out.push_back(make("rudnn/conv/direct.cuh", "conv_bias_grad" + suffix, threads,
                         "const " + T + "* dy, float* db, rudnn::i64 rows, rudnn::i64 channels",
                         "rudnn::conv::conv_bias_grad<" + T + ", " + P + ">(dy, db, rows, channels)"));
    }
    out.push_back(make("rudnn/conv/layout.cuh", "swap_last_two_" + tn, 256,
                       "const " + T + "* src, " + T + "* dst, rudnn::i64 a, rudnn::i64 b, rudnn::i64 s",
                       "rudnn::conv::swap_last_two<" + T + ">(src, dst, a, b, s)"));
    for (auto [gname, geometry, tile] : {std::tuple{"dw3x3", kDepthwise3x3, "DepthwiseTile8x8x32"},
                                         std::tuple{"dw3x3", kDepthwise3x3, "DepthwiseTile4x16x32"},
                                         std::tuple{"dw3x3", kDepthwise3x3, "DepthwiseTile8x8x64"},
                                         std::tuple{"dw7x7s2", kDepthwise7x7s2, "DepthwiseTile8x8x32"},
                                         std::tuple{"dw3x3x3", kDepthwise3x3x3, "DepthwiseTile8x8x32"},
                                         std::tuple{"dw1d", kDepthwise1d, "DepthwiseTile4x16x32"}}) {
      // f32 with an FP32 bias, bf16 with a bias in T.
      const std::string B = T, G = geometry, P = std::string("rudnn::conv::") + tile;
      out.push_back(
          make("rudnn/conv/depthwise.cuh", "conv_fprop_depthwise_" + tn + "_" + gname + "_" + tile, 256,
               "const " + T + "* x, const " + T + "* w, const " + B + "* bias, " + T + "* y, rudnn::i64 n",
               "rudnn::conv::conv_fprop_depthwise<" + T + ", " + B + ", " + G + ", " + P + ">(x, w, bias, y, n)"));
    }
  }
  return out;
}

TEST(ConvDirectVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(conv_direct_variants());
}

}  // namespace
