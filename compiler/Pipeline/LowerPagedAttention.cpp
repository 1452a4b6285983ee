// lower_paged_attention / lower_paged_append / lower_paged_backward: a request → `func.func @main` with one paged op
// (queries, pages, page size and the schedule's extents dynamic) → verify → select kernel config →
// lower to launch → KernelLaunches.
#include <fmt/format.h>

#include "Pipeline/SingleOp.h"
#include "rudnn/Dialect/Rudnn/IR/ElementTypes.h"
#include "rudnn/Dialect/Rudnn/IR/PagedAttentionOps.h"
#include "rudnn/compiler/paged_attention.h"

using namespace mlir;

namespace rudnn::compiler {

using namespace pipeline_detail;

namespace {

// The operand's type with dims `dynamic` dynamic.
RankedTensorType typeOf(MLIRContext* ctx, const contracts::Operand& o, std::initializer_list<int> dynamic) {
  SmallVector<std::int64_t> shape(o.shape.begin(), o.shape.end());
  for (int d : dynamic) shape[static_cast<std::size_t>(d)] = ShapedType::kDynamic;
  return RankedTensorType::get(shape, dialect::toElementType(ctx, o.dtype));
}

// page_table, lengths, sequence_ids, positions: every extent dynamic.
void appendMetadataTypes(MLIRContext* ctx, const contracts::PagedMetadata& m, SmallVector<Type>& args) {
  args.push_back(typeOf(ctx, m.page_table, {0, 1}));
  args.push_back(typeOf(ctx, m.lengths, {0}));
  args.push_back(typeOf(ctx, m.sequence_ids, {0}));
  args.push_back(typeOf(ctx, m.positions, {0}));
}

}  // namespace

Result<LoweredOp, RuntimeError> lower_paged_attention(const PagedAttentionRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::PagedAttentionSignature& sig = request.signature;
  const bool mla = sig.kind == contracts::PagedKind::Mla;
  SmallVector<Type> args = {typeOf(&ctx, sig.query, {0})};
  if (mla) args.push_back(typeOf(&ctx, sig.query_rope, {0}));
  args.push_back(typeOf(&ctx, sig.key, {0, 1}));
  args.push_back(typeOf(&ctx, mla ? sig.key_rope : sig.value, {0, 1}));
  appendMetadataTypes(&ctx, sig.metadata, args);
  const contracts::PagedDims d = contracts::paged_dims(sig);
  Type out = RankedTensorType::get({ShapedType::kDynamic, d.q_heads, d.value_dim},
                                   dialect::toElementType(&ctx, sig.query.dtype));
  return lowerSingleOp(
      args, {out}, request.config, contracts::describe_call(sig), target,
      [&](OpBuilder& b, ValueRange a) -> Operation* {
        auto scale = b.getF32FloatAttr(static_cast<float>(sig.scale));
        auto causal = b.getBoolAttr(sig.causal);
        auto splits = b.getI64IntegerAttr(sig.splits);
        if (mla)
          return dialect::PagedMlaOp::create(b, b.getUnknownLoc(), out, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                                             scale, causal, splits, DictionaryAttr());
        return dialect::PagedAttentionOp::create(b, b.getUnknownLoc(), out, a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                 scale, causal, splits, DictionaryAttr());
      });
}

Result<LoweredOp, RuntimeError> lower_paged_append(const contracts::PagedAppendSignature& sig, const Target& target) {
  MLIRContext& ctx = threadContext();
  SmallVector<Type> args = {typeOf(&ctx, sig.key, {0}), typeOf(&ctx, sig.value, {0}),
                            typeOf(&ctx, sig.key_cache, {0, 1}), typeOf(&ctx, sig.value_cache, {0, 1})};
  appendMetadataTypes(&ctx, sig.metadata, args);
  return lowerSingleOp(args, {args[2], args[3]}, std::nullopt,
                       fmt::format("paged_append k {} {} cache {}", shape_to_string(sig.key.shape),
                                   dtype_name(sig.key.dtype), shape_to_string(sig.key_cache.shape)),
                       target, [&](OpBuilder& b, ValueRange a) -> Operation* {
                         return dialect::PagedAppendOp::create(b, b.getUnknownLoc(), TypeRange{args[2], args[3]}, a[0],
                                                               a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                                                               DictionaryAttr());
                       });
}

Result<LoweredOp, RuntimeError> lower_paged_backward(const PagedBackwardRequest& request, const Target& target) {
  MLIRContext& ctx = threadContext();
  const contracts::PagedAttentionSignature& sig = request.signature.forward;
  const bool mla = sig.kind == contracts::PagedKind::Mla;
  const PagedBackwardMode& mode = request.mode;
  SmallVector<Type> args = {typeOf(&ctx, sig.query, {0})};
  if (mla) args.push_back(typeOf(&ctx, sig.query_rope, {0}));
  args.push_back(typeOf(&ctx, sig.key, {0, 1}));
  args.push_back(typeOf(&ctx, mla ? sig.key_rope : sig.value, {0, 1}));
  args.push_back(typeOf(&ctx, request.signature.grad_out, {0}));
  appendMetadataTypes(&ctx, sig.metadata, args);
  const std::size_t inputs = args.size();
  if (mode.ordered) {
    auto index = RankedTensorType::get({ShapedType::kDynamic}, IntegerType::get(&ctx, 32));
    args.append({index, index});
  }
  // The gradients have their inputs' types; @main returns the selected ones.
  const SmallVector<Type> all =
      mla ? SmallVector<Type>{args[0], args[1], args[2], args[3]} : SmallVector<Type>{args[0], args[1], args[2]};
  SmallVector<Type> results;
  SmallVector<bool> returned;
  for (std::size_t i = 0; i < all.size(); ++i) {
    returned.push_back(request.outputs[i]);
    if (request.outputs[i]) results.push_back(all[i]);
  }
  std::string call = fmt::format("{}backward of {}", mode.ordered ? "ordered " : "", contracts::describe_call(sig));
  return lowerSingleOp(
      args, results, request.config, std::move(call), target,
      [&](OpBuilder& b, ValueRange a) -> Operation* {
        auto scale = b.getF32FloatAttr(static_cast<float>(sig.scale));
        auto causal = b.getBoolAttr(sig.causal);
        Value index = mode.ordered ? a[inputs] : Value(), order = mode.ordered ? a[inputs + 1] : Value();
        UnitAttr cacheRows = mode.cache_rows ? b.getUnitAttr() : UnitAttr(),
                 compact = mode.compact_history ? b.getUnitAttr() : UnitAttr();
        if (mla)
          return dialect::PagedMlaBackwardOp::create(b, b.getUnknownLoc(), all, a[0], a[1], a[2], a[3], a[4], a[5],
                                                     a[6], a[7], a[8], index, order, scale, causal, cacheRows, compact,
                                                     DictionaryAttr());
        return dialect::PagedAttentionBackwardOp::create(b, b.getUnknownLoc(), all, a[0], a[1], a[2], a[3], a[4], a[5],
                                                         a[6], a[7], index, order, scale, causal, cacheRows, compact,
                                                         DictionaryAttr());
      },
      returned);
}

std::optional<RuntimeError> check_paged_tile_fits(const contracts::PagedAttentionSignature& sig, const Target& target) {
  const auto limit = static_cast<std::int64_t>(target.limits.shared_memory_per_block_optin);
  const dialect::paged_config::Shape shape = dialect::pagedShapeOf(sig);
  if (dialect::paged_config::heuristicTile(shape, contracts::has_mma_m16n8k16(target.arch), limit)) return std::nullopt;
  return RuntimeError(
      ErrorKind::Unsupported, sig.kind == contracts::PagedKind::Mla ? "latent" : "value",
      fmt::format("key and value widths whose paged tile fits the device's {} bytes of shared memory", limit),
      fmt::format("key dim {} value dim {}", shape.keyDim, shape.valueDim));
}

std::vector<KernelConfig> paged_variants(const contracts::PagedAttentionSignature& sig, bool tensor_cores,
                                         std::int64_t max_shared_bytes, bool wgmma) {
  std::vector<KernelConfig> out;
  for (const auto& t :
       dialect::paged_config::candidates(dialect::pagedShapeOf(sig), tensor_cores, max_shared_bytes, wgmma))
    out.push_back(KernelConfig{dialect::paged_config::valuesOf(t)});
  return out;
}

}  // namespace rudnn::compiler
