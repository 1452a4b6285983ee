// rudnn-opt: mlir-opt with the func and rudnn dialects and the rudnn passes, for lit tests and for
// looking at what the compiler does to an op.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/Dialect/Rudnn/Transforms/Passes.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, rudnn::dialect::RudnnDialect>();
  rudnn::dialect::registerRudnnPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "rudnn optimizer driver\n", registry));
}
