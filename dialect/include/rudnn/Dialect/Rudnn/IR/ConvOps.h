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

// A discardable i64 on a convolution op whose batch is dynamic: the batch its heuristic config is
// made for (split counts follow its bucket, conv_config::bucketBatch). lower_conv sets it to the
// call's batch, so one plan serves the bucket and the heuristic still sees how many tiles there are.
inline constexpr const char* kConvBatchHintAttrName = "rudnn.batch_hint";
// The op's geometry for the heuristic: its batch, else the batch hint, else dynamic.
contracts::ConvGeometry convHeuristicGeometry(mlir::Operation* op, const contracts::ConvSignature& sig);

std::optional<conv_config::Choice> convChoiceOf(mlir::DictionaryAttr config);
mlir::DictionaryAttr convChoiceConfig(mlir::MLIRContext* ctx, const conv_config::Choice& choice);

// Why `config` cannot be the kernel_config of the convolution op `op`, or nothing.
std::optional<std::string> checkConvConfig(mlir::Operation* op, mlir::DictionaryAttr config);

}  // namespace rudnn::dialect
