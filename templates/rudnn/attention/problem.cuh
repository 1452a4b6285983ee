#pragma once
// What every attention kernel needs to know about one call (SPEC §5): the sizes in launch order,
// how query rows are grouped into panels, and which keys a query row sees (mask, causal) with what
// additive bias. Shared by the Fallback kernels (attention/fallback.cuh) and FlashUnit
// (attention/flash_unit.cuh).
//
// Layout: query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv], output [B, Hq, Tq, Dv];
// Hq % Hkv == 0 and query head h reads kv head h / (Hq / Hkv). The last dim of each is dense; the
// other three step by the operand's RowStrides (batch, head, token), so a kernel reads an engine's
// views as they are: token-major [B, T, H, D] memory, the Q, K and V slices of one fused projection
// buffer, a cache with room past Tk (SPEC §13). A contiguous tensor has strides (H·T·X, T·X, X).
//
// Panels. The `group` = Hq / Hkv query heads of one kv head are consecutive in Hq, so for a fixed
// (b, kv head) their query rows form one block of group·Tq rows (head in group, position), in the
// query, in the output and in an FP32 score workspace [B, Hq, Tq, Tk] alike. Kernels tile these
// panels, not single heads: decode (Tq = 1) with GQA then still fills a tile with the rows of the
// whole group, and the group's rows read the same K/V tile from shared memory. Panel p = b·Hkv +
// kv_head owns rows m ∈ [0, group·Tq): global row p·group·Tq + m of the (dense) score workspace, and
// the query and output rows PanelRows places; its key j is at key_row0(p) + j·token stride.
//
// Which keys a query row sees (causal, mask) and the additive bias are the score variant's
// (attention/variant.cuh); Problem only maps panel rows to (batch, head, position) for it.
#include "rudnn/attention/variant.cuh"
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"

namespace rudnn::attention {

RUDNN_DEVICE i64 min_i64(i64 a, i64 b) { return a < b ? a : b; }
RUDNN_DEVICE i64 max_i64(i64 a, i64 b) { return a > b ? a : b; }
RUDNN_DEVICE i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// Element strides of one [B, H, T, X] operand along B, H and T (X is dense).
struct RowStrides {
  i64 batch, head, token;
};

// Where the rows of one panel sit in the query or the output: row m (head m / len of the group,
// position m % len) starts at element base + (m / len)·head + (m % len)·token.
struct PanelRows {
  i64 base, head, token, len;
  RUDNN_DEVICE i64 operator()(i64 m) const {
    if (head == len * token) return base + m * token;  // evenly spaced rows (a dense tensor): no division
    // 32 bits where both fit (always, short of 2^31 rows): a 64-bit division is a subroutine call.
    const i64 g = ((m | len) >> 31) == 0 ? static_cast<i64>(static_cast<u32>(m) / static_cast<u32>(len)) : m / len;
    return base + g * head + (m - g * len) * token;
  }
};

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

  // First global row of panel p in the dense score workspace [B, Hq, Tq, Tk].
  RUDNN_DEVICE i64 panel_row0(i64 p) const { return p * panel_rows; }

  // The rows of panel p in the query or the output, whose strides are `s`.
  RUDNN_DEVICE PanelRows query_rows(i64 p, const RowStrides& s) const {
    return {(p / kv_heads) * s.batch + (p % kv_heads) * group * s.head, s.head, s.token, q_len};
  }
  // The element of key (or value) row 0 of panel p, whose strides are `s`; key j is j·s.token on.
  RUDNN_DEVICE i64 key_row0(i64 p, const RowStrides& s) const {
    return (p / kv_heads) * s.batch + (p % kv_heads) * s.head;
  }

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
