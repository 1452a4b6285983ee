#pragma once
// The emitter: one rudnn.launch → one CUDA C++ translation unit that only includes the template
// header and instantiates it (DESIGN §1). It is generic over launches: every kernel parameter is
// forwarded, in order, to the template function.
#include <string>

#include "mlir/IR/BuiltinAttributes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/compiler/kernel_launch.h"

namespace rudnn::compiler {

std::string emitKernelSource(dialect::LaunchOp launch);

// kernel_config dictionaries ↔ KernelConfig. Dictionaries sort their keys; KernelConfig lists the
// well-known keys (threads_per_row, rows_per_block, vector_width) first, in that order, then the
// rest alphabetically, so that names and comments read the same everywhere.
KernelConfig toKernelConfig(mlir::DictionaryAttr dict);
mlir::DictionaryAttr toDictionary(mlir::MLIRContext* ctx, const KernelConfig& config);

}  // namespace rudnn::compiler
