#pragma once
// The compiler's entry for convolution calls (the ops layer's conv entries, rudnn-precompile,
// autotune). No MLIR in this header.
#include <optional>
#include <string>
#include <vector>

#include "contracts/arch.h"
#include "contracts/conv.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::compiler {

// One convolution op (the direction is the signature's). The batch is dynamic in the IR, every
// other extent static. Slots:
//   forward          input 0, weight 1, bias 2 (kept when absent), output 3
//   data backward    grad_output 0, weight 1, grad_input 2
//   weight backward  input 0, grad_output 1, grad_weight 2[, grad_bias 3]
// then the temporaries (channels-first copies, split sums).
struct ConvRequest {
  contracts::ConvSignature signature;      // concrete shapes
  std::string strategy = "implicit_gemm";  // "direct", "implicit_gemm", "autotune"
  bool bias_grad = false;                  // weight backward: also grad_bias
  std::optional<KernelConfig> config;      // forced (tests, autotune); otherwise heuristic / provider
  ConfigProvider* provider = nullptr;      // asked for strategy "autotune" when `config` is empty
};
Result<LoweredOp, RuntimeError> lower_conv(const ConvRequest& request, const Target& target);

// Every registered config that serves the call (autotune's candidates, rudnn-precompile
// --with-autotune-candidates); tensor-core ones only when `tensor_cores`, warpgroup-MMA ones only
// when `wgmma` (contracts::has_wgmma), and only those within `max_shared_bytes` of dynamic shared
// memory (the target's opt-in limit; autotune, which has no target here, lists them all and
// prunes by the device: a target without mma.sync or wgmma refuses those configs at lowering).
std::vector<KernelConfig> conv_variants(const contracts::ConvSignature& sig, bool tensor_cores,
                                        std::int64_t max_shared_bytes = contracts::kLargestSharedBytes,
                                        bool wgmma = true);

}  // namespace rudnn::compiler
