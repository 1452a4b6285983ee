// rudnn::attention::flash_attention_mma (FlashBlackboxAccelerated: tensor-core flash attention) and
// flash_attention_wgmma (the same on Hopper's warpgroup MMA, sm_90a) on the host emulation device
// vs the FP64 oracle rudnn::reference::attention, for f16 and bf16 and every supported head dim
// (mma.sync: 64, 96, 128, 256, each with its default policy; wgmma: 64, 128, 256): decode (Tq = 1),
// Tq = Tk, Tq < Tk and Tq > Tk with causal (bottom-right), odd lengths (1, 17, 100–150), GQA
// ratios 1/4/8, masks with fully masked rows, bias broadcast over batch / heads / none (float and
// T), extreme logits (±1e4 before scale), grids smaller than the launch formula; forward and
// reverse schedules; outputs poisoned (NaN bytes) before the run, guards past the end checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_views.h"
#include "host/emulator.h"
#include "reference/attention.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance / fresh_seed
#include "rudnn/attention/flash_mma.cuh"
#include "rudnn/attention/flash_wgmma.cuh"

namespace {

namespace host = rudnn::runtime::host;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;
using rudnn::u8;

template <int kD>
using DefaultPolicy = typename rudnn::attention::FlashMmaDefault<kD>::type;
// The default tile of kD with one query head per panel (kHeadPanels) or the group's.
template <int kD, bool kHeadPanels>
using PolicyOf = rudnn::attention::FlashMmaPolicy<kD, DefaultPolicy<kD>::kBM, DefaultPolicy<kD>::kBN, kHeadPanels>;

// The registered wgmma tiles: two warpgroups of 64 query rows, 128-key tiles (shared memory 82944
// bytes at D = 64, 164864 at D = 128), 32-key ones at D = 256 (132096 bytes).
template <int kD, bool kHeadPanels>
using WgmmaPolicyOf = rudnn::attention::FlashWgmmaPolicy<kD, 128, kD == 256 ? 32 : 128, kHeadPanels>;

// The two kernels under test: one contract, the policy family of each, and its instantiation.
struct MmaKernel {
  template <int kD, bool kHeadPanels>
  using Policy = PolicyOf<kD, kHeadPanels>;
  template <class T, class MB, class BB, class P>
  static constexpr auto fn = &rudnn::attention::flash_attention_mma<T, MB, BB, P>;
};
struct WgmmaKernel {
  template <int kD, bool kHeadPanels>
  using Policy = WgmmaPolicyOf<kD, kHeadPanels>;
  template <class T, class MB, class BB, class P>
  static constexpr auto fn = &rudnn::attention::flash_attention_wgmma<T, MB, BB, P>;
};

template <class T, class MB, class BB, class P, class K = MmaKernel>
void entry(void** a) {
  auto i = [&](int n) { return *static_cast<const i64*>(a[n]); };
  K::template fn<T, MB, BB, P>(
      *static_cast<const T* const*>(a[0]), *static_cast<const T* const*>(a[1]), *static_cast<const T* const*>(a[2]),
      *static_cast<const MB* const*>(a[3]), *static_cast<const BB* const*>(a[4]), *static_cast<T* const*>(a[5]), i(6),
      i(7), i(8), i(9), i(10), i(11), i(12), i(13), i(14), i(15), i(16), i(17), *static_cast<const float*>(a[18]),
      i(19), i(20), i(21), i(22), i(23), i(24), i(25), i(26), i(27), i(28), i(29), i(30));
}

constexpr std::size_t kGuard = 24;  // output elements past the end that must keep their 0xFF bytes

// Which [B or 1, Hq or 1] slices a mask or bias has.
enum class Extent { None, Full, OverBatch, OverHeads, Scalar };
const char* name_of(Extent e) {
  static const char* const kNames[] = {"none", "full", "bcast-batch", "bcast-heads", "bcast-both"};
  return kNames[static_cast<int>(e)];
}

struct Case {
  std::string name;
  i64 batch, q_heads, kv_heads, q_len, kv_len;
  bool causal = false;
  Extent mask = Extent::None;
  Extent bias = Extent::None;
  bool bias_in_t = false;      // bias element type T rather than float
  bool extras_kernel = false;  // the mask/bias build even though neither is given (null at run time)
  bool extreme = false;        // logits ±1e4 before scale
  unsigned grid = 0;           // 0: the launch formula
  bool token_major = false;    // q, k, v and out as [B, T, H, D] with 8 spares after each row (SPEC §13)
};

struct Extra {
  i64 batch = 1, heads = 1, batch_stride = 0, head_stride = 0;
  std::size_t size = 0;
};
Extra extent_of(Extent e, const Case& c) {
  Extra x;
  if (e == Extent::None) return x;
  x.batch = (e == Extent::Full || e == Extent::OverHeads) ? c.batch : 1;
  x.heads = (e == Extent::Full || e == Extent::OverBatch) ? c.q_heads : 1;
  x.head_stride = x.heads == 1 ? 0 : c.q_len * c.kv_len;
  x.batch_stride = x.batch == 1 ? 0 : x.heads * c.q_len * c.kv_len;
  x.size = static_cast<std::size_t>(x.batch * x.heads * c.q_len * c.kv_len);
  return x;
}

std::string describe(const Case& c, const char* type, int d, host::Schedule order, std::uint64_t seed) {
  return c.name + " " + type + " D=" + std::to_string(d) + " B=" + std::to_string(c.batch) +
         " Hq=" + std::to_string(c.q_heads) + " Hkv=" + std::to_string(c.kv_heads) + " Tq=" + std::to_string(c.q_len) +
         " Tk=" + std::to_string(c.kv_len) + (c.causal ? " causal" : "") + " mask=" + name_of(c.mask) +
         " bias=" + name_of(c.bias) + (c.bias_in_t ? "(T)" : "") + (c.extreme ? " extreme" : "") +
         " grid=" + std::to_string(c.grid) + (order == host::Schedule::Forward ? " forward" : " reverse") +
         " seed=" + std::to_string(seed);
}

template <class T>
struct Tensor {
  std::vector<T> stored;
  std::vector<double> value;  // exactly what the kernel reads
};

// Normal entries; with `extreme`, element 0 of every row is ±100 (random sign), so that every score
// q·k is ±1e4 + O(√D): rows mix keys at +1e4 and −1e4 (a naive exp overflows or underflows to 0/0),
// yet the softmax among the +1e4 keys stays well conditioned.
template <class T>
Tensor<T> random_rows(std::size_t rows, i64 d, bool extreme, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::bernoulli_distribution coin(0.5);
  Tensor<T> t{std::vector<T>(rows * static_cast<std::size_t>(d)),
              std::vector<double>(rows * static_cast<std::size_t>(d))};
  for (std::size_t i = 0; i < t.stored.size(); ++i) {
    const bool lead = extreme && i % static_cast<std::size_t>(d) == 0;
    t.stored[i] = to_storage<T>(lead ? (coin(rng) ? 100.0 : -100.0) : normal(rng));
    t.value[i] = from_storage(t.stored[i]);
  }
  return t;
}

template <class T, int kD, class MB, class BB, bool kHeadPanels, class K>
void run_one(const Case& c, const char* type, host::Schedule order) {
  using P = typename K::template Policy<kD, kHeadPanels>;
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(describe(c, type, kD, order, seed));
  std::mt19937_64 rng(seed);
  const auto sz = [](i64 v) { return static_cast<std::size_t>(v); };
  const i64 group = c.q_heads / c.kv_heads;

  auto q = random_rows<T>(sz(c.batch * c.q_heads * c.q_len), kD, c.extreme, rng);
  auto k = random_rows<T>(sz(c.batch * c.kv_heads * c.kv_len), kD, c.extreme, rng);
  auto v = random_rows<T>(sz(c.batch * c.kv_heads * c.kv_len), kD, false, rng);

  // Mask: each key excluded with probability 1/4, and every 5th query row (from row 2) of each
  // slice fully excluded.
  const Extra mx = extent_of(c.mask, c);
  std::vector<u8> mask(mx.size);
  rudnn::reference::AttentionExtra mask_ref;
  if (mx.size) {
    std::bernoulli_distribution drop(0.25);
    for (std::size_t e = 0; e < mask.size(); ++e) {
      const i64 row = static_cast<i64>(e) / c.kv_len % c.q_len;
      mask[e] = (row % 5 == 2 || drop(rng)) ? 1 : 0;
    }
    mask_ref = {std::vector<double>(mask.begin(), mask.end()), mx.batch, mx.heads};
  }
  const Extra bx = extent_of(c.bias, c);
  std::vector<float> bias_f(bx.size);
  std::vector<T> bias_t(bx.size);
  rudnn::reference::AttentionExtra bias_ref;
  if (bx.size) {
    std::normal_distribution<double> normal(0.0, 2.0);
    bias_ref = {std::vector<double>(bx.size), bx.batch, bx.heads};
    for (std::size_t e = 0; e < bx.size; ++e) {
      const double b = normal(rng);
      bias_f[e] = static_cast<float>(b);
      bias_t[e] = to_storage<T>(b);
      bias_ref.values[e] = c.bias_in_t ? from_storage(bias_t[e]) : static_cast<double>(bias_f[e]);
    }
  }

  const std::size_t n_out = sz(c.batch * c.q_heads * c.q_len * kD);
  std::vector<T> out(n_out + kGuard);
  std::memset(out.data(), 0xFF, out.size() * sizeof(T));
  // Dense, or token-major with 8 spares after each row (the rows stay 16-byte aligned).
  const i64 gap = c.token_major ? 8 : 0;
  auto layout = [&](i64 heads, i64 len) {
    return c.token_major ? attention_test::TokenMajor{c.batch, heads, len, kD, gap}
                         : attention_test::TokenMajor{c.batch, heads, len, kD, 0};
  };
  const attention_test::TokenMajor q_at = layout(c.q_heads, c.q_len), kv_at = layout(c.kv_heads, c.kv_len);
  const std::vector<T> q_view = q_at.scatter(q.stored), k_view = kv_at.scatter(k.stored),
                       v_view = kv_at.scatter(v.stored);
  std::vector<T> out_view(sz(q_at.elems()) + kGuard);  // the guard: spares past the last row
  std::memset(out_view.data(), 0xFF, out_view.size() * sizeof(T));
  i64 strides[12];
  auto put = [&](int at, const attention_test::TokenMajor& t) {
    const auto s = t.strides();
    // A dense tensor's strides are (H·T·D, T·D, D); token-major ones (T·H·R, R, H·R), R = D + gap.
    strides[at] = s[0];
    strides[at + 1] = c.token_major ? s[1] : t.len * kD;
    strides[at + 2] = c.token_major ? s[2] : kD;
  };
  put(0, q_at);
  put(3, kv_at);
  put(6, kv_at);
  put(9, q_at);

  const T* a0 = c.token_major ? q_view.data() : q.stored.data();
  const T* a1 = c.token_major ? k_view.data() : k.stored.data();
  const T* a2 = c.token_major ? v_view.data() : v.stored.data();
  const MB* a3 = nullptr;
  const BB* a4 = nullptr;
  if constexpr (!std::is_void_v<MB>) a3 = mx.size ? mask.data() : nullptr;
  if constexpr (std::is_same_v<BB, float>) a4 = bx.size ? bias_f.data() : nullptr;
  if constexpr (std::is_same_v<BB, T>) a4 = bx.size ? bias_t.data() : nullptr;
  T* a5 = c.token_major ? out_view.data() : out.data();
  i64 sizes[12] = {c.batch, c.q_heads,       c.kv_heads,     c.q_len,         c.kv_len,       kD,
                   kD,      mx.batch_stride, mx.head_stride, bx.batch_stride, bx.head_stride, c.causal ? 1 : 0};
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kD)));
  void* args[31] = {&a0, &a1, &a2, &a3, &a4, &a5};
  for (int i = 0; i < 12; ++i) args[6 + i] = &sizes[i];
  args[18] = const_cast<float*>(&scale);
  for (int i = 0; i < 12; ++i) args[19 + i] = &strides[i];

  const i64 panel_heads = kHeadPanels ? 1 : group;
  const i64 m_blocks = (panel_heads * c.q_len + P::kBM - 1) / P::kBM;
  const unsigned formula = static_cast<unsigned>(c.batch * c.q_heads / panel_heads * m_blocks);
  const host::Dim3 grid{c.grid ? c.grid : formula, 1, 1};
  auto st = host::launch(&entry<T, MB, BB, P, K>, args, grid, {static_cast<unsigned>(P::kThreads), 1, 1},
                         static_cast<std::size_t>(P::kSharedBytes), {order, 0});
  ASSERT_TRUE(st.ok()) << st.error().message();
  if (c.token_major) {
    ASSERT_TRUE(q_at.spares_untouched(out_view)) << "wrote between the rows of the out view";
    out = q_at.gather(out_view, kGuard);
  }

  rudnn::reference::AttentionShape shape{c.batch, c.q_heads, c.kv_heads, c.q_len, c.kv_len, kD, kD};
  const auto want = rudnn::reference::attention(q.value, k.value, v.value, shape, mask_ref, bias_ref,
                                                static_cast<double>(scale), c.causal);

  double err2 = 0.0, ref2 = 0.0;
  int zero_rows = 0;
  for (i64 r = 0; r < c.batch * c.q_heads * c.q_len; ++r) {
    // A row the oracle leaves at exact zero had no kept key (random V never sums to exactly 0):
    // the kernel must write exact zeros there too.
    bool oracle_zero = true;
    for (i64 d = 0; d < kD; ++d) oracle_zero = oracle_zero && want[sz(r * kD + d)] == 0.0;
    zero_rows += oracle_zero;
    for (i64 d = 0; d < kD; ++d) {
      const std::size_t e = sz(r * kD + d);
      const double got = from_storage(out[e]);
      ASSERT_FALSE(std::isnan(got)) << "out row " << r << " col " << d << " not written (or NaN)";
      if (oracle_zero) ASSERT_EQ(got, 0.0) << "row " << r << " has no kept key but col " << d << " = " << got;
      err2 += (got - want[e]) * (got - want[e]);
      ref2 += want[e] * want[e];
    }
  }
  if (ref2 > 0) EXPECT_LE(std::sqrt(err2 / ref2), row_norm_test::tolerance<T>()) << "relative L2";
  for (std::size_t e = n_out; e < out.size(); ++e) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &out[e], sizeof(T));
    for (unsigned char byte : bytes) ASSERT_EQ(byte, 0xFF) << "wrote past the end at " << e;
  }
  // Cases built to have fully excluded rows must have produced some (the test checks what it says).
  if (c.mask != Extent::None || (c.causal && c.q_len > c.kv_len)) EXPECT_GT(zero_rows, 0) << "no fully excluded row";
}

template <class T, int kD, class K>
void run_case(const Case& c, const char* type, host::Schedule order) {
  const bool extras = c.extras_kernel || c.mask != Extent::None || c.bias != Extent::None;
  // Token-major heads with GQA and Tq > 1 are not Tq rows apart: one head per panel (as the
  // entry chooses, ops/attention.cpp).
  if (c.token_major && c.q_heads > c.kv_heads && c.q_len > 1) {
    if (!extras) return run_one<T, kD, void, void, true, K>(c, type, order);
    return run_one<T, kD, u8, float, true, K>(c, type, order);
  }
  if (!extras) return run_one<T, kD, void, void, false, K>(c, type, order);
  if (c.bias_in_t) return run_one<T, kD, u8, T, false, K>(c, type, order);
  run_one<T, kD, u8, float, false, K>(c, type, order);
}

// The shared list (small: the emulator runs every mma lane by lane).
std::vector<Case> shared_cases() {
  std::vector<Case> cs;
  cs.push_back({"decode-gqa4", 2, 8, 2, 1, 100});
  cs.push_back({"decode-gqa8-causal", 1, 8, 1, 1, 17, true});
  cs.push_back({"single-key", 2, 2, 2, 1, 1});
  cs.push_back({"square-causal", 1, 2, 2, 100, 100, true});
  cs.push_back({"square-17", 2, 4, 4, 17, 17});
  cs.push_back({"short-q-causal-gqa8", 1, 8, 1, 17, 150, true});
  cs.push_back({"long-q-causal-gqa4", 1, 4, 1, 100, 17, true});
  // Over 256 keys: three or more key tiles, so each K/V stage is refilled after it was read.
  cs.push_back({"long-kv-causal-gqa2", 1, 2, 1, 20, 300, true});
  Case m{"mask-bias-heads", 2, 4, 2, 17, 33};
  m.mask = Extent::Full;
  m.bias = Extent::OverBatch;
  cs.push_back(m);
  Case mb{"mask-bcast-bias-batch-causal", 2, 4, 4, 33, 70, true};
  mb.mask = Extent::Scalar;
  mb.bias = Extent::OverHeads;
  cs.push_back(mb);
  Case bt{"bias-full-T", 2, 2, 1, 40, 50};
  bt.bias = Extent::Full;
  bt.bias_in_t = true;
  cs.push_back(bt);
  Case nul{"runtime-absent-extras", 1, 4, 1, 30, 45, true};
  nul.extras_kernel = true;
  cs.push_back(nul);
  Case ex{"extreme-logits", 1, 2, 1, 60, 100};
  ex.extreme = true;
  cs.push_back(ex);
  Case exc{"extreme-logits-causal-mask", 1, 2, 2, 40, 100, true};
  exc.extreme = true;
  exc.mask = Extent::OverBatch;
  cs.push_back(exc);
  Case gs{"grid-stride", 2, 8, 2, 70, 40, true};
  gs.grid = 3;
  cs.push_back(gs);
  Case tm{"token-major-views-gqa4-causal-mask", 2, 8, 2, 37, 70, true};
  tm.token_major = true;
  tm.mask = Extent::Full;
  cs.push_back(tm);
  Case td{"token-major-views-decode-gqa2", 2, 4, 2, 1, 45};
  td.token_major = true;
  cs.push_back(td);
  Case tmha{"token-major-views-mha", 1, 2, 2, 70, 33, true};
  tmha.token_major = true;
  tmha.bias = Extent::OverBatch;
  cs.push_back(tmha);
  return cs;
}

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};

template <class T, int kD, class K = MmaKernel>
void run_shared(const char* type) {
  rudnn_emu_bind(host::emulator_api());
  for (const Case& c : shared_cases())
    for (auto order : kOrders) {
      run_case<T, kD, K>(c, type, order);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(AttentionFlashMmaTemplate, D64F16) { run_shared<rudnn::f16, 64>("f16"); }
TEST(AttentionFlashMmaTemplate, D64BF16) { run_shared<rudnn::bf16, 64>("bf16"); }
TEST(AttentionFlashMmaTemplate, D96F16) { run_shared<rudnn::f16, 96>("f16"); }
TEST(AttentionFlashMmaTemplate, D96BF16) { run_shared<rudnn::bf16, 96>("bf16"); }
TEST(AttentionFlashMmaTemplate, D128F16) { run_shared<rudnn::f16, 128>("f16"); }
TEST(AttentionFlashMmaTemplate, D128BF16) { run_shared<rudnn::bf16, 128>("bf16"); }
TEST(AttentionFlashMmaTemplate, D256F16) { run_shared<rudnn::f16, 256>("f16"); }
TEST(AttentionFlashMmaTemplate, D256BF16) { run_shared<rudnn::bf16, 256>("bf16"); }

// The wgmma kernel on every case of the mma.sync one (its tiles are larger: more of the cases fit
// one tile, and the key tails fall elsewhere).
TEST(AttentionFlashWgmmaTemplate, D64F16) { run_shared<rudnn::f16, 64, WgmmaKernel>("f16"); }
TEST(AttentionFlashWgmmaTemplate, D64BF16) { run_shared<rudnn::bf16, 64, WgmmaKernel>("bf16"); }
TEST(AttentionFlashWgmmaTemplate, D128F16) { run_shared<rudnn::f16, 128, WgmmaKernel>("f16"); }
TEST(AttentionFlashWgmmaTemplate, D128BF16) { run_shared<rudnn::bf16, 128, WgmmaKernel>("bf16"); }
TEST(AttentionFlashWgmmaTemplate, D256F16) { run_shared<rudnn::f16, 256, WgmmaKernel>("f16"); }
TEST(AttentionFlashWgmmaTemplate, D256BF16) { run_shared<rudnn::bf16, 256, WgmmaKernel>("bf16"); }

// A policy mismatch is a trap (reported by the emulator), not a wrong answer.
TEST(AttentionFlashMmaTemplate, HeadDimMismatchTraps) {
  rudnn_emu_bind(host::emulator_api());
  using P = DefaultPolicy<64>;
  std::vector<rudnn::bf16> buf(64 * 64 + 64);
  const rudnn::bf16* a0 = buf.data();
  const void* a3 = nullptr;
  rudnn::bf16* a5 = buf.data();
  i64 sizes[12] = {1, 1, 1, 1, 1, 32, 32, 0, 0, 0, 0, 0};
  float scale = 1.0f;
  i64 strides[12] = {32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32};
  void* args[31] = {&a0, &a0, &a0, &a3, &a3, &a5};
  for (int i = 0; i < 12; ++i) args[6 + i] = &sizes[i];
  args[18] = &scale;
  for (int i = 0; i < 12; ++i) args[19 + i] = &strides[i];
  auto st = host::launch(&entry<rudnn::bf16, void, void, P>, args, {1, 1, 1}, {P::kThreads, 1, 1},
                         static_cast<std::size_t>(P::kSharedBytes), {host::Schedule::Forward, 0});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("head_dim"), std::string::npos) << st.error().message();
}

// Layouts a build cannot serve trap rather than read the wrong rows: group panels over token-major
// heads (GQA, Tq = 2: heads 64 elements apart, tokens 128), and value rows 128 elements apart where
// the key's are 64 (the launcher passes 0 for an extent-1 dim's stride, so only stepped ones differ).
TEST(AttentionFlashMmaTemplate, LayoutMismatchTraps) {
  rudnn_emu_bind(host::emulator_api());
  using P = DefaultPolicy<64>;
  std::vector<rudnn::bf16> buf(8 * 64 * 64);
  const rudnn::bf16* a0 = buf.data();
  const void* a3 = nullptr;
  rudnn::bf16* a5 = buf.data() + 4 * 64 * 64;
  i64 sizes[12] = {1, 2, 1, 2, 2, 64, 64, 0, 0, 0, 0, 0};
  float scale = 1.0f;
  struct Layout {
    const char* message;
    i64 strides[12];  // q, k, v, out: (batch, head, token)
  };
  const Layout layouts[] = {
      {"Tq rows apart", {256, 64, 128, 128, 128, 64, 128, 128, 64, 256, 128, 64}},
      {"value strides", {256, 128, 64, 128, 128, 64, 128, 128, 128, 256, 128, 64}},
  };
  for (const Layout& l : layouts) {
    i64 strides[12];
    std::copy(std::begin(l.strides), std::end(l.strides), strides);
    void* args[31] = {&a0, &a0, &a0, &a3, &a3, &a5};
    for (int i = 0; i < 12; ++i) args[6 + i] = &sizes[i];
    args[18] = &scale;
    for (int i = 0; i < 12; ++i) args[19 + i] = &strides[i];
    auto st = host::launch(&entry<rudnn::bf16, void, void, P>, args, {1, 1, 1}, {P::kThreads, 1, 1},
                           static_cast<std::size_t>(P::kSharedBytes), {host::Schedule::Forward, 0});
    ASSERT_FALSE(st.ok()) << l.message;
    EXPECT_NE(st.error().message().find(l.message), std::string::npos) << st.error().message();
  }
}

}  // namespace
