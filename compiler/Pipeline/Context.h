#pragma once
// One MLIRContext per thread with the dialects the pipeline uses already loaded: creating and
// loading a context costs far more than lowering one op.
#include "mlir/IR/MLIRContext.h"

namespace rudnn::compiler {

mlir::MLIRContext& threadContext();

}  // namespace rudnn::compiler
