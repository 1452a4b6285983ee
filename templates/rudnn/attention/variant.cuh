#pragma once
// The attention score variant: everything that decides, per (query row, key), whether a key is kept
// and what its logit is, between the product q·k and the softmax. One policy type with hooks, used
// by every attention kernel (flash_mma and flash_wgmma, flash_unit, the Fallback scores) — so a new
// score modifier (sliding window, soft-cap, ALiBi, ...) is one edit here, after FlashInfer's
// variants.cuh (LogitsTransform / LogitsMask).
//
// Hooks, in three levels (a kernel builds each level once where its loops allow):
//   call   Variant(mask, bias, mask_batch_stride, mask_head_stride, bias_batch_stride,
//                  bias_head_stride, q_len, kv_len, causal)        from the kernel arguments
//          key_end(i)          keys [0, key_end(i)) may be kept for query position i (≤ Tk; ≤ 0:
//                              none). Kernels skip key tiles past it (causal: never loaded).
//          panel(b, head0)     the view of batch b's query heads head0, head0 + 1, ...
//   panel  key_end(i)          as above
//          elementwise()       true when a key inside [0, key_end(i)) may still be dropped or its
//                              logit changed: false lets a kernel skip row() and the element hooks
//                              for tiles that every row sees whole (flash_mma does).
//          row(dh, i, key0)    the row of query head head0 + dh at position i, keys from key0 on
//   row    key_end             keys [0, key_end) of the row view are in range (key_end(i) − key0)
//          masked(j)           key key0 + j is dropped (then its score is −inf)
//          logit(x, j, unit)   the logit of a kept key key0 + j in the kernel's units: x is the
//                              scaled product scale·q·k times `unit` (1: natural log domain, the
//                              Fallback scores; log2(e): the flash kernels' exp2 domain); returns
//                              x + unit·bias(j) here
//          excluded(j)         j ≥ key_end or masked(j)
// A kernel writes −inf for an excluded key and logit(...) otherwise; a row whose keys are all
// excluded outputs zeros (every kernel handles −inf rows; never NaN).
//
// DefaultVariant<MB, BB> is today's semantics (SPEC §5, docs/attention.md): causal bottom-right
// aligned (query i sees key j iff j ≤ i + Tk − Tq), a u8 mask (nonzero = dropped) and an additive
// bias (float or T, converted to FP32), both logically [B, Hq, Tq, Tk] with element (b, h, i, j) at
// b·batch_stride + h·head_stride + i·Tk + j (a stride of 0 broadcasts). MB ∈ {u8, void},
// BB ∈ {float, T, void}: void builds the kernel without that input (the pointer is ignored);
// otherwise a null pointer means absent at run time. The order of operations (bias added to the
// scaled product; a masked key is −inf whatever its bias, NaN included) is the kernels' contract:
// tests compare bits between builds.
//
// Adding a modifier: give the variant its parameters (and the kernels' argument lists the values),
// then change the hook it affects: a score transform (soft-cap: unit·c·tanh(x / (unit·c)); ALiBi:
// x + unit·slope(h)·(j − i)) in Row::logit, a drop rule (sliding window: j < i + Tk − Tq − w) in
// Row::masked, and make Panel::elementwise() true when it applies inside the causal range (or
// tighten key_end, which also skips tiles).
#include "rudnn/numeric.cuh"

namespace rudnn::attention {

template <class MB, class BB>
struct DefaultVariant {
  // One query row's view, from key key0 on.
  struct Row {
    const MB* mask_row = nullptr;  // at (b, h, i, key0); null: no mask (always null when MB is void)
    const BB* bias_row = nullptr;  // likewise
    i64 key_end = 0;               // keys of this view at or past this are out of range

    RUDNN_DEVICE bool masked(i64 j) const {
      if constexpr (!IsVoid<MB>::value) {
        if (mask_row != nullptr && mask_row[j] != 0) return true;
      }
      return false;
    }
    RUDNN_DEVICE float logit(float x, i64 j, float unit) const {
      if constexpr (!IsVoid<BB>::value) {
        if (bias_row != nullptr) return x + to_float(bias_row[j]) * unit;
      }
      return x;
    }
    RUDNN_DEVICE bool excluded(i64 j) const { return j >= key_end || masked(j); }
  };

  // The query heads head0, head0 + 1, ... of one batch (a panel of grouped heads, or one head).
  struct Panel {
    const MB* mask = nullptr;  // at (b, head0, 0, 0); null: no mask
    const BB* bias = nullptr;  // likewise
    i64 mask_head_stride = 0, bias_head_stride = 0;
    i64 q_len = 0, kv_len = 0;
    bool causal = false;

    // Causal, bottom-right aligned: query i sees keys j ≤ i + Tk − Tq (and never past Tk).
    RUDNN_DEVICE i64 key_end(i64 i) const {
      const i64 causal_end = i + kv_len - q_len + 1;
      return causal && causal_end < kv_len ? causal_end : kv_len;
    }
    RUDNN_DEVICE bool elementwise() const {
      bool any = false;
      if constexpr (!IsVoid<MB>::value) any = any || mask != nullptr;
      if constexpr (!IsVoid<BB>::value) any = any || bias != nullptr;
      return any;
    }
    // Head head0 + dh at position i, keys from key0.
    RUDNN_DEVICE Row row(i64 dh, i64 i, i64 key0) const {
      Row r;
      r.key_end = key_end(i) - key0;
      const i64 at = i * kv_len + key0;
      if constexpr (!IsVoid<MB>::value) {
        if (mask != nullptr) r.mask_row = mask + dh * mask_head_stride + at;
      }
      if constexpr (!IsVoid<BB>::value) {
        if (bias != nullptr) r.bias_row = bias + dh * bias_head_stride + at;
      }
      return r;
    }
  };

  const MB* mask;
  const BB* bias;
  i64 mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride;
  i64 q_len, kv_len;
  bool causal;

  RUDNN_DEVICE DefaultVariant(const MB* mask_, const BB* bias_, i64 mbs, i64 mhs, i64 bbs, i64 bhs, i64 tq, i64 tk,
                              i64 causal_flag)
      : mask(mask_),
        bias(bias_),
        mask_batch_stride(mbs),
        mask_head_stride(mhs),
        bias_batch_stride(bbs),
        bias_head_stride(bhs),
        q_len(tq),
        kv_len(tk),
        causal(causal_flag != 0) {}

  RUDNN_DEVICE Panel panel(i64 b, i64 head0) const {
    Panel p;
    if constexpr (!IsVoid<MB>::value) {
      if (mask != nullptr) p.mask = mask + b * mask_batch_stride + head0 * mask_head_stride;
      p.mask_head_stride = mask_head_stride;
    }
    if constexpr (!IsVoid<BB>::value) {
      if (bias != nullptr) p.bias = bias + b * bias_batch_stride + head0 * bias_head_stride;
      p.bias_head_stride = bias_head_stride;
    }
    p.q_len = q_len;
    p.kv_len = kv_len;
    p.causal = causal;
    return p;
  }
  RUDNN_DEVICE i64 key_end(i64 i) const { return panel(0, 0).key_end(i); }
};

}  // namespace rudnn::attention
