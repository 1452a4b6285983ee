#pragma once
// The normalization kernels the NVRTC tests compile: one translation unit per (op, dtype,
// threads_per_row, rows_per_block, vector_width), written the way the emitter writes them (it only
// includes the template and instantiates it inside an extern "C" entry).
//
// All sources come from norm_variants(). With RUDNN_TEST_USE_COMPILER (set by CMakeLists.txt when
// the compiler is part of the build) they are the compiler's own: every config of its registry
// (rudnn::compiler::normalization_variants) lowered by lower_normalization, i.e. exactly the
// translation units the library would hand NVRTC. Otherwise the test instantiates the template
// directly over the full geometry space.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "rudnn/shared_memory.h"

#if defined(RUDNN_TEST_USE_COMPILER)
#include "rudnn/compiler/pipeline.h"
#endif

namespace rudnn::test {

enum class NormOp { LayerNorm, RmsNorm, Softmax };
enum class NormType { F32, F16, BF16 };

struct NormConfig {
  NormOp op = NormOp::LayerNorm;
  NormType type = NormType::F32;
  int threads_per_row = 128;
  int rows_per_block = 1;
  int vector_width = 1;
};

struct NormKernel {
  NormConfig config;
  std::string entry;   // extern "C" name
  std::string source;  // the translation unit
};

inline const char* op_name(NormOp op) {
  switch (op) {
    case NormOp::LayerNorm: return "layer_norm";
    case NormOp::RmsNorm: return "rms_norm";
    case NormOp::Softmax: return "softmax";
  }
  return "?";
}
inline const char* type_name(NormType t) {
  switch (t) {
    case NormType::F32: return "f32";
    case NormType::F16: return "f16";
    case NormType::BF16: return "bf16";
  }
  return "?";
}
inline int type_bytes(NormType t) { return t == NormType::F32 ? 4 : 2; }

// Dynamic shared memory the kernel needs: the one formula RowPolicy::kSharedBytes and the host's
// launch rule both use (templates/rudnn/shared_memory.h).
inline std::int64_t norm_shared_bytes(const NormConfig& c) {
  return rudnn::shared_memory::row_norm(c.rows_per_block, c.threads_per_row);
}

inline NormKernel norm_kernel(const NormConfig& c) {
  static const char* const kOps[] = {"LayerNorm", "RmsNorm", "Softmax"};
  static const char* const kTypes[] = {"float", "rudnn::f16", "rudnn::bf16"};
  NormKernel k;
  k.config = c;
  k.entry = std::string("rudnn_") + op_name(c.op) + "_" + type_name(c.type) + "_t" + std::to_string(c.threads_per_row) +
            "_r" + std::to_string(c.rows_per_block) + "_v" + std::to_string(c.vector_width);
  const std::string t = kTypes[static_cast<int>(c.type)];
  k.source =
      "#include \"rudnn/norm/row_norm.cuh\"\n"
      "using Policy = rudnn::norm::RowPolicy<" +
      std::to_string(c.threads_per_row) + ", " + std::to_string(c.rows_per_block) + ", " +
      std::to_string(c.vector_width) + ">;\n" + "using T = " + t + ";\n" +
      "RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS_MIN(Policy::kBlockThreads, Policy::kMinBlocksPerSm)\n" + k.entry +
      "(const T* input, const float* gamma, const float* beta, T* output,\n"
      "    long long rows, long long h, float epsilon, long long input_row_stride, long long output_row_stride) {\n"
      "  rudnn::norm::row_norm<rudnn::norm::" +
      kOps[static_cast<int>(c.op)] +
      ", T, Policy>(input, gamma, beta, output, rows, h, epsilon, input_row_stride, output_row_stride);\n"
      "}\n";
  return k;
}

#if defined(RUDNN_TEST_USE_COMPILER)
inline constexpr bool kVariantsFromCompiler = true;

// The compiler's registry at h = 4096 (every vector width is legal there), lowered one by one.
inline std::vector<NormKernel> norm_variants() {
  using rudnn::contracts::NormKind;
  std::vector<NormKernel> out;
  const std::int64_t h = 4096;
  const std::pair<NormOp, NormKind> ops[] = {{NormOp::LayerNorm, NormKind::LayerNorm},
                                             {NormOp::RmsNorm, NormKind::RmsNorm},
                                             {NormOp::Softmax, NormKind::Softmax}};
  const std::pair<NormType, rudnn::DType> types[] = {
      {NormType::F32, rudnn::DType::F32}, {NormType::F16, rudnn::DType::F16}, {NormType::BF16, rudnn::DType::BF16}};
  for (auto [op, kind] : ops)
    for (auto [type, dtype] : types)
      for (const auto& config : rudnn::compiler::normalization_variants(kind, dtype, h)) {
        rudnn::compiler::NormRequest r;
        r.signature.kind = kind;
        r.signature.input = {{3, h}, dtype, 0};
        if (kind != NormKind::Softmax) r.signature.gamma = {{h}, rudnn::DType::F32, 0};
        if (kind == NormKind::LayerNorm) r.signature.beta = {{h}, rudnn::DType::F32, 0};
        r.config = config;
        auto lowered = rudnn::compiler::lower_normalization(r, rudnn::compiler::Target{});
        if (!lowered.ok() || lowered->launches.size() != 1)
          throw std::runtime_error("lower_normalization(" + config.to_string() +
                                   "): " + (lowered.ok() ? "not one launch" : lowered.error().message()));
        const auto& launch = lowered->launches.front();
        NormKernel k;
        k.config = {op, type, static_cast<int>(config.get("threads_per_row")),
                    static_cast<int>(config.get("rows_per_block")), static_cast<int>(config.get("vector_width"))};
        k.entry = launch.entry;
        k.source = launch.source;
        out.push_back(std::move(k));
      }
  return out;
}
#else
inline constexpr bool kVariantsFromCompiler = false;

// Every variant: threads_per_row 32..1024, rows_per_block 1/2/4 within 1024 threads, every vector
// width up to 16 bytes.
inline std::vector<NormKernel> norm_variants() {
  std::vector<NormKernel> out;
  for (NormOp op : {NormOp::LayerNorm, NormOp::RmsNorm, NormOp::Softmax})
    for (NormType type : {NormType::F32, NormType::F16, NormType::BF16})
      for (int tpr = 32; tpr <= 1024; tpr *= 2)
        for (int rpb : {1, 2, 4})
          for (int vw = 1; vw * type_bytes(type) <= 16; vw *= 2)
            if (tpr * rpb <= 1024) out.push_back(norm_kernel({op, type, tpr, rpb, vw}));
  return out;
}
#endif

}  // namespace rudnn::test
