// The registered search space of the normalization family: what the NVRTC compile tests walk and
// what autotune times. Every entry is a config the op verifier accepts for (dtype, h).
#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {

std::vector<KernelConfig> normalization_variants(contracts::NormKind /*kind*/, DType dtype, std::int64_t h) {
  namespace nc = dialect::norm_config;
  std::vector<KernelConfig> variants;
  if (!is_float(dtype) || h <= 0) return variants;
  // Every op of the family shares one template and so one space.
  for (std::int64_t threads : nc::kThreadsPerRowChoices)
    for (std::int64_t rows : nc::kRowsPerBlockChoices) {
      // Several rows per block only pay off while one row is a small block.
      if (rows > 1 && threads > 128) continue;
      for (std::int64_t width : nc::legalVectorWidths(dtype, h))
        variants.push_back(
            KernelConfig{{{nc::kThreadsPerRow, threads}, {nc::kRowsPerBlock, rows}, {nc::kVectorWidth, width}}});
    }
  return variants;
}

}  // namespace rudnn::compiler
