// rudnn-opt: mlir-opt with the func and rudnn dialects and the rudnn passes, for lit tests and for
// looking at what the compiler does to an op. The one difference from mlir-opt: the input is read
// under the rudnn input limits (compiler/main_function.h) before MLIR parses it, so a file nested
// deep enough to overflow the parser's stack, /dev/zero or a directory is a clear error.
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"
#include "rudnn/compiler/kernel_op_models.h"
#include "rudnn/compiler/main_function.h"

namespace {

int fail(const rudnn::Error& e) {
  llvm::errs() << "rudnn-opt: error: " << e.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, rudnn::dialect::RudnnDialect>();
  rudnn::compiler::registerKernelOpInterfaceModels(registry);
  rudnn::dialect::registerRudnnPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  static const std::string help =
      "rudnn optimizer driver\n\nInput limits: the input (a file or standard input) is at most " +
      std::to_string(rudnn::compiler::kMaxSourceBytes >> 20) + " MiB and nests at most " +
      std::to_string(rudnn::compiler::kMaxNestingDepth) +
      " deep (regions, brackets, affine operators); a directory or a device is rejected.\n";
  auto [input, output] = mlir::registerAndParseCLIOptions(argc, argv, help, registry);
  auto config = mlir::MlirOptMainConfig::createFromCLOptions();
  // These read no input: mlir-opt's own entry serves them.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, input, output, registry));

  // From here on what MlirOptMain(argc, argv, input, output, registry) does, with the input read
  // through the limits instead of mlir::openInputFile (which reads anything whole).
  llvm::InitLLVM init(argc, argv);
  const std::string name = input == "-" ? "<stdin>" : input;
  auto text = rudnn::compiler::read_source_file(input);
  if (!text.ok()) return fail(text.error());
  if (auto s = rudnn::compiler::check_source_limits(text.value(), name); !s.ok()) return fail(s.error());
  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(out->os(), llvm::MemoryBuffer::getMemBufferCopy(text.value(), name), registry, config)))
    return 1;
  out->keep();
  return 0;
}
