//===- RudnnOps.td - every rudnn op -------------------------*- tablegen -*-===//
#ifndef RUDNN_DIALECT_RUDNN_OPS_TD
#define RUDNN_DIALECT_RUDNN_OPS_TD

// Each family's <Family>Ops.td (and LaunchOps.td), listed by a glob in dialect/CMakeLists.txt into
// this generated file: a new family's ops need no edit here.
include "rudnn/Dialect/Rudnn/IR/RudnnFamilyOps.td"

#endif // RUDNN_DIALECT_RUDNN_OPS_TD
