#pragma once
// What the compiler reads from the paged ops (rudnn.paged_attention, rudnn.paged_mla,
// rudnn.paged_append, rudnn.paged_attention_backward, rudnn.paged_mla_backward): their contract
// signatures and kernel_config ↔ paged_config::Tile (the backward's {warps}).
#include <optional>
#include <string>

#include "contracts/paged_attention.h"
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"

namespace rudnn::dialect {

// The signature of a rudnn.paged_attention or rudnn.paged_mla op (device 0), or nothing when `op` is
// neither or an element type is not a rudnn dtype.
std::optional<contracts::PagedAttentionSignature> pagedSignatureOf(mlir::Operation* op);
std::optional<contracts::PagedAppendSignature> pagedAppendSignatureOf(PagedAppendOp op);
// The signature of a rudnn.paged_attention_backward or rudnn.paged_mla_backward op, or nothing.
std::optional<contracts::PagedBackwardSignature> pagedBackwardSignatureOf(mlir::Operation* op);
// The backward's config ({warps[, tensor_core]}): the given one, or the plain 4-warp one when
// there is none (the verifier has checked it).
paged_config::BackwardConfig pagedBackwardConfigOf(mlir::DictionaryAttr config);
// Why `config` cannot be the kernel_config of the paged backward op `op`, or nothing.
std::optional<std::string> checkPagedBackwardConfig(mlir::Operation* op, mlir::DictionaryAttr config);

// The tile shape of a checked signature.
paged_config::Shape pagedShapeOf(const contracts::PagedAttentionSignature& sig);

std::optional<paged_config::Tile> pagedTileOf(mlir::DictionaryAttr config);
mlir::DictionaryAttr pagedTileConfig(mlir::MLIRContext* ctx, const paged_config::Tile& tile);

// Why `config` cannot be the kernel_config of the paged attention/MLA op `op`, or nothing.
std::optional<std::string> checkPagedConfig(mlir::Operation* op, mlir::DictionaryAttr config);

}  // namespace rudnn::dialect
