//===- Passes.td - rudnn passes -----------------------------*- tablegen -*-===//
// Declared with the dialect so that tools register them; implemented in compiler/.
#ifndef RUDNN_DIALECT_RUDNN_PASSES_TD
#define RUDNN_DIALECT_RUDNN_PASSES_TD

include "mlir/Pass/PassBase.td"

def SelectKernelConfigPass : Pass<"rudnn-select-kernel-config", "mlir::ModuleOp"> {
  let summary = "Attach a heuristic kernel_config to every operator op that has none";
  let description = [{
    Normalization ops: vector_width = the largest of 16-, 8- and 4-byte vectors (in elements)
    that divides the static last dim H, else 1 (also 1 when H is dynamic or the op carries
    `rudnn.unaligned`); threads_per_row = min(max-threads-per-block, max(32,
    next_pow2(ceil(H / (vector_width * 4))))); rows_per_block = 4 when threads_per_row == 32,
    else 1. A config that is already attached (forced by autotune or a test) is kept.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"", "Target architecture">,
    Option<"maxThreadsPerBlock", "max-threads-per-block", "int64_t", /*default=*/"1024",
           "Largest block the target allows">,
  ];
}

def ResolveStrategyPass : Pass<"rudnn-resolve-strategy", "mlir::ModuleOp"> {
  let summary = "Attach the kernel_config a ConfigProvider (autotune) chooses to every operator op that has none";
  let description = [{
    Runs before rudnn-select-kernel-config. For each operator op without a kernel_config it asks
    the compiler::ConfigProvider given by the C++ factory (compiler/Transforms/ResolveStrategy.h)
    for a config, with the op's dtypes, shapes and, when the caller knows them, the values of its
    dynamic extents. The provider's answer is attached; no answer leaves the op to the heuristic.
    Ops marked `rudnn.unaligned` are left to the heuristic (vector width 1). Built from the
    registry (rudnn-opt), the pass has no provider and changes nothing.
  }];
}

def LowerToLaunchPass : Pass<"rudnn-lower-to-launch", "mlir::ModuleOp"> {
  let summary = "Lower each configured operator op to rudnn.launch ops";
  let description = [{
    Each normalization op with a kernel_config becomes one rudnn.launch that instantiates
    rudnn::norm::row_norm (templates/rudnn/norm/row_norm.cuh). An op without a config is an error.
  }];
}

def PrintKernelSourcePass : Pass<"rudnn-print-kernel-source", "mlir::ModuleOp"> {
  let summary = "Print the CUDA C++ translation unit emitted for every rudnn.launch to stdout";
}

#endif // RUDNN_DIALECT_RUDNN_PASSES_TD
