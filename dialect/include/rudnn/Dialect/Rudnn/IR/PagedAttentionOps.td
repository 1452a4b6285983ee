//===- PagedAttentionOps.td - paged attention and MLA --------*- tablegen -*-===//
// SPEC §8 and §9. The verifiers call rudnn::contracts::check_paged_attention / check_paged_append /
// check_paged_backward (core/contracts/paged_attention), the same checks the public API runs; then
// the result types and the kernel_config (PagedAttentionConfig.h).
//
// The schedule is four i32 operands, exactly HostPlan's arrays: page_table [sequences,
// table_pages], lengths [sequences], sequence_ids [queries], positions [queries]. The ops trust
// them: the public API validates them in HostPlan::create, and rudnn-run builds a HostPlan from
// its inputs before it runs an op (docs/dialect.md).
#ifndef RUDNN_DIALECT_PAGED_ATTENTION_OPS_TD
#define RUDNN_DIALECT_PAGED_ATTENTION_OPS_TD

include "rudnn/Dialect/Rudnn/IR/RudnnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Rudnn_PagedAttentionOp : Rudnn_Op<"paged_attention", [Pure]> {
  let summary = "Attention over a paged KV cache: packed prefill and decode rows, GQA, split-KV";
  let description = [{
    query [Q, Hq, D], key_cache [pages, page_size, Hkv, D], value_cache [pages, page_size, Hkv, Dv]
    → [Q, Hq, Dv]. Query row r (sequence s = sequence_ids[r], position p = positions[r]) sees keys
    0..lengths[s]−1, or 0..p when `causal`, read through page_table[s]. `splits` > 1 (2..32) splits
    each row's keys into parts of ⌈L / splits⌉ and merges them by their log-sum-exps.
    ```mlir
    %o = rudnn.paged_attention %q, %k, %v, %table, %lengths, %seq, %pos {scale = 0.088 : f32,
           causal = true, splits = 1} : tensor<?x32x128xbf16>, tensor<64x16x8x128xbf16>,
           tensor<64x16x8x128xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
           -> tensor<?x32x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key_cache, AnyRankedTensor:$value_cache,
                       AnyRankedTensor:$page_table, AnyRankedTensor:$lengths, AnyRankedTensor:$sequence_ids,
                       AnyRankedTensor:$positions, F32Attr:$scale, BoolAttr:$causal, I64Attr:$splits,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $page_table `,` $lengths `,` $sequence_ids `,` $positions
    attr-dict `:` type($query) `,` type($key_cache) `,` type($value_cache) `,` type($page_table) `,`
    type($lengths) `,` type($sequence_ids) `,` type($positions) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Rudnn_PagedMlaOp : Rudnn_Op<"paged_mla", [Pure]> {
  let summary = "Multi-head latent attention over a paged latent cache";
  let description = [{
    query [Q, H, R] (absorbed), query_rope [Q, H, P], latent_cache [pages, page_size, 1, R],
    rope_cache [pages, page_size, 1, P] → [Q, H, R]: scores = scale · (q·latent + qp·kp), values the
    latent rows. Schedule, causal and splits as rudnn.paged_attention.
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$query_rope, AnyRankedTensor:$latent_cache,
                       AnyRankedTensor:$rope_cache, AnyRankedTensor:$page_table, AnyRankedTensor:$lengths,
                       AnyRankedTensor:$sequence_ids, AnyRankedTensor:$positions, F32Attr:$scale, BoolAttr:$causal,
                       I64Attr:$splits, OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $query `,` $query_rope `,` $latent_cache `,` $rope_cache `,` $page_table `,` $lengths `,` $sequence_ids `,`
    $positions attr-dict `:` type($query) `,` type($query_rope) `,` type($latent_cache) `,` type($rope_cache) `,`
    type($page_table) `,` type($lengths) `,` type($sequence_ids) `,` type($positions) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Rudnn_PagedAppendOp : Rudnn_Op<"paged_append", [Pure]> {
  let summary = "Writes new key/value rows into a paged cache at the schedule's positions";
  let description = [{
    key [Q, Hkv, D] and value [Q, Hkv, Dv] rows go to each query row's position through its sequence's
    page table; the results are the updated caches (value semantics: the runtime writes in place only
    when no other handle shares a cache's storage). No two rows may map to one physical slot.
  }];
  let arguments = (ins AnyRankedTensor:$key, AnyRankedTensor:$value, AnyRankedTensor:$key_cache,
                       AnyRankedTensor:$value_cache, AnyRankedTensor:$page_table, AnyRankedTensor:$lengths,
                       AnyRankedTensor:$sequence_ids, AnyRankedTensor:$positions,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$new_key_cache, AnyRankedTensor:$new_value_cache);
  let assemblyFormat = [{
    $key `,` $value `,` $key_cache `,` $value_cache `,` $page_table `,` $lengths `,` $sequence_ids `,` $positions
    attr-dict `:` type($key) `,` type($value) `,` type($key_cache) `,` type($value_cache) `,` type($page_table) `,`
    type($lengths) `,` type($sequence_ids) `,` type($positions) `->` type($new_key_cache) `,` type($new_value_cache)
  }];
  let hasVerifier = 1;
}

def Rudnn_PagedAttentionBackwardOp : Rudnn_Op<"paged_attention_backward", [Pure, AttrSizedOperandSegments]> {
  let summary = "Gradients of rudnn.paged_attention (SPEC §9: the atomic or the ordered path)";
  let description = [{
    query [Q, Hq, D], key_cache [pages, page_size, Hkv, D], value_cache [pages, page_size, Hkv, Dv],
    grad_out [Q, Hq, Dv], the schedule as rudnn.paged_attention → dq [Q, Hq, D], dk and dv in the
    caches' shapes (every row and head that reads a slot adds to it; a slot no visible key reaches is
    0). Probabilities are recomputed. A result nobody uses is not computed (nor its scratch made).

    Atomic (no `ordered`): the history gradients sum with FP32 atomics (not bitwise deterministic).
    Ordered (`ordered(history_index, page_order)`, both i32 1-D, built by OrderedBackwardWorkspace):
    no floating-point atomics; dk and dv are summed key by key in the schedule's fixed order.
    `cache_rows` stages the visiting query rows in shared memory; `compact_history` schedules the
    active pages first through page_order (read only then). Neither changes a bit of the result.
    kernel_config {warps} (2, 4 or 8 work items per block).
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key_cache, AnyRankedTensor:$value_cache,
                       AnyRankedTensor:$grad_out, AnyRankedTensor:$page_table, AnyRankedTensor:$lengths,
                       AnyRankedTensor:$sequence_ids, AnyRankedTensor:$positions,
                       Optional<AnyRankedTensor>:$history_index, Optional<AnyRankedTensor>:$page_order,
                       F32Attr:$scale, BoolAttr:$causal, UnitAttr:$cache_rows, UnitAttr:$compact_history,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$dq, AnyRankedTensor:$dk, AnyRankedTensor:$dv);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $grad_out `,` $page_table `,` $lengths `,` $sequence_ids `,`
    $positions (`ordered` `(` $history_index^ `,` $page_order `:` type($history_index) `,` type($page_order) `)`)?
    attr-dict `:` type($query) `,` type($key_cache) `,` type($value_cache) `,` type($grad_out) `,`
    type($page_table) `,` type($lengths) `,` type($sequence_ids) `,` type($positions) `->` type($dq) `,` type($dk)
    `,` type($dv)
  }];
  let hasVerifier = 1;
}

def Rudnn_PagedMlaBackwardOp : Rudnn_Op<"paged_mla_backward", [Pure, AttrSizedOperandSegments]> {
  let summary = "Gradients of rudnn.paged_mla (SPEC §9: the atomic or the ordered path)";
  let description = [{
    The operands of rudnn.paged_mla and grad_out [Q, H, R] → dq [Q, H, R], dq_rope [Q, H, P], dlatent
    [pages, page_size, 1, R] (the key and the value contribution), dk_rope [pages, page_size, 1, P].
    As rudnn.paged_attention_backward otherwise (`ordered(...)`, `cache_rows`, `compact_history`).
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$query_rope, AnyRankedTensor:$latent_cache,
                       AnyRankedTensor:$rope_cache, AnyRankedTensor:$grad_out, AnyRankedTensor:$page_table,
                       AnyRankedTensor:$lengths, AnyRankedTensor:$sequence_ids, AnyRankedTensor:$positions,
                       Optional<AnyRankedTensor>:$history_index, Optional<AnyRankedTensor>:$page_order,
                       F32Attr:$scale, BoolAttr:$causal, UnitAttr:$cache_rows, UnitAttr:$compact_history,
                       OptionalAttr<DictionaryAttr>:$kernel_config);
  let results = (outs AnyRankedTensor:$dq, AnyRankedTensor:$dq_rope, AnyRankedTensor:$dlatent,
                      AnyRankedTensor:$dk_rope);
  let assemblyFormat = [{
    $query `,` $query_rope `,` $latent_cache `,` $rope_cache `,` $grad_out `,` $page_table `,` $lengths `,`
    $sequence_ids `,` $positions
    (`ordered` `(` $history_index^ `,` $page_order `:` type($history_index) `,` type($page_order) `)`)?
    attr-dict `:` type($query) `,` type($query_rope) `,` type($latent_cache) `,`
    type($rope_cache) `,` type($grad_out) `,` type($page_table) `,` type($lengths) `,` type($sequence_ids) `,`
    type($positions) `->` type($dq) `,` type($dq_rope) `,` type($dlatent) `,` type($dk_rope)
  }];
  let hasVerifier = 1;
}

#endif // RUDNN_DIALECT_PAGED_ATTENTION_OPS_TD
