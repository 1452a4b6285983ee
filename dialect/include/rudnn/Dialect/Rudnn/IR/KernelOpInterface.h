#pragma once
// KernelOpInterface (KernelOpInterface.td): what the passes ask any operator op. The dialect
// declares it; the compiler attaches the implementations (external models).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contracts/arch.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"

namespace rudnn::dialect {

// What the heuristics read of the target. Plain data so that the dialect does not depend on the
// compiler's Target; add a limit here when a heuristic needs one.
struct KernelTarget {
  std::string arch = "sm_90a";  // "sm_80", "sm_90a", "host", ...
  std::int64_t maxThreadsPerBlock = 1024;
  // Dynamic shared memory a block may opt into (sm_80 163 KiB, sm_86/sm_89 99 KiB, sm_90 227 KiB): a
  // heuristic does not pick a kernel that needs more.
  std::int64_t maxSharedBytes = contracts::kLargestSharedBytes;
};

// The part of a tuning question that depends on the family: the operands whose dtypes and shapes
// go into it (a null Value is an absent optional operand and is left out) and the op's option
// words that select a different search space. rudnn-resolve-strategy adds the op name and the
// call's dynamic extents.
struct TuningQuery {
  std::vector<mlir::Value> operands;
  std::vector<std::int64_t> options;
};

}  // namespace rudnn::dialect

#include "rudnn/Dialect/Rudnn/IR/KernelOpInterface.h.inc"

namespace rudnn::dialect {

// An op of the rudnn dialect that describes an operator call (every rudnn op but rudnn.launch).
bool isOperatorOp(mlir::Operation* op);

// The op's KernelOpInterface, or an error on the op (and failure) when no model is attached to it
// in this context: an operator op the passes cannot handle is never skipped silently.
mlir::FailureOr<KernelOpInterface> getKernelOpInterface(mlir::Operation* op);

}  // namespace rudnn::dialect
