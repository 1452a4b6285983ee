#pragma once
// Shared by the Fallback and FlashUnit attention template tests: the case list of SPEC §5 / issue 5,
// input generation (fresh seeds), the FP64 oracle (tests/reference/attention.h) and the checks:
// every output element written (outputs start as NaN bytes), nothing written past the end, rows
// with no kept key exactly zero, relative L2 error within DESIGN §5's bound for the dtype.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_views.h"
#include "host/emulator.h"
#include "reference/attention.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance / fresh_seed
#include "rudnn/attention/fallback.cuh"
#include "rudnn/attention/problem.cuh"

namespace attention_test {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u8;

// How a mask or bias is given: absent, or [B or 1, Hq or 1, Tq, Tk].
enum class Extra { None, Full, OverBatch, OverHeads, OverBoth };

inline const char* name_of(Extra e) {
  static const char* const kNames[] = {"none", "full", "bcast-batch", "bcast-heads", "bcast-both"};
  return kNames[static_cast<int>(e)];
}

struct Case {
  const char* what;
  i64 batch, q_heads, kv_heads, q_len, kv_len, head_dim, value_dim;
  bool causal = false;
  Extra mask = Extra::None;
  Extra bias = Extra::None;
  bool bias_in_t = false;   // bias element type T (else float)
  bool empty_rows = false;  // the mask excludes every key of some rows
  bool extreme = false;     // q·k = ±1e4-scale logits before the scale
};

inline std::string describe(const Case& c) {
  return std::string(c.what) + ": B=" + std::to_string(c.batch) + " Hq=" + std::to_string(c.q_heads) +
         " Hkv=" + std::to_string(c.kv_heads) + " Tq=" + std::to_string(c.q_len) + " Tk=" + std::to_string(c.kv_len) +
         " D=" + std::to_string(c.head_dim) + " Dv=" + std::to_string(c.value_dim) + (c.causal ? " causal" : "") +
         " mask=" + name_of(c.mask) + (c.empty_rows ? "+empty-rows" : "") + " bias=" + name_of(c.bias) +
         (c.bias_in_t ? "(T)" : "(f32)") + (c.extreme ? " extreme" : "");
}

// The shared case list: decode, Tq = Tk, Tq < Tk and Tq > Tk with causal, lengths 1, 17, 65 and 151,
// GQA ratios 1, 4 and 8, masks with fully masked rows, bias broadcasts, extreme logits, odd D / Dv.
inline std::vector<Case> shared_cases() {
  using E = Extra;
  return {
      {"decode gqa4 masked", 2, 8, 2, 1, 100, 64, 64, false, E::Full, E::None, false, true},
      {"decode gqa8 causal bias", 1, 8, 1, 1, 17, 32, 32, true, E::None, E::OverBatch, false},
      {"square causal gqa1", 2, 2, 2, 17, 17, 32, 48, true, E::None, E::OverBatch, false},
      {"tq<tk causal gqa8", 1, 8, 1, 5, 37, 64, 64, true, E::OverBatch, E::OverHeads, true},
      {"tq>tk causal gqa4", 1, 4, 1, 37, 17, 16, 16, true, E::OverBoth, E::Full, false, true},
      {"length one", 2, 2, 2, 1, 1, 5, 7, true, E::None, E::OverBoth, false},
      // Row 64 is the only row of its tile and sees key 64, the first of a key tile, as its last.
      {"causal tile edge", 1, 1, 1, 65, 65, 8, 8, true, E::None, E::OverBoth, false},
      {"odd dims, no extras", 1, 4, 4, 17, 17, 5, 7, false, E::None, E::None, false},
      {"long causal gqa4", 2, 4, 1, 151, 151, 64, 64, true, E::OverHeads, E::None, false, true},
      {"tq<tk masked, no causal", 2, 4, 1, 17, 151, 24, 40, false, E::Full, E::Full, true, true},
      {"extreme logits", 2, 4, 2, 9, 33, 40, 24, false, E::None, E::Full, false, false, true},
      {"extreme logits causal masked", 1, 4, 1, 13, 29, 40, 40, true, E::Full, E::OverBatch, true, true, true},
  };
}

// All inputs of one case, as the kernels get them and (as doubles) as the oracle gets them.
template <class T>
struct Problem {
  Case c;
  std::uint64_t seed;
  float scale;
  std::vector<T> q, k, v;
  std::vector<u8> mask;  // empty: none
  std::vector<float> bias_f;
  std::vector<T> bias_t;
  i64 mask_bs = 0, mask_hs = 0, bias_bs = 0, bias_hs = 0;
  std::vector<double> expected;
  std::vector<char> empty_row;  // per output row: no kept key → exact zeros

  i64 out_elems() const { return c.batch * c.q_heads * c.q_len * c.value_dim; }
  const void* bias_ptr() const {
    if (c.bias == Extra::None) return nullptr;
    return c.bias_in_t ? static_cast<const void*>(bias_t.data()) : static_cast<const void*>(bias_f.data());
  }
  const void* mask_ptr() const { return c.mask == Extra::None ? nullptr : mask.data(); }
};

// Extent over (batch, heads) of an extra, and its element strides.
inline void extra_geometry(Extra e, const Case& c, i64& nb, i64& nh, i64& bs, i64& hs) {
  nb = (e == Extra::Full || e == Extra::OverHeads) ? c.batch : 1;
  nh = (e == Extra::Full || e == Extra::OverBatch) ? c.q_heads : 1;
  const i64 plane = c.q_len * c.kv_len;
  bs = nb == 1 ? 0 : nh * plane;
  hs = nh == 1 ? 0 : plane;
}

template <class T>
Problem<T> make_problem(const Case& c, std::uint64_t seed) {
  Problem<T> p;
  p.c = c;
  p.seed = seed;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const i64 nq = c.batch * c.q_heads * c.q_len * c.head_dim;
  const i64 nk = c.batch * c.kv_heads * c.kv_len * c.head_dim;
  const i64 nv = c.batch * c.kv_heads * c.kv_len * c.value_dim;
  std::vector<double> qd(static_cast<std::size_t>(nq)), kd(static_cast<std::size_t>(nk)),
      vd(static_cast<std::size_t>(nv));
  if (!c.extreme) {
    for (double& x : qd) x = normal(rng);
    for (double& x : kd) x = normal(rng);
  } else {
    // q = 16·s for one sign vector s; k_j = 16·s with f_j coordinates flipped: q·k_j = 256·(D − 2 f_j),
    // exact in every dtype, up to ±256·D (±10240 at D = 40). Odd kv heads draw f_j > D/2, so all
    // their logits are hugely negative (a softmax without the max subtracted would give 0/0).
    std::vector<double> s(static_cast<std::size_t>(c.head_dim));
    for (double& x : s) x = uniform(rng) < 0.5 ? -16.0 : 16.0;
    for (i64 r = 0; r < nq / c.head_dim; ++r)
      for (i64 d = 0; d < c.head_dim; ++d)
        qd[static_cast<std::size_t>(r * c.head_dim + d)] = s[static_cast<std::size_t>(d)];
    for (i64 r = 0; r < nk / c.head_dim; ++r) {
      const i64 kv_head = (r / c.kv_len) % c.kv_heads;
      const i64 lo = kv_head % 2 == 1 ? c.head_dim / 2 + 1 : 0;
      const i64 flips = lo + static_cast<i64>(uniform(rng) * static_cast<double>(c.head_dim - lo + 1));
      for (i64 d = 0; d < c.head_dim; ++d)
        kd[static_cast<std::size_t>(r * c.head_dim + d)] = (d < flips ? -1.0 : 1.0) * s[static_cast<std::size_t>(d)];
    }
  }
  for (double& x : vd) x = normal(rng);
  auto store = [](std::vector<double>& d, std::vector<T>& t) {
    t.resize(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) {
      t[i] = to_storage<T>(d[i]);
      d[i] = from_storage(t[i]);  // the oracle sees exactly the kernel's inputs
    }
  };
  store(qd, p.q);
  store(kd, p.k);
  store(vd, p.v);

  rudnn::reference::AttentionExtra mask_x, bias_x;
  if (c.mask != Extra::None) {
    i64 nb, nh;
    extra_geometry(c.mask, c, nb, nh, p.mask_bs, p.mask_hs);
    p.mask.resize(static_cast<std::size_t>(nb * nh * c.q_len * c.kv_len));
    for (u8& m : p.mask) m = uniform(rng) < 0.3 ? static_cast<u8>(1 + static_cast<int>(uniform(rng) * 254)) : 0;
    if (c.empty_rows)  // every third mask row (at least one) excludes all its keys
      for (i64 r = 0; r < nb * nh * c.q_len; r += 3)
        std::fill_n(p.mask.begin() + r * c.kv_len, c.kv_len, static_cast<u8>(1));
    mask_x.batch = nb;
    mask_x.heads = nh;
    mask_x.values.assign(p.mask.begin(), p.mask.end());
  }
  if (c.bias != Extra::None) {
    i64 nb, nh;
    extra_geometry(c.bias, c, nb, nh, p.bias_bs, p.bias_hs);
    const std::size_t n = static_cast<std::size_t>(nb * nh * c.q_len * c.kv_len);
    p.bias_f.resize(n);
    p.bias_t.resize(n);
    bias_x.batch = nb;
    bias_x.heads = nh;
    bias_x.values.resize(n);
    // With extreme logits the bias is a multiple of 64: any FP32 kernel rounds logits of ~1600 to
    // ~1e-4, so keys within rounding distance of each other would make F32's 1e-5 bound a test of
    // luck; gaps of 64 (or exact ties) keep the reference outcome sharp.
    std::uniform_int_distribution<int> steps(-2, 2);
    for (std::size_t i = 0; i < n; ++i) {
      const double b = c.extreme ? 64.0 * steps(rng) : 2.0 * normal(rng);
      p.bias_f[i] = static_cast<float>(b);
      p.bias_t[i] = to_storage<T>(b);
      bias_x.values[i] = c.bias_in_t ? from_storage(p.bias_t[i]) : static_cast<double>(p.bias_f[i]);
    }
  }
  rudnn::reference::AttentionShape shape{c.batch, c.q_heads, c.kv_heads, c.q_len, c.kv_len, c.head_dim, c.value_dim};
  p.expected = rudnn::reference::attention(qd, kd, vd, shape, mask_x, bias_x, p.scale, c.causal);

  // Rows that keep no key (causal and mask), found independently of the oracle.
  p.empty_row.assign(static_cast<std::size_t>(c.batch * c.q_heads * c.q_len), 0);
  for (i64 b = 0; b < c.batch; ++b)
    for (i64 h = 0; h < c.q_heads; ++h)
      for (i64 i = 0; i < c.q_len; ++i) {
        bool any = false;
        for (i64 j = 0; j < c.kv_len && !any; ++j) {
          if (c.causal && j > i + c.kv_len - c.q_len) continue;
          if (!p.mask.empty() &&
              p.mask[static_cast<std::size_t>(b * p.mask_bs + h * p.mask_hs + i * c.kv_len + j)] != 0)
            continue;
          any = true;
        }
        p.empty_row[static_cast<std::size_t>((b * c.q_heads + h) * c.q_len + i)] = any ? 0 : 1;
      }
  return p;
}

constexpr std::size_t kGuard = 64;  // output elements past the end that must stay NaN bytes

// Token-major views of a problem's q, k and v (`gap` spares after each row) and a poisoned
// token-major out (`out_gap` spares): what an engine passes (SPEC §13).
template <class T>
struct Views {
  TokenMajor q_at, k_at, v_at, out_at;
  std::vector<T> q, k, v, out;

  Views(const Problem<T>& p, i64 gap, i64 out_gap)
      : q_at{p.c.batch, p.c.q_heads, p.c.q_len, p.c.head_dim, gap},
        k_at{p.c.batch, p.c.kv_heads, p.c.kv_len, p.c.head_dim, gap},
        v_at{p.c.batch, p.c.kv_heads, p.c.kv_len, p.c.value_dim, gap + 1},
        out_at{p.c.batch, p.c.q_heads, p.c.q_len, p.c.value_dim, out_gap},
        q(q_at.scatter(p.q)),
        k(k_at.scatter(p.k)),
        v(v_at.scatter(p.v)),
        out(static_cast<std::size_t>(out_at.elems()) + kGuard) {  // kGuard spares past the last row
    std::memset(out.data(), 0xFF, out.size() * sizeof(T));
  }
};

// The kernels' argument list: pointers, then the twelve sizes, the scale and the (batch, head,
// token) strides of q, k, v and out. Every value lives here and argv points at it, as
// cuLaunchKernel's convention has it.
struct LaunchArgs {
  const void* ptr[7] = {};
  i64 sizes[12] = {};
  float scale = 0.0f;
  i64 strides[12] = {};
  void* argv[32] = {};
  int count = 0;

  // Dense q, k, v and out.
  template <class T>
  LaunchArgs(const Problem<T>& p, void* out, float* workspace) {
    const Case& c = p.c;
    const TokenMajor dense[4] = {{c.batch, c.q_heads, c.q_len, c.head_dim, 0},
                                 {c.batch, c.kv_heads, c.kv_len, c.head_dim, 0},
                                 {c.batch, c.kv_heads, c.kv_len, c.value_dim, 0},
                                 {c.batch, c.q_heads, c.q_len, c.value_dim, 0}};
    i64* s = strides;
    for (const TokenMajor& t : dense) {  // [B, H, T, X]: (H·T·X, T·X, X)
      *s++ = t.heads * t.len * t.dim;
      *s++ = t.len * t.dim;
      *s++ = t.dim;
    }
    fill(p, p.q.data(), p.k.data(), p.v.data(), out, workspace);
  }
  // The token-major views of `views`.
  template <class T>
  LaunchArgs(const Problem<T>& p, Views<T>& views, float* workspace) {
    i64* s = strides;
    for (const TokenMajor* t : {&views.q_at, &views.k_at, &views.v_at, &views.out_at})
      for (i64 x : t->strides()) *s++ = x;
    fill(p, views.q.data(), views.k.data(), views.v.data(), views.out.data(), workspace);
  }
  LaunchArgs(const LaunchArgs&) = delete;
  LaunchArgs& operator=(const LaunchArgs&) = delete;

 private:
  template <class T>
  void fill(const Problem<T>& p, const void* q, const void* k, const void* v, void* out, float* workspace) {
    ptr[0] = q;
    ptr[1] = k;
    ptr[2] = v;
    ptr[3] = p.mask_ptr();
    ptr[4] = p.bias_ptr();
    ptr[5] = out;
    ptr[6] = workspace;
    const Case& c = p.c;
    const i64 s[12] = {c.batch,     c.q_heads, c.kv_heads, c.q_len,   c.kv_len,  c.head_dim,
                       c.value_dim, p.mask_bs, p.mask_hs,  p.bias_bs, p.bias_hs, c.causal ? 1 : 0};
    std::copy(s, s + 12, sizes);
    scale = p.scale;
    const int pointers = workspace ? 7 : 6;
    for (int i = 0; i < pointers; ++i) argv[count++] = &ptr[i];
    for (i64& x : sizes) argv[count++] = &x;
    argv[count++] = &scale;
    for (i64& x : strides) argv[count++] = &x;
  }
};

// The twelve strides that follow the scale in a kernel's argument list (from argument `first`).
struct StrideArgs {
  void** a;
  int first;
  i64 operator[](int i) const { return *static_cast<const i64*>(a[first + i]); }
};

// Argument i of a kernel entry (emulator convention: args[i] points at the value).
template <class X>
X arg(void** a, int i) {
  if constexpr (std::is_pointer_v<X>) {
    return static_cast<X>(const_cast<void*>(*static_cast<const void* const*>(a[i])));
  } else {
    return *static_cast<const X*>(a[i]);
  }
}

// An output buffer of n elements plus the guard, all NaN bytes.
template <class T>
std::vector<T> poisoned(i64 n) {
  std::vector<T> out(static_cast<std::size_t>(n) + kGuard);
  std::memset(out.data(), 0xFF, out.size() * sizeof(T));
  return out;
}

template <class T>
void expect_guard_intact(const std::vector<T>& buf, i64 n, const char* what) {
  for (std::size_t i = static_cast<std::size_t>(n); i < buf.size(); ++i) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &buf[i], sizeof(T));
    for (unsigned char b : bytes) ASSERT_EQ(b, 0xFF) << what << ": written past the end at " << i;
  }
}

using rudnn::testing::relative_l2;

// Checks a finished output against the oracle; returns the output as doubles.
template <class T>
std::vector<double> check_output(const Problem<T>& p, const std::vector<T>& out) {
  const i64 n = p.out_elems();
  std::vector<double> got(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    got[static_cast<std::size_t>(i)] = from_storage(out[static_cast<std::size_t>(i)]);
    if (std::isnan(got[static_cast<std::size_t>(i)])) {
      ADD_FAILURE() << "output element " << i << " not written (or NaN)";
      return got;
    }
  }
  expect_guard_intact(out, n, "output");
  std::size_t empty = 0;
  for (std::size_t r = 0; r < p.empty_row.size(); ++r) {
    if (!p.empty_row[r]) continue;
    ++empty;
    for (i64 d = 0; d < p.c.value_dim; ++d)
      if (got[r * static_cast<std::size_t>(p.c.value_dim) + static_cast<std::size_t>(d)] != 0.0) {
        ADD_FAILURE() << "row " << r << " keeps no key but output[" << d
                      << "] = " << got[r * static_cast<std::size_t>(p.c.value_dim) + static_cast<std::size_t>(d)];
        return got;
      }
  }
  // A case whose rows are all empty would make the L2 check vacuous: none of the list is.
  EXPECT_LT(empty, p.empty_row.size()) << "every row empty: the case checks nothing";
  EXPECT_LE(relative_l2(got, p.expected), row_norm_test::tolerance<T>());
  return got;
}

// ---------------------------------------------------------------------------------------------------
// The Fallback sequence (attention/fallback.cuh), used by its own test and by the FlashUnit
// equivalence test.
namespace fb {
namespace A = rudnn::attention;
using host::Schedule;

template <class T, class MB, class BB, class P>
void scores_entry(void** a) {
  const StrideArgs s{a, 20};
  A::attention_scores<T, MB, BB, P>(arg<const T*>(a, 0), arg<const T*>(a, 1), arg<const void*>(a, 2),
                                    arg<const MB*>(a, 3), arg<const BB*>(a, 4), arg<void*>(a, 5), arg<float*>(a, 6),
                                    arg<i64>(a, 7), arg<i64>(a, 8), arg<i64>(a, 9), arg<i64>(a, 10), arg<i64>(a, 11),
                                    arg<i64>(a, 12), arg<i64>(a, 13), arg<i64>(a, 14), arg<i64>(a, 15), arg<i64>(a, 16),
                                    arg<i64>(a, 17), arg<i64>(a, 18), arg<float>(a, 19), s[0], s[1], s[2], s[3], s[4],
                                    s[5], s[6], s[7], s[8], s[9], s[10], s[11]);
}

template <class P>
void softmax_entry(void** a) {
  const StrideArgs s{a, 20};
  A::attention_softmax<P>(arg<const void*>(a, 0), arg<const void*>(a, 1), arg<const void*>(a, 2),
                          arg<const void*>(a, 3), arg<const void*>(a, 4), arg<void*>(a, 5), arg<float*>(a, 6),
                          arg<i64>(a, 7), arg<i64>(a, 8), arg<i64>(a, 9), arg<i64>(a, 10), arg<i64>(a, 11),
                          arg<i64>(a, 12), arg<i64>(a, 13), arg<i64>(a, 14), arg<i64>(a, 15), arg<i64>(a, 16),
                          arg<i64>(a, 17), arg<i64>(a, 18), arg<float>(a, 19), s[0], s[1], s[2], s[3], s[4], s[5], s[6],
                          s[7], s[8], s[9], s[10], s[11]);
}

template <class T, class P>
void weighted_sum_entry(void** a) {
  const StrideArgs s{a, 20};
  A::attention_weighted_sum<T, P>(arg<const void*>(a, 0), arg<const void*>(a, 1), arg<const T*>(a, 2),
                                  arg<const void*>(a, 3), arg<const void*>(a, 4), arg<T*>(a, 5),
                                  arg<const float*>(a, 6), arg<i64>(a, 7), arg<i64>(a, 8), arg<i64>(a, 9),
                                  arg<i64>(a, 10), arg<i64>(a, 11), arg<i64>(a, 12), arg<i64>(a, 13), arg<i64>(a, 14),
                                  arg<i64>(a, 15), arg<i64>(a, 16), arg<i64>(a, 17), arg<i64>(a, 18), arg<float>(a, 19),
                                  s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11]);
}

// One configuration of the three launches.
struct Variant {
  bool large_tile;   // FallbackTileLarge, else FallbackTileSmall
  int softmax;       // 0 warp, 1 narrow, 2 block
  bool void_extras;  // MB = BB = void (only for cases without mask and bias)
};

template <class T, class P>
host::ThreadEntry pick_scores(const Case& c, bool void_extras) {
  if (void_extras) return &scores_entry<T, void, void, P>;
  if (c.bias_in_t) return &scores_entry<T, u8, T, P>;
  return &scores_entry<T, u8, float, P>;
}

struct Launch {
  host::ThreadEntry entry;
  unsigned threads;
  std::size_t shared;
  i64 blocks;
};

template <class T>
std::vector<Launch> launches(const Case& c, const Variant& v) {
  using L = A::FallbackTileLarge;
  using S = A::FallbackTileSmall;
  const i64 panels = c.batch * c.kv_heads;
  const i64 panel_rows = c.q_heads / c.kv_heads * c.q_len;
  auto tiles = [&](int bm, int bn, i64 cols) { return panels * ((panel_rows + bm - 1) / bm) * ((cols + bn - 1) / bn); };
  std::vector<Launch> out;
  if (v.large_tile)
    out.push_back({pick_scores<T, L>(c, v.void_extras), L::kThreads, L::kSharedBytes, tiles(L::kBM, L::kBN, c.kv_len)});
  else
    out.push_back({pick_scores<T, S>(c, v.void_extras), S::kThreads, S::kSharedBytes, tiles(S::kBM, S::kBN, c.kv_len)});
  const i64 rows = c.batch * c.q_heads * c.q_len;
  switch (v.softmax) {
    case 0:
      out.push_back({&softmax_entry<A::FallbackSoftmaxWarp>, A::FallbackSoftmaxWarp::kThreads,
                     A::FallbackSoftmaxWarp::kSharedBytes,
                     (rows + A::FallbackSoftmaxWarp::kRPB - 1) / A::FallbackSoftmaxWarp::kRPB});
      break;
    case 1:
      out.push_back({&softmax_entry<A::FallbackSoftmaxNarrow>, A::FallbackSoftmaxNarrow::kThreads,
                     A::FallbackSoftmaxNarrow::kSharedBytes,
                     (rows + A::FallbackSoftmaxNarrow::kRPB - 1) / A::FallbackSoftmaxNarrow::kRPB});
      break;
    default:
      out.push_back({&softmax_entry<A::FallbackSoftmaxBlock>, A::FallbackSoftmaxBlock::kThreads,
                     A::FallbackSoftmaxBlock::kSharedBytes, rows});
  }
  if (v.large_tile)
    out.push_back({&weighted_sum_entry<T, L>, L::kThreads, L::kSharedBytes, tiles(L::kBM, L::kBN, c.value_dim)});
  else
    out.push_back({&weighted_sum_entry<T, S>, S::kThreads, S::kSharedBytes, tiles(S::kBM, S::kBN, c.value_dim)});
  return out;
}

// Runs the three Fallback kernels on p and returns the output (dense, with its guard). `grid_cap` > 0
// limits every launch to that many blocks; `views`: read and write those (its out is the result,
// gathered) rather than p's dense buffers. Checks the workspace was fully written and its guard kept.
template <class T>
std::vector<T> run_fallback(const Problem<T>& p, const Variant& v, host::ScheduleOptions order, unsigned grid_cap,
                            Views<T>* views = nullptr) {
  const Case& c = p.c;
  const i64 ws_elems = c.batch * c.q_heads * c.q_len * c.kv_len;
  std::vector<T> out = poisoned<T>(p.out_elems());
  std::vector<float> ws = poisoned<float>(ws_elems);
  std::optional<LaunchArgs> args;
  if (views)
    args.emplace(p, *views, ws.data());
  else
    args.emplace(p, out.data(), ws.data());
  const std::vector<Launch> ls = launches<T>(c, v);
  for (std::size_t s = 0; s < ls.size(); ++s) {
    const Launch& l = ls[s];
    unsigned blocks = static_cast<unsigned>(std::max<i64>(1, l.blocks));
    if (grid_cap) blocks = std::min(blocks, grid_cap);
    auto st = host::launch(l.entry, args->argv, {blocks, 1, 1}, {l.threads, 1, 1}, l.shared, order);
    if (!st.ok()) {
      ADD_FAILURE() << "launch " << s << ": " << st.error().message();
      return out;
    }
    if (s == 0)  // scores: every entry written (finite or −inf), nothing past the end
      for (i64 i = 0; i < ws_elems; ++i)
        if (std::isnan(ws[static_cast<std::size_t>(i)])) {
          ADD_FAILURE() << "score " << i << " not written";
          return out;
        }
    expect_guard_intact(ws, ws_elems, "workspace");
  }
  if (!views) return out;
  EXPECT_TRUE(views->out_at.spares_untouched(views->out)) << "wrote between the rows of the out view";
  return views->out_at.gather(views->out, kGuard);
}

}  // namespace fb

inline const char* name_of(host::Schedule s) {
  return s == host::Schedule::Forward ? "forward" : s == host::Schedule::Reverse ? "reverse" : "random";
}

}  // namespace attention_test
