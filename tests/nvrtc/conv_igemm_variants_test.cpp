// The implicit-GEMM convolution kernels (templates/rudnn/conv/implicit_gemm.cuh) compiled with NVRTC
// for sm_80 and sm_90a with a generated extern "C" entry per instantiation: every registered policy on
// a ResNet layer (56×56×64 → 64, 3×3, pad 1; tensor cores in bf16 and f16, plain in f32 and f16), plus
// a strided stem with C = 3 (element gathers) and the split reduce. No spills, no stack, no static
// shared memory; registers printed by the check, dynamic shared bytes printed here (conv/shared_memory.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"
#include "rudnn/conv/shared_memory.h"
#include "variant_check.h"

namespace {

namespace nv = rudnn::compiler::nvrtc;
using Variant = rudnn::testing::KernelVariant;

struct Policy {
  const char* name;  // entry-name suffix
  int bm, bn, bk, wm, wn, stages;
  bool tensor_core;
  std::string type() const {
    return "rudnn::conv::IgemmPolicy<" + std::to_string(bm) + ", " + std::to_string(bn) + ", " + std::to_string(bk) +
           ", " + std::to_string(wm) + ", " + std::to_string(wn) + ", " + std::to_string(stages) + ", " +
           (tensor_core ? "true" : "false") + ">";
  }
  int threads() const { return 32 * wm * wn; }
};

// The registered tuples (implicit_gemm.cuh's "Registered" list).
const Policy kPolicies[] = {{"tc128x128", 128, 128, 32, 2, 4, 3, true},
                            {"tc64x128", 64, 128, 32, 2, 2, 3, true},
                            {"tc64x64", 64, 64, 32, 2, 2, 4, true},
                            {"plain64x64", 64, 64, 16, 2, 4, 3, false},
                            {"plain32x32", 32, 32, 16, 2, 2, 2, false}};

const char* const kResNet = "rudnn::conv::Geometry<64, 64, 1, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>";
const char* const kStem = "rudnn::conv::Geometry<3, 64, 1, 1, 224, 224, 1, 7, 7, 1, 2, 2, 0, 3, 3, 1, 1, 1>";

struct Row {
  std::string entry;
  long long shared;
};

void add(std::vector<Variant>& out, std::vector<Row>& rows, const Policy& p, const char* t, const char* tname,
         const char* geometry, const char* gname, int element_bytes) {
  namespace sm = rudnn::conv::shared_memory;
  const std::string head = "#include \"rudnn/conv/implicit_gemm.cuh\"\nusing T = " + std::string(t) +
                           ";\nusing G = " + geometry + ";\nusing P = " + p.type() + ";\n";
  const std::string bounds = "RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS(" + std::to_string(p.threads()) + ") ";
  const std::string suffix = std::string("_") + gname + "_" + tname + "_" + p.name;
  const std::string f = "conv_fprop" + suffix, d = "conv_dgrad" + suffix, w = "conv_wgrad" + suffix;
  out.push_back({f, head + bounds + f +
                        "(const T* x, const T* w, const float* bias, T* y, rudnn::i64 n) {\n"
                        "  rudnn::conv::conv_fprop_igemm<T, float, G, P>(x, w, bias, y, n);\n}\n"});
  out.push_back({d, head + bounds + d +
                        "(const T* dy, const T* w, T* dx, rudnn::i64 n) {\n"
                        "  rudnn::conv::conv_dgrad_igemm<T, G, P>(dy, w, dx, n);\n}\n"});
  out.push_back({w, head + bounds + w +
                        "(const T* x, const T* dy, float* partial, rudnn::i64 n, rudnn::i64 splits) {\n"
                        "  rudnn::conv::conv_wgrad_igemm<T, G, P>(x, dy, partial, n, splits);\n}\n"});
  rows.push_back({f, sm::igemm_fprop(p.stages, p.bm, p.bn, p.bk, element_bytes)});
  rows.push_back({d, sm::igemm_dgrad(p.stages, p.bm, p.bn, p.bk, element_bytes)});
  rows.push_back({w, sm::igemm_wgrad(p.stages, p.bm, p.bn, p.bk, element_bytes)});
}

std::vector<Variant> variants(std::vector<Row>& rows) {
  std::vector<Variant> out;
  for (const Policy& p : kPolicies) {
    if (p.tensor_core) {
      add(out, rows, p, "rudnn::bf16", "bf16", kResNet, "resnet", 2);
    } else {
      add(out, rows, p, "float", "f32", kResNet, "resnet", 4);
    }
  }
  add(out, rows, kPolicies[2], "rudnn::f16", "f16", kResNet, "resnet", 2);
  add(out, rows, kPolicies[3], "rudnn::f16", "f16", kResNet, "resnet", 2);
  add(out, rows, kPolicies[0], "rudnn::bf16", "bf16", kStem, "stem", 2);
  for (const char* t : {"float", "rudnn::bf16"}) {
    const std::string e = std::string("conv_wgrad_reduce_") + (t[0] == 'f' ? "f32" : "bf16");
    out.push_back({e, "#include \"rudnn/conv/implicit_gemm.cuh\"\nRUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS(256) " + e +
                          "(const float* partial, " + t +
                          "* dw, rudnn::i64 elements, rudnn::i64 splits) {\n"
                          "  rudnn::conv::conv_wgrad_reduce<" +
                          t + ">(partial, dw, elements, splits);\n}\n"});
    rows.push_back({e, 0});
  }
  return out;
}

TEST(ConvIgemmVariants, CompileForSm80AndSm90aWithoutSpills) {
  if (!nv::available()) GTEST_SKIP() << "SKIP: NVRTC is not installed here";
  std::vector<Row> rows;
  const auto v = variants(rows);
  for (const Row& r : rows) std::printf("%-48s dynamic shared %6lld B\n", r.entry.c_str(), r.shared);
  rudnn::testing::expect_spill_free_on_sm80_and_sm90a(v);
}

}  // namespace
