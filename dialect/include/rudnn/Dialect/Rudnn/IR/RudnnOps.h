#pragma once
// The ops of the rudnn dialect, and a uniform view of the normalization family.
#include <optional>
#include <string>

#include "contracts/attention.h"
#include "contracts/gated_delta.h"
#include "contracts/moe.h"
#include "contracts/normalization.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "rudnn/Dialect/Rudnn/IR/AttentionConfig.h"
#include "rudnn/Dialect/Rudnn/IR/GatedDeltaConfig.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnAttrs.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"

#define GET_OP_CLASSES
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h.inc"

namespace rudnn::dialect {

// What passes need from any normalization-family op, whichever of the three it is.
struct NormOpView {
  mlir::Operation* op = nullptr;
  contracts::NormKind kind = contracts::NormKind::LayerNorm;
  mlir::Value input, gamma, beta;     // gamma/beta null when the op has none
  double epsilon = 0.0;               // 0 for softmax
  mlir::DictionaryAttr kernelConfig;  // null until selected

  mlir::RankedTensorType inputType() const { return mlir::cast<mlir::RankedTensorType>(input.getType()); }
};
std::optional<NormOpView> asNormOp(mlir::Operation* op);

// Name of the discardable unit attribute that says "buffers may not be 16-byte aligned":
// the kernel config must then use vector_width 1.
inline constexpr const char* kUnalignedAttrName = "rudnn.unaligned";
// On rudnn.attention: the call's query or output heads are not Tq rows apart (token-major prefill
// with grouped-query heads), so the tensor-core kernel takes one query head per panel.
inline constexpr const char* kHeadPanelsAttrName = "rudnn.head_panels";
// On rudnn.attention, a hint the public entry sets where the op's shapes do not say it (Tq is
// dynamic there): the call's panels hold 64 rows or fewer (decode with a small group), which the
// heuristic does not give a 128-row warpgroup-MMA tile.
inline constexpr const char* kShortPanelsAttrName = "rudnn.short_panels";
inline constexpr const char* kKernelConfigAttrName = "kernel_config";
// Optional on rudnn.launch: the kernel's minimum resident blocks per SM (__launch_bounds__'s second
// argument in the emitted wrapper).
inline constexpr const char* kMinBlocksAttrName = "rudnn.min_blocks";
// Discardable i64 attribute on rudnn.swiglu_experts: about how many rows each expert gets in this
// call (the ops layer knows; the IR's row count is dynamic). rudnn-select-kernel-config sizes the
// tile by it.
inline constexpr const char* kRowsPerExpertAttrName = "rudnn.rows_per_expert";

// What passes need from either routing op (rudnn.route, rudnn.route_sigmoid_grouped).
struct RouteOpView {
  mlir::Operation* op = nullptr;
  bool grouped = false;
  mlir::Value logits, bias;                // bias null when absent (always for rudnn.route)
  contracts::GroupRouteSignature options;  // top_k, renormalize, and the grouped options (shapes unset)
  mlir::DictionaryAttr kernelConfig;       // null until selected
  mlir::RankedTensorType logitsType() const { return mlir::cast<mlir::RankedTensorType>(logits.getType()); }
};
std::optional<RouteOpView> asRouteOp(mlir::Operation* op);

// The routing kernel config: {rows_per_block} (one warp per token row).
namespace route_config {
inline constexpr const char* kRowsPerBlock = "rows_per_block";
inline constexpr std::int64_t kRowsPerBlockChoices[] = {1, 2, 4, 8};
}  // namespace route_config

// Why `config` cannot be the kernel_config of a routing op, or nothing (the verifier's rule, which
// rudnn-resolve-strategy applies to a provided config too).
std::optional<std::string> checkRouteConfig(mlir::DictionaryAttr config);
// The same for rudnn.dispatch (`dispatch`: rank_threads too) and rudnn.combine, whose rows
// (dispatch's input, combine's expert_rows) have type `rowType`.
std::optional<std::string> checkRowCopyConfig(mlir::DictionaryAttr config, mlir::RankedTensorType rowType,
                                              bool dispatch);

// The expert tile a swiglu_experts kernel_config names (keys of moe_config), or nothing when a key
// is missing or not an integer.
std::optional<moe_config::ExpertTile> expertTileOf(mlir::DictionaryAttr config);
mlir::DictionaryAttr expertTileConfig(mlir::MLIRContext* ctx, const moe_config::ExpertTile& tile);

// The gated delta tiles a kernel_config names, or nothing when keys are missing or extra.
std::optional<gated_delta_config::RecurrentTile> recurrentTileOf(mlir::DictionaryAttr config);
std::optional<gated_delta_config::ChunkTile> chunkTileOf(mlir::DictionaryAttr config);

// Why `config` cannot be the kernel_config of `op` (recurrence or chunked tile by its chunk_size),
// or nothing (the verifier's rule).
std::optional<std::string> checkGatedDeltaConfig(GatedDeltaOp op, mlir::DictionaryAttr config);

// rudnn.attention: its contract signature (device 0), and its kernel_config ↔ tile (head_dim: D).
mlir::FailureOr<contracts::AttentionSignature> attentionSignatureOf(AttentionOp op);
std::optional<attention_config::Tile> attentionTileOf(mlir::DictionaryAttr config, std::int64_t headDim);
mlir::DictionaryAttr attentionTileConfig(mlir::MLIRContext* ctx, const attention_config::Tile& tile);

// The expert weights of a swiglu_experts op as contract operands (device 0).
contracts::ExpertWeights expertWeightsOf(SwiGluExpertsOp op);

}  // namespace rudnn::dialect
