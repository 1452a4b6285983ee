#pragma once
// Reading the `func.func @main` of a module of rudnn ops: the one way rudnn-run (through
// rudnn::graph), rudnn-precompile and rudnn-autotune load their .mlir inputs, and the input limits
// that rudnn-opt applies before handing a file to MLIR.
#include <cstdint>
#include <string>
#include <string_view>

#include <mlir/Dialect/Func/IR/FuncOps.h>
#include <mlir/IR/BuiltinOps.h>
#include <mlir/IR/OwningOpRef.h>

#include "rudnn/error.h"

namespace rudnn::compiler {

// Limits on MLIR source (docs/input-limits.md). MLIR's parser recurses once per
// nested region, attribute, type and parenthesis, so a deep enough input overflows the stack; and
// it reads a whole file into memory, so /dev/zero never ends. The examples and lit tests nest at
// most 5 deep (10 in generic form with locations) and measure kilobytes.
inline constexpr std::uint64_t kMaxSourceBytes = 64ull << 20;  // 64 MiB
inline constexpr int kMaxNestingDepth = 64;

// InvalidValue naming `source_name`, the limit and what it got when `text` is larger than
// kMaxSourceBytes or nests deeper than kMaxNestingDepth. Nesting counts ( [ { < outside string
// literals and comments (a '>' of '->' or '>=' closes nothing), plus, inside affine_map<...> and
// affine_set<...>, the operators of one expression (MLIR parses and prints those recursively).
Status<RuntimeError> check_source_limits(std::string_view text, const std::string& source_name);

// The text of `path` ("-": standard input), read without ever holding more than kMaxSourceBytes:
// IoFailure when it cannot be opened or is not a regular file (a directory, /dev/zero, a pipe;
// standard input may be anything), InvalidValue when it is larger than the limit.
Result<std::string, RuntimeError> read_source_file(const std::string& path);

// Loads into `context` what every reader of rudnn modules needs: the func and rudnn dialects and
// the KernelOpInterface models (compiler/include/rudnn/compiler/kernel_op_models.h).
void load_rudnn_dialects(mlir::MLIRContext& context);

struct MainFunction {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp main;
};

// Parses and verifies `text` (named `source_name` in diagnostics) in `context`, which must have the
// func and rudnn dialects; InvalidValue when it exceeds the source limits, or with MLIR's
// diagnostics when it is not a module with a `func.func @main` that has a body.
Result<MainFunction, RuntimeError> parse_main_function(const std::string& text, const std::string& source_name,
                                                       mlir::MLIRContext& context);
// The same for a file (read_source_file: the limits apply).
Result<MainFunction, RuntimeError> read_main_function(const std::string& path, mlir::MLIRContext& context);

}  // namespace rudnn::compiler
