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
// Mask and bias (optional, logically [B, Hq, Tq, Tk]): element (b, h, i, j) sits at
// b·batch_stride + h·head_stride + i·Tk + j (a stride of 0 broadcasts). A null pointer means absent.
// The element types are template parameters of the kernels:
//   MB ∈ {u8, void}: u8 = a mask may be given (nonzero = excluded); void = the kernel is built
//                    without mask support and ignores the pointer.
//   BB ∈ {float, T, void}: the bias element type (added to the scaled score after conversion to
//                    FP32); void = built without bias support, the pointer is ignored.
// Causal (bottom-right aligned): query i sees key j iff j ≤ i + Tk − Tq.
#include "rudnn/numeric.cuh"

// Keeps a loop rolled on the GPU where unrolling it would only multiply live registers (the inner
// statements are already unrolled over register arrays); the host compiler decides for itself.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define RUDNN_ATTENTION_ROLLED _Pragma("unroll 1")
#else
#define RUDNN_ATTENTION_ROLLED
#endif

namespace rudnn::attention {

template <class X>
struct IsVoid {
  static constexpr bool value = false;
};
template <>
struct IsVoid<void> {
  static constexpr bool value = true;
};

RUDNN_DEVICE float negative_infinity() { return bits_as_float(0xff800000u); }

RUDNN_DEVICE i64 min_i64(i64 a, i64 b) { return a < b ? a : b; }
RUDNN_DEVICE i64 max_i64(i64 a, i64 b) { return a > b ? a : b; }
RUDNN_DEVICE i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// The block's index in the whole grid (x fastest) and the grid's size: the launcher may spread the
// work over x, y and z (e.g. row tiles × panels), and every kernel strides over the linear index, so
// any grid is correct.
RUDNN_DEVICE i64 linear_block() {
  return static_cast<i64>(blockIdx.x) +
         static_cast<i64>(gridDim.x) * (static_cast<i64>(blockIdx.y) + static_cast<i64>(gridDim.y) * blockIdx.z);
}
RUDNN_DEVICE i64 block_count() {
  return static_cast<i64>(gridDim.x) * static_cast<i64>(gridDim.y) * static_cast<i64>(gridDim.z);
}

// The sizes of one call in the kernels' parameter order, plus the panel geometry derived from them.
struct Problem {
  i64 batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  i64 mask_batch_stride, mask_head_stride, bias_batch_stride, bias_head_stride;
  bool causal;
  i64 group;       // query heads per kv head
  i64 panel_rows;  // group · Tq
  i64 panels;      // B · Hkv

  RUDNN_DEVICE Problem(i64 b, i64 hq, i64 hkv, i64 tq, i64 tk, i64 d, i64 dv, i64 mbs, i64 mhs, i64 bbs,
                       i64 bhs, i64 causal_flag)
      : batch(b), q_heads(hq), kv_heads(hkv), q_len(tq), kv_len(tk), head_dim(d), value_dim(dv),
        mask_batch_stride(mbs), mask_head_stride(mhs), bias_batch_stride(bbs), bias_head_stride(bhs),
        causal(causal_flag != 0), group(hq / hkv), panel_rows(hq / hkv * tq), panels(b * hkv) {}

  // First global row (of query, output, workspace) of panel p.
  RUDNN_DEVICE i64 panel_row0(i64 p) const { return p * panel_rows; }

  // Number of keys the query at position i may see before the mask: keys [0, key_end(i)) are
  // causally visible (a value ≤ 0 means none; never more than Tk).
  RUDNN_DEVICE i64 key_end(i64 i) const { return causal ? min_i64(kv_len, i + kv_len - q_len + 1) : kv_len; }

  // The largest key_end over panel rows [m0, m1) (m1 > m0): how far a tile of rows must read keys.
  // Rows of one panel run over (head in group, i) with i fastest, so a range spanning two heads
  // contains i = Tq − 1.
  RUDNN_DEVICE i64 key_end_of_rows(i64 m0, i64 m1) const {
    const i64 last = m1 - 1;
    const i64 i_max = (m0 / q_len != last / q_len) ? q_len - 1 : last % q_len;
    return key_end(i_max);
  }
};

// Mask, bias and causal limit of one query row: excluded(j) and bias(j) for keys j of that row.
template <class MB, class BB>
struct RowScoreMods {
  const MB* mask_row = nullptr;  // null: no mask (always null when MB is void)
  const BB* bias_row = nullptr;  // null: no bias (always null when BB is void)
  i64 key_end = 0;               // keys at or past this are causally hidden (or past Tk)

  // Row m of panel p.
  RUDNN_DEVICE RowScoreMods(const Problem& pr, const MB* mask, const BB* bias, i64 p, i64 m) {
    const i64 b = p / pr.kv_heads;
    const i64 h = (p % pr.kv_heads) * pr.group + m / pr.q_len;
    const i64 i = m % pr.q_len;
    key_end = pr.key_end(i);
    if constexpr (!IsVoid<MB>::value) {
      if (mask != nullptr) mask_row = mask + b * pr.mask_batch_stride + h * pr.mask_head_stride + i * pr.kv_len;
    }
    if constexpr (!IsVoid<BB>::value) {
      if (bias != nullptr) bias_row = bias + b * pr.bias_batch_stride + h * pr.bias_head_stride + i * pr.kv_len;
    }
  }

  // Key j (0 ≤ j) is excluded: causally hidden, past Tk, or masked.
  RUDNN_DEVICE bool excluded(i64 j) const {
    if (j >= key_end) return true;
    if constexpr (!IsVoid<MB>::value) {
      if (mask_row != nullptr && mask_row[j] != 0) return true;
    }
    return false;
  }

  // The additive bias of key j (0 without a bias); only read for keys that are not excluded.
  RUDNN_DEVICE float bias(i64 j) const {
    if constexpr (!IsVoid<BB>::value) {
      if (bias_row != nullptr) return to_float(bias_row[j]);
    }
    return 0.0f;
  }
};

}  // namespace rudnn::attention
