#pragma once
// Row-wise normalizations along the last axis of a [rows, h] tensor: layer_norm, rms_norm and
// softmax (SPEC §2). One kernel body; the op is a policy with fixed hooks, the geometry another.
//
// Launch contract (the emitter instantiates row_norm inside an extern "C" kernel declared with
// RUDNN_LAUNCH_BOUNDS(Policy::kBlockThreads), or RUDNN_LAUNCH_BOUNDS_MIN(Policy::kBlockThreads,
// Policy::kMinBlocksPerSm); every variant is free of spills under either):
//   block   = Policy::kBlockThreads = kThreadsPerRow * kRowsPerBlock threads; a row is served by
//             kThreadsPerRow consecutive threads (a power of two in 32..1024).
//   grid.x  = ceil_div(rows, kRowsPerBlock), or fewer: blocks stride over rows, so any grid works.
//   dynamic shared memory = Policy::kSharedBytes
//                         = kRowsPerBlock * max(1, kThreadsPerRow / 32) * 2 * sizeof(float).
//   h >= 1, h % kVectorWidth == 0, sizeof(T) * kVectorWidth <= 16 (float: width <= 4), and
//   input/output/gamma/beta 16-byte aligned when kVectorWidth > 1.
//   Row r of the input starts at input + r * input_row_stride, of the output at
//   output + r * output_row_stride (h for dense rows; more for an engine's row-strided views,
//   SPEC §13); with kVectorWidth > 1 both strides are multiples of kVectorWidth; both < 2^31.
//   gamma is read by layer_norm and rms_norm, beta (nullable) by layer_norm; softmax reads
//   neither. output may equal input (every element is read by the thread that writes it, before
//   it writes it).
// Numerics: statistics and affine math in FP32, output converted to T (round to nearest even).
//   layer_norm: two passes (mean, then mean of squared deviations: no E[x²] - E[x]² cancellation);
//   rms_norm:   one pass (mean of squares); softmax: max, then sum of exp(x - max).
// Data movement: each thread owns vectors j = lane + k * kThreadsPerRow of its row. When the row
// fits in a small per-thread register chunk (detail::RowShape) it is loaded once and kept in
// registers for all passes; otherwise every pass streams it again from global memory (mostly L2
// hits: the block just read that row).
#include "rudnn/grid.cuh"
#include "rudnn/numeric.cuh"
#include "rudnn/shared_memory.h"
#include "rudnn/reduce.cuh"
#include "rudnn/vector.cuh"

namespace rudnn::norm {

template <int kThreadsPerRow_, int kRowsPerBlock_, int kVectorWidth_>
struct RowPolicy {
  static constexpr int kThreadsPerRow = kThreadsPerRow_;
  static constexpr int kRowsPerBlock = kRowsPerBlock_;
  static constexpr int kVectorWidth = kVectorWidth_;
  static_assert(kThreadsPerRow >= 32 && kThreadsPerRow <= 1024 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0,
                "RowPolicy: threads per row must be a power of two in 32..1024");
  static_assert(kRowsPerBlock >= 1, "RowPolicy: at least one row per block");
  static_assert(kVectorWidth >= 1 && kVectorWidth <= 8 && (kVectorWidth & (kVectorWidth - 1)) == 0,
                "RowPolicy: vector width 1, 2, 4 or 8");

  static constexpr int kBlockThreads = kThreadsPerRow * kRowsPerBlock;
  static_assert(kBlockThreads <= 1024, "RowPolicy: at most 1024 threads per block");
  static constexpr int kWarpsPerRow = kThreadsPerRow / 32;
  // For RUDNN_LAUNCH_BOUNDS_MIN: at least 1024 resident threads per SM (at most 64 registers per
  // thread), since a bandwidth-bound kernel wants rows in flight more than registers. A bare
  // RUDNN_LAUNCH_BOUNDS lets ptxas choose (CUDA 13 then aims at full occupancy, often 40-48
  // registers here). Which is faster is for the GPU benchmark to say.
  static constexpr int kMinBlocksPerSm = 1024 / kBlockThreads > 32 ? 32 : 1024 / kBlockThreads;
  static constexpr int kSharedBytes = static_cast<int>(shared_memory::row_norm(kRowsPerBlock, kThreadsPerRow));
};

// Per-row statistics the op hooks fill in: y is computed from x, center and scale.
struct RowStats {
  float center = 0.0f;
  float scale = 1.0f;
};

// ---------------------------------------------------------------------------------------------------
// Op policies. Hooks: kPasses (1 or 2 statistic passes), Pass0/Pass1 (how a pass combines terms:
// SumOp or MaxOp), term<kPass>(x, stats) (one element's contribution), finish<kPass>(total, h, eps,
// stats) (turns the row total into statistics), kUsesGamma/kUsesBeta, apply(x, gamma, beta, stats).

struct LayerNorm {
  static constexpr int kPasses = 2;
  using Pass0 = SumOp;
  using Pass1 = SumOp;
  static constexpr bool kUsesGamma = true;
  static constexpr bool kUsesBeta = true;  // optional: a null beta reads as zeros
  template <int kPass>
  RUDNN_DEVICE static float term(float x, const RowStats& s) {
    if constexpr (kPass == 0) {
      return x;
    } else {
      const float d = x - s.center;
      return d * d;
    }
  }
  template <int kPass>
  RUDNN_DEVICE static void finish(float total, i64 h, float eps, RowStats& s) {
    if constexpr (kPass == 0) {
      s.center = total / static_cast<float>(h);
    } else {
      s.scale = 1.0f / sqrtf(total / static_cast<float>(h) + eps);  // biased variance
    }
  }
  RUDNN_DEVICE static float apply(float x, float gamma, float beta, const RowStats& s) {
    return (x - s.center) * s.scale * gamma + beta;
  }
};

struct RmsNorm {
  static constexpr int kPasses = 1;
  using Pass0 = SumOp;
  static constexpr bool kUsesGamma = true;
  static constexpr bool kUsesBeta = false;
  template <int kPass>
  RUDNN_DEVICE static float term(float x, const RowStats&) {
    return x * x;
  }
  template <int kPass>
  RUDNN_DEVICE static void finish(float total, i64 h, float eps, RowStats& s) {
    s.scale = 1.0f / sqrtf(total / static_cast<float>(h) + eps);
  }
  RUDNN_DEVICE static float apply(float x, float gamma, float, const RowStats& s) { return x * s.scale * gamma; }
};

struct Softmax {
  static constexpr int kPasses = 2;
  using Pass0 = MaxOp;
  using Pass1 = SumOp;
  static constexpr bool kUsesGamma = false;
  static constexpr bool kUsesBeta = false;
  template <int kPass>
  RUDNN_DEVICE static float term(float x, const RowStats& s) {
    if constexpr (kPass == 0) {
      return x;
    } else {
      return expf(x - s.center);
    }
  }
  template <int kPass>
  RUDNN_DEVICE static void finish(float total, i64, float, RowStats& s) {
    if constexpr (kPass == 0) {
      s.center = total;  // the row maximum
    } else {
      s.scale = 1.0f / total;
    }
  }
  RUDNN_DEVICE static float apply(float x, float, float, const RowStats& s) { return expf(x - s.center) * s.scale; }
};

namespace detail {

template <class Op, int kPass>
struct PassCombine {
  using type = typename Op::Pass0;
};
template <class Op>
struct PassCombine<Op, 1> {
  using type = typename Op::Pass1;
};

// How much of a row one thread holds in registers: 4 vectors when they are 8 or 16 bytes wide
// (so 4 x 8 bf16 per thread keep a whole row of 4096 resident at 128 threads per row), 8 narrower
// ones (odd h) except in 1024-thread blocks. These sizes are the largest that the ptxas reports of
// all variants show without spills on sm_80 and sm_90a, both with RUDNN_LAUNCH_BOUNDS_MIN (at most
// 64 registers) and with a bare __launch_bounds__(threads), under which ptxas aims at full
// occupancy (32 registers at 1024 threads: hence the smaller chunk there).
template <class T, class P>
struct RowShape {
  static constexpr int kChunkVectors = sizeof(T) * P::kVectorWidth >= 8 || P::kBlockThreads >= 1024 ? 4 : 8;
  static constexpr i64 kResidentVectors = static_cast<i64>(kChunkVectors) * P::kThreadsPerRow;
};

// kVectors vectors of one row, owned by one thread: vector k is row vector
// first + lane + k * kThreadsPerRow. All loads are issued before any is used.
template <class T, class P, int kVectors>
struct RowChunk {
  using V = Vec<T, P::kVectorWidth>;
  V v[kVectors];

  RUDNN_DEVICE void load(const T* row, i64 first, i64 nvec, int lane) {
    RUDNN_UNROLL
    for (int k = 0; k < kVectors; ++k) {
      const i64 j = first + lane + static_cast<i64>(k) * P::kThreadsPerRow;
      if (j < nvec) v[k] = load_vec<T, P::kVectorWidth>(row + j * P::kVectorWidth);
    }
  }
  template <class F>
  RUDNN_DEVICE void visit(i64 first, i64 nvec, int lane, F& f) const {
    RUDNN_UNROLL
    for (int k = 0; k < kVectors; ++k) {
      const i64 j = first + lane + static_cast<i64>(k) * P::kThreadsPerRow;
      if (j < nvec) f(j, v[k]);
    }
  }
};

// A thread's view of its row, one chunk of registers. Resident (the row fits in the chunk): loaded
// once, every pass reads registers. Streaming: every pass walks the row again, chunk by chunk.
// One code path for both keeps the kernel small (NVRTC time grows with its size). `nvec` is 0
// for a thread whose row is past the end: it walks nothing but still joins every reduction.
template <class T, class P>
class RowView {
 public:
  RUDNN_DEVICE RowView(const T* row, i64 nvec, int lane, bool resident)
      : row_(row), nvec_(nvec), lane_(lane), resident_(resident) {
    if (resident_) chunk_.load(row_, 0, nvec_, lane_);
  }
  template <class F>
  RUDNN_DEVICE void for_each(F&& f) {
    for (i64 first = 0; first < nvec_; first += kStride) {
      if (!resident_) chunk_.load(row_, first, nvec_, lane_);
      chunk_.visit(first, nvec_, lane_, f);
    }
  }

 private:
  static constexpr i64 kStride = RowShape<T, P>::kResidentVectors;
  RowChunk<T, P, RowShape<T, P>::kChunkVectors> chunk_;
  const T* row_;
  i64 nvec_;
  int lane_;
  bool resident_;
};

// One statistic pass: every thread combines the terms of its elements, then the row reduces.
template <class Op, int kPass, class P, class T, class Row, class Reducer>
RUDNN_DEVICE void stat_pass(Row& row, Reducer& reducer, i64 h, float eps, RowStats& s) {
  using Combine = typename PassCombine<Op, kPass>::type;
  const RowStats known = s;
  float acc = Combine::identity();
  row.for_each([&](i64, const Vec<T, P::kVectorWidth>& x) {
    RUDNN_UNROLL
    for (int i = 0; i < P::kVectorWidth; ++i)
      acc = Combine::combine(acc, Op::template term<kPass>(x.get_float(i), known));
  });
  Op::template finish<kPass>(reducer.template reduce<Combine>(acc), h, eps, s);
}

// gamma/beta for vector j (beta may be null; unused parameters are never read).
template <class Op, int kWidth>
RUDNN_DEVICE void load_affine(const float* gamma, const float* beta, i64 j, float (&g)[kWidth], float (&b)[kWidth]) {
  Vec<float, kWidth> gv{}, bv{};
  if constexpr (Op::kUsesGamma) gv = load_vec<float, kWidth>(gamma + j * kWidth);
  if constexpr (Op::kUsesBeta) {
    if (beta != nullptr) bv = load_vec<float, kWidth>(beta + j * kWidth);
  }
  RUDNN_UNROLL
  for (int i = 0; i < kWidth; ++i) {
    g[i] = Op::kUsesGamma ? gv.get_float(i) : 1.0f;
    b[i] = Op::kUsesBeta ? bv.get_float(i) : 0.0f;
  }
}

template <class Op, class P, class T, class Row>
RUDNN_DEVICE void write_row(Row& row, const RowStats& s, const float* gamma, const float* beta, T* out) {
  constexpr int kWidth = P::kVectorWidth;
  row.for_each([&](i64 j, const Vec<T, kWidth>& x) {
    float g[kWidth], b[kWidth], y[kWidth];
    load_affine<Op, kWidth>(gamma, beta, j, g, b);
    RUDNN_UNROLL
    for (int i = 0; i < kWidth; ++i) y[i] = Op::apply(x.get_float(i), g[i], b[i], s);
    Vec<T, kWidth> o;
    o.set_floats(y);
    store_vec<T, kWidth>(out + j * kWidth, o);
  });
}

template <class Op, class T, class P>
RUDNN_DEVICE void normalize_rows(const T* input, const float* gamma, const float* beta, T* output, i64 rows, i64 h,
                                 float epsilon, i64 input_row_stride, i64 output_row_stride) {
  const int lane = static_cast<int>(threadIdx.x) % P::kThreadsPerRow;
  const int slot = static_cast<int>(threadIdx.x) / P::kThreadsPerRow;
  GroupReducer<P::kWarpsPerRow> reducer(dynamic_shared<float>() + slot * GroupReducer<P::kWarpsPerRow>::kSharedFloats,
                                        lane);
  const i64 nvec = h / P::kVectorWidth;
  // Depends on h only: uniform in the grid.
  const bool resident = nvec <= RowShape<T, P>::kResidentVectors;
  const i64 row_step = block_count() * P::kRowsPerBlock;
  // 32-bit strides (the entry keeps them below 2^31): two registers fewer than 64-bit ones, which
  // is what keeps the 512- and 1024-thread variants free of spills.
  const int in_stride = static_cast<int>(input_row_stride);
  const int out_stride = static_cast<int>(output_row_stride);
  // The trip count depends only on the block index: uniform across the block, as the barriers need.
  for (i64 base = linear_block() * P::kRowsPerBlock; base < rows; base += row_step) {
    const i64 row = base + slot;
    const bool live = row < rows;
    // Both row pointers made up front: across the passes only they stay live, not the strides.
    const i64 r = live ? row : 0;
    T* const out_row = output + r * out_stride;
    RowView<T, P> view(input + r * in_stride, live ? nvec : 0, lane, resident);
    RowStats s;
    stat_pass<Op, 0, P, T>(view, reducer, h, epsilon, s);
    if constexpr (Op::kPasses > 1) stat_pass<Op, 1, P, T>(view, reducer, h, epsilon, s);
    write_row<Op, P>(view, s, gamma, beta, out_row);
  }
}

}  // namespace detail

template <class Op, class T, class Policy>
RUDNN_DEVICE void row_norm(const T* input, const float* gamma, const float* beta, T* output, i64 rows, i64 h,
                           float epsilon, i64 input_row_stride, i64 output_row_stride) {
  static_assert(sizeof(T) * Policy::kVectorWidth <= 16,
                "row_norm: a vector is at most 16 bytes (float: width <= 4; f16/bf16: <= 8)");
  detail::normalize_rows<Op, T, Policy>(input, gamma, beta, output, rows, h, epsilon, input_row_stride,
                                        output_row_stride);
}

}  // namespace rudnn::norm
