#pragma once
// What the compiler reads from any convolution op (rudnn.conv_forward, rudnn.conv_data_backward,
// rudnn.conv_weight_backward): its contract signature and its kernel_config ↔ conv_config::Choice.
#include <optional>
#include <string>

#include "contracts/conv.h"
#include "rudnn/Dialect/Rudnn/IR/ConvConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::dialect {

// The op's signature (device 0; shape-only operands from the result types), or nothing when `op`
// is not a convolution op or an element type is not a rudnn dtype.
std::optional<contracts::ConvSignature> convSignatureOf(mlir::Operation* op);

std::optional<conv_config::Choice> convChoiceOf(mlir::DictionaryAttr config);
mlir::DictionaryAttr convChoiceConfig(mlir::MLIRContext* ctx, const conv_config::Choice& choice);

// Why `config` cannot be the kernel_config of the convolution op `op`, or nothing.
std::optional<std::string> checkConvConfig(mlir::Operation* op, mlir::DictionaryAttr config);

}  // namespace rudnn::dialect
