#pragma once
// The rudnn passes (declared in Passes.td, implemented in compiler/Transforms and
// compiler/Conversion). registerRudnnPasses() makes them visible to rudnn-opt.
#include <memory>
#include <string>

#include "contracts/arch.h"  // the max-shared-bytes option's default
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace rudnn::dialect {

#define GEN_PASS_DECL
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h.inc"

}  // namespace rudnn::dialect
