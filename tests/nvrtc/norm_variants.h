#pragma once
// The normalization kernels the NVRTC tests compile: one translation unit per (op, dtype,
// threads_per_row, rows_per_block, vector_width), written the way the emitter writes them (it only
// includes the template and instantiates it inside an extern "C" entry).
//
// All sources come from norm_variants(): when the compiler's registry
// (rudnn::compiler::normalization_variants + lower_normalization) is linked into the tests, only
// that function needs to change.
#include <cstdint>
#include <string>
#include <vector>

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

// Dynamic shared memory the kernel needs (RowPolicy::kSharedBytes, restated by the launch contract).
inline std::int64_t norm_shared_bytes(const NormConfig& c) {
  const int warps = c.threads_per_row / 32 > 1 ? c.threads_per_row / 32 : 1;
  return static_cast<std::int64_t>(c.rows_per_block) * warps * 2 * 4;
}

inline NormKernel norm_kernel(const NormConfig& c) {
  static const char* const kOps[] = {"LayerNorm", "RmsNorm", "Softmax"};
  static const char* const kTypes[] = {"float", "rudnn::f16", "rudnn::bf16"};
  NormKernel k;
  k.config = c;
  k.entry = std::string("rudnn_") + op_name(c.op) + "_" + type_name(c.type) + "_t" +
            std::to_string(c.threads_per_row) + "_r" + std::to_string(c.rows_per_block) + "_v" +
            std::to_string(c.vector_width);
  const std::string t = kTypes[static_cast<int>(c.type)];
  k.source = "#include \"rudnn/norm/row_norm.cuh\"\n"
             "using Policy = rudnn::norm::RowPolicy<" +
             std::to_string(c.threads_per_row) + ", " + std::to_string(c.rows_per_block) + ", " +
             std::to_string(c.vector_width) + ">;\n" + "using T = " + t + ";\n" +
             "RUDNN_KERNEL void RUDNN_LAUNCH_BOUNDS_MIN(Policy::kBlockThreads, Policy::kMinBlocksPerSm)\n" +
             k.entry +
             "(const T* input, const float* gamma, const float* beta, T* output,\n"
             "    long long rows, long long h, float epsilon) {\n"
             "  rudnn::norm::row_norm<rudnn::norm::" +
             kOps[static_cast<int>(c.op)] +
             ", T, Policy>(input, gamma, beta, output, rows, h, epsilon);\n"
             "}\n";
  return k;
}

// Every registered variant: threads_per_row 32..1024, rows_per_block 1/2/4 within 1024 threads,
// every vector width up to 16 bytes.
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

}  // namespace rudnn::test
