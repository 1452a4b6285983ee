#pragma once
// Reading the `func.func @main` of a module of rudnn ops: the one way rudnn-run (through
// rudnn::graph), rudnn-precompile and rudnn-autotune load their .mlir inputs.
#include <string>

#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/OwningOpRef.h>

#include "rudnn/error.h"

namespace rudnn::compiler {

struct MainFunction {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp main;
};

// Parses and verifies `text` (named `source_name` in diagnostics) in `context`, which must have the
// func and rudnn dialects; InvalidValue with MLIR's diagnostics when it is not a module with a
// `func.func @main` that has a body.
Result<MainFunction, RuntimeError> parse_main_function(const std::string& text, const std::string& source_name,
                                                       mlir::MLIRContext& context);
// The same for a file; IoFailure when it cannot be read.
Result<MainFunction, RuntimeError> read_main_function(const std::string& path, mlir::MLIRContext& context);

}  // namespace rudnn::compiler
