#pragma once
// The rudnn MLIR dialect (see RudnnBase.td and docs/dialect.md).
#include "mlir/IR/Dialect.h"

#include "rudnn/Dialect/Rudnn/IR/RudnnOpsDialect.h.inc"
