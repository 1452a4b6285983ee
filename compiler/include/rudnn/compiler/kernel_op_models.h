#pragma once
// The compiler's implementations of the dialect's KernelOpInterface (one external model per op
// family, compiler/Conversion/<Family>ToLaunch/*KernelModel.cpp). Every MLIRContext that runs the
// rudnn passes must have them: an operator op without a model is an error in each pass.
#include "mlir/IR/DialectRegistry.h"

namespace rudnn::compiler {

// Adds the rudnn dialect and an extension that attaches every family's model when the dialect is
// loaded into a context built from `registry`.
void registerKernelOpInterfaceModels(mlir::DialectRegistry& registry);

}  // namespace rudnn::compiler
