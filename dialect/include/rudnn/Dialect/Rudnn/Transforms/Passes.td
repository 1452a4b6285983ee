//===- Passes.td - rudnn passes -----------------------------*- tablegen -*-===//
// Declared with the dialect so that tools register them; implemented in compiler/.
#ifndef RUDNN_DIALECT_RUDNN_PASSES_TD
#define RUDNN_DIALECT_RUDNN_PASSES_TD

include "mlir/Pass/PassBase.td"

def SelectKernelConfigPass : Pass<"rudnn-select-kernel-config", "mlir::ModuleOp"> {
  let summary = "Attach a heuristic kernel_config to every operator op that has none";
  let description = [{
    Each family's heuristic is its KernelOpInterface model's (KernelOpInterface.td; the models live
    in compiler/Conversion/<Family>ToLaunch). An attached kernel_config that names a tensor-core
    kernel on a target without mma.sync m16n8k16, or a warpgroup-MMA one (wgmma = 1) on a target
    without wgmma (contracts::has_wgmma), is an error; an operator op without a model is an
    error. Normalization ops: vector_width = the largest of 16-, 8- and 4-byte vectors (in elements)
    that divides the static last dim H, else 1 (also 1 when H is dynamic or the op carries
    `rudnn.unaligned`); threads_per_row = min(max-threads-per-block, max(32,
    next_pow2(ceil(H / (vector_width * 4))))); rows_per_block = 4 when threads_per_row == 32,
    else 1. A config that is already attached (forced by autotune or a test) is kept.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"", "Target architecture">,
    Option<"maxThreadsPerBlock", "max-threads-per-block", "int64_t", /*default=*/"1024",
           "Largest block the target allows">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", /*default=*/"::rudnn::contracts::kLargestSharedBytes",
           "Largest dynamic shared memory a block of the target may opt into (default: sm_90's 227 KiB)">,
    Option<"hostEmulation", "host-emulation", "bool", /*default=*/"false",
           "The target is the host emulation device reporting `arch` (wgmma needs no opt-in there)">,
  ];
}

def ResolveStrategyPass : Pass<"rudnn-resolve-strategy", "mlir::ModuleOp"> {
  let summary = "Attach the kernel_config a ConfigProvider (autotune) chooses to every operator op that has none";
  let description = [{
    Runs before rudnn-select-kernel-config. For each operator op without a kernel_config it asks
    the compiler::ConfigProvider given by the C++ factory (compiler/Transforms/ResolveStrategy.h)
    for a config, with the op's dtypes, shapes and, when the caller knows them, the values of its
    dynamic extents. Which ops are asked, with which operands and option words, is each family's
    KernelOpInterface model's tuning query (e.g. ops marked `rudnn.unaligned` are left to the
    heuristic); the answer is attached when the model's config check accepts it, else dropped with
    a warning; no answer leaves the op to the heuristic. Built from the registry (rudnn-opt), the
    pass has no provider and changes nothing.
  }];
}

def LowerToLaunchPass : Pass<"rudnn-lower-to-launch", "mlir::ModuleOp"> {
  let summary = "Lower each configured operator op to rudnn.launch ops";
  let description = [{
    Each operator op with a kernel_config becomes its family's rudnn.launch ops, through its
    KernelOpInterface model (e.g. a normalization op becomes one rudnn.launch of
    rudnn::norm::row_norm, templates/rudnn/norm/row_norm.cuh). An op without a config, or without a
    model, is an error.
  }];
}

def PrintKernelSourcePass : Pass<"rudnn-print-kernel-source", "mlir::ModuleOp"> {
  let summary = "Print the CUDA C++ translation unit emitted for every rudnn.launch to stdout";
}

#endif // RUDNN_DIALECT_RUDNN_PASSES_TD
