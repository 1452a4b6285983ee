#pragma once
// The compiler's implementations of the dialect's KernelOpInterface (one external model per op
// family, compiler/Conversion/<Family>ToLaunch/*KernelModel.cpp). Every MLIRContext that runs the
// rudnn passes must have them: an operator op without a model is an error in each pass.
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace rudnn::compiler {

// Adds the rudnn dialect and an extension that attaches every registered family's model when the
// dialect is loaded into a context built from `registry`.
void registerKernelOpInterfaceModels(mlir::DialectRegistry& registry);

// Each family registers its attach function once, from its own *KernelModel.cpp, with a static
//   const KernelModelRegistration kRegistered(&attachFooKernelModel);
// (rudnn_compiler is an OBJECT library: every object, and so every registration, is linked).
// registerKernelOpInterfaceModels attaches all of them; no shared list names the families.
struct KernelModelRegistration {
  explicit KernelModelRegistration(void (*attach)(mlir::MLIRContext&));
};

}  // namespace rudnn::compiler
