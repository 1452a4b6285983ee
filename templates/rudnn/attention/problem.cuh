#pragma once
// What every attention kernel needs to know about one call (SPEC §5): the sizes in launch order,
// how query rows are grouped into panels, and which keys a query row sees (mask, causal) with what
// additive bias. Shared by the Fallback kernels (attention/fallback.cuh) and FlashUnit
// (attention/flash_unit.cuh).
//
// Layout: query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv], output [B, Hq, Tq, Dv],
// all contiguous; Hq % Hkv == 0 and query head h reads kv head h / (Hq / Hkv).
//
// Panels. The `group` = Hq / Hkv query heads of one kv head are consecutive in Hq, so for a fixed
// (b, kv head) their query rows form one contiguous block of group·Tq rows, in the query, in the
// output and in an FP32 score workspace [B, Hq, Tq, Tk] alike. Kernels tile these panels, not single
// heads: decode (Tq = 1) with GQA then still fills a tile with the rows of the whole group, and the
// group's rows read the same K/V tile from shared memory. Panel p = b·Hkv + kv_head owns global
// rows p·group·Tq + m, m ∈ [0, group·Tq); its keys start at key + p·Tk·D, values at value + p·Tk·Dv.
//
// Which keys a query row sees (causal, mask) and the additive bias are the score variant's
// (attention/variant.cuh); Problem only maps panel rows to (batch, head, position) for it.
#include "rudnn/attention/variant.cuh"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

// Keeps a loop rolled on the GPU where unrolling it would only multiply live registers (the inner
// statements are already unrolled over register arrays); the host compiler decides for itself.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_ATTENTION_ROLLED _Pragma("unroll 1")
#else
#define RUDNN_ATTENTION_ROLLED
#endif

namespace rudnn::attention {

RUDNN_DEVICE i64 min_i64(i64 a, i64 b) { return a < b ? a : b; }
RUDNN_DEVICE i64 max_i64(i64 a, i64 b) { return a > b ? a : b; }
RUDNN_DEVICE i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// The sizes of one call in the kernels' parameter order, plus the panel geometry derived from them.
struct Problem {
  i64 batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  i64 group;       // query heads per kv head
  i64 panel_rows;  // group · Tq
  i64 panels;      // B · Hkv

  RUDNN_DEVICE Problem(i64 b, i64 hq, i64 hkv, i64 tq, i64 tk, i64 d, i64 dv)
      : batch(b),
        q_heads(hq),
        kv_heads(hkv),
        q_len(tq),
        kv_len(tk),
        head_dim(d),
        value_dim(dv),
        group(hq / hkv),
        panel_rows(hq / hkv * tq),
        panels(b * hkv) {}

  // First global row (of query, output, workspace) of panel p.
  RUDNN_DEVICE i64 panel_row0(i64 p) const { return p * panel_rows; }

  // The largest query position among panel rows [m0, m1) (m1 > m0): a tile of rows reads keys up to
  // the variant's key_end of it. Rows of one panel run over (head in group, i) with i fastest, so a
  // range spanning two heads contains i = Tq − 1.
  RUDNN_DEVICE i64 last_position(i64 m0, i64 m1) const {
    const i64 last = m1 - 1;
    return (m0 / q_len != last / q_len) ? q_len - 1 : last % q_len;
  }

  // The variant's view of row m of panel p (batch p / Hkv, query head (p % Hkv)·group + m / Tq,
  // position m % Tq), keys from 0.
  template <class Variant>
  RUDNN_DEVICE auto row_view(const Variant& variant, i64 p, i64 m) const {
    const i64 b = p / kv_heads;
    return variant.panel(b, (p % kv_heads) * group).row(m / q_len, m % q_len, 0);
  }
};

}  // namespace rudnn::attention
