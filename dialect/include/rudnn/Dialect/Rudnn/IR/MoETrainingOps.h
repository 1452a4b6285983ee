#pragma once
// What the compiler reads from the MoE training ops (rudnn.router_weights, rudnn.router_backward,
// rudnn.combine_backward, rudnn.dispatch_backward, rudnn.swiglu_experts_backward): their contract
// signatures and their one-key kernel_config — router ops {warps} (rows per block, one warp per
// token row: 1, 2, 4 or 8), combine and dispatch backward {threads} (64, 128 or 256 per token), the
// experts backward {tile} (an index into moe_config::backwardTiles(), MoEConfig.h: scalar or tensor-core
// tiles, matching the op's strategy "scalar" / "tensor_core"; "auto" takes either).
#include <cstdint>
#include <optional>
#include <string>

#include "contracts/moe_training.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::dialect {

std::optional<contracts::RouterWeightsSignature> routerSignatureOf(mlir::Operation* op);
std::optional<contracts::CombineBackwardSignature> combineBackwardSignatureOf(CombineBackwardOp op);
std::optional<contracts::DispatchBackwardSignature> dispatchBackwardSignatureOf(DispatchBackwardOp op);
std::optional<contracts::ExpertsBackwardSignature> expertsBackwardSignatureOf(SwiGluExpertsBackwardOp op);

namespace moe_training_config {
inline constexpr const char* kWarps = "warps";
inline constexpr const char* kThreads = "threads";
inline constexpr const char* kTile = "tile";
// The config key of `op` ("warps" for the router ops, "tile" for the experts backward, else
// "threads") and its heuristic value on `arch` ("" when unknown; only the experts backward's "auto"
// depends on it: tensor cores where the contract allows them there) within `maxSharedBytes` of
// dynamic shared memory (0: no bound; the wgmma tile needs 132096 bytes).
const char* keyOf(mlir::Operation* op);
std::int64_t heuristicValue(mlir::Operation* op, const std::string& arch, std::int64_t maxSharedBytes = 0);
// Why `config` cannot serve `op`, or nothing.
std::optional<std::string> check(mlir::Operation* op, mlir::DictionaryAttr config);
// The config's value (after check).
std::int64_t valueOf(mlir::Operation* op, mlir::DictionaryAttr config);
}  // namespace moe_training_config

}  // namespace rudnn::dialect
