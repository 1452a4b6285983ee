#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

using namespace mlir;

#include "rudnn/Dialect/Rudnn/IR/RudnnOpsDialect.cpp.inc"

namespace rudnn::dialect {

void RudnnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.cpp.inc"
      >();
  registerAttributes();
}

}  // namespace rudnn::dialect

#define GET_OP_CLASSES
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.cpp.inc"
