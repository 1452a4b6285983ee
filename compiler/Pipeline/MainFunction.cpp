#include "rudnn/compiler/main_function.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/Parser/Parser.h>

namespace rudnn::compiler {

Result<MainFunction, RuntimeError> parse_main_function(const std::string& text, const std::string& source_name,
                                                       mlir::MLIRContext& context) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, source_name), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sm, &context, os);
  MainFunction out;
  out.module = mlir::parseSourceFile<mlir::ModuleOp>(sm, mlir::ParserConfig(&context));
  if (!out.module)
    return RuntimeError(ErrorKind::InvalidValue, source_name, "a valid module of rudnn ops", "errors", os.str());
  out.main = out.module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!out.main || out.main.isExternal())
    return RuntimeError(ErrorKind::InvalidValue, source_name, "a func.func @main with a body", "none");
  return out;
}

Result<MainFunction, RuntimeError> read_main_function(const std::string& path, mlir::MLIRContext& context) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return RuntimeError(ErrorKind::IoFailure, path, "a readable .mlir file", buffer.getError().message());
  return parse_main_function((*buffer)->getBuffer().str(), path, context);
}

}  // namespace rudnn::compiler
