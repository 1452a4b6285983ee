//===- RudnnOps.td - every rudnn op -------------------------*- tablegen -*-===//
#ifndef RUDNN_DIALECT_RUDNN_OPS_TD
#define RUDNN_DIALECT_RUDNN_OPS_TD

include "rudnn/Dialect/Rudnn/IR/NormOps.td"
include "rudnn/Dialect/Rudnn/IR/MoEOps.td"
include "rudnn/Dialect/Rudnn/IR/GatedDeltaOps.td"
include "rudnn/Dialect/Rudnn/IR/AttentionOps.td"
include "rudnn/Dialect/Rudnn/IR/ConvOps.td"
include "rudnn/Dialect/Rudnn/IR/LaunchOps.td"

#endif // RUDNN_DIALECT_RUDNN_OPS_TD
