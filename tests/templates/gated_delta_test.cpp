// rudnn::gated_delta::{gated_delta_recurrent, gated_delta_chunked} on the host emulation device
// against the FP64 recurrence (tests/reference/gated_delta.h), and against each other (DESIGN §5:
// chunked = recurrent). Outputs and final states start as NaN bytes and must be fully written;
// guards past their ends must stay untouched; initial_state must come back bit-identical. Every
// case runs with the forward schedule on the full grid and the reverse schedule on a 1–2 block
// grid (grid stride).
//
// Tolerances (DESIGN §5): relative L2 error vs the FP64 oracle, by the query dtype, for the output:
// F32 1e-5, F16 2e-3, BF16 1e-2 (the output is rounded to the query dtype: ≤ 2^-11 / 2^-9
// relative per element). The final state is always FP32 and computed in FP32 from the very values
// the oracle sees (inputs are rounded to their storage types first), so it is held to the F32
// bound 1e-5 whatever the input dtype. Keys and queries are L2-normalized rows (SPEC §7: the caller
// normalizes them; with β ≤ 1 the recurrence is then contractive and errors do not grow with T).
// The tensor-core policies (ChunkPolicy<…, true>, f16/bf16 only) are held to the same bounds, state
// included (chunk_mma.cuh: the state enters the MMAs as an exact-enough three-term split), against
// the oracle, the recurrence and the plain-core chunked kernel on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "host/emulator.h"
#include "reference/gated_delta.h"
#include "row_norm_harness.h"  // to_storage / from_storage / tolerance / fresh_seed
#include "rudnn/gated_delta/chunked.cuh"
#include "rudnn/gated_delta/recurrent.cuh"
#include "rudnn/gated_delta/unit_lower_inverse.cuh"

namespace {

namespace host = rudnn::runtime::host;
namespace gd = rudnn::gated_delta;
using row_norm_test::from_storage;
using row_norm_test::to_storage;
using rudnn::i64;

// Policies under test: the variants the integrator registers (all checked spill-free with NVRTC),
// and two one-warp policies for chunks longer than the block (C32x8, C32x16T; this test only).
using R64 = gd::RecurrentPolicy<4, 4>;   // K ≤ 64, 128 threads
using R128 = gd::RecurrentPolicy<4, 8>;  // K ≤ 128, 128 threads
using R256 = gd::RecurrentPolicy<8, 8>;  // K ≤ 256, 256 threads
using C128x32 = gd::ChunkPolicy<128, 32>;
using C256x32 = gd::ChunkPolicy<256, 32>;
using C256x64 = gd::ChunkPolicy<256, 64>;
using C128x32T = gd::ChunkPolicy<128, 32, true>;  // tensor cores (f16/bf16)
using C256x32T = gd::ChunkPolicy<256, 32, true>;
using C256x64T = gd::ChunkPolicy<256, 64, true>;
using C128x16T = gd::ChunkPolicy<128, 16, true>;  // 16-column slices (autotune candidates)
using C256x16T = gd::ChunkPolicy<256, 16, true>;
using C32x8 = gd::ChunkPolicy<32, 8>;  // one warp: chunks longer than the block (ChunkLongerThanTheBlock)
using C32x16T = gd::ChunkPolicy<32, 16, true>;

template <class T, class G, class P>
void recurrent_entry(void** a) {
  gd::gated_delta_recurrent<T, G, P>(
      *static_cast<const T* const*>(a[0]), *static_cast<const T* const*>(a[1]), *static_cast<const T* const*>(a[2]),
      *static_cast<const G* const*>(a[3]), *static_cast<const G* const*>(a[4]), *static_cast<const float* const*>(a[5]),
      *static_cast<T* const*>(a[6]), *static_cast<float* const*>(a[7]), *static_cast<const i64*>(a[8]),
      *static_cast<const i64*>(a[9]), *static_cast<const i64*>(a[10]), *static_cast<const i64*>(a[11]),
      *static_cast<const i64*>(a[12]), *static_cast<const float*>(a[13]));
}

template <class T, class G, class P>
void chunked_entry(void** a) {
  gd::gated_delta_chunked<T, G, P>(
      *static_cast<const T* const*>(a[0]), *static_cast<const T* const*>(a[1]), *static_cast<const T* const*>(a[2]),
      *static_cast<const G* const*>(a[3]), *static_cast<const G* const*>(a[4]), *static_cast<const float* const*>(a[5]),
      *static_cast<T* const*>(a[6]), *static_cast<float* const*>(a[7]), *static_cast<const i64*>(a[8]),
      *static_cast<const i64*>(a[9]), *static_cast<const i64*>(a[10]), *static_cast<const i64*>(a[11]),
      *static_cast<const i64*>(a[12]), *static_cast<const i64*>(a[13]), *static_cast<const float*>(a[14]));
}

using Shape = rudnn::reference::GatedDeltaShape;
// Random: log_decay in (−1, 0]; Strong: (−20, −19]; None: 0; Growth: [0, 0.05) (a positive log
// decay: every chunk runs step by step); Mixed: Random with ~4% −inf (a full reset) and ~4% positive
// steps, so chunks of both kinds alternate and hand the state to each other.
enum class Decay { Random, Strong, None, Growth, Mixed };
enum class Beta { Random, Zero, One };

struct Inputs {
  Shape shape;
  std::vector<double> q, k, v, beta, g, init;  // exactly the stored values; init empty = nullptr
  float scale;
};

// Scales of the random data: `magnitude` multiplies values and the initial state, `query_scale`
// the default query_scale (2/√K). The defaults give O(1) states and outputs.
struct Magnitudes {
  double values = 1.0, state = 1.0, query_scale = 1.0;
};

template <class T, class G>
struct Stored {
  std::vector<T> q, k, v;
  std::vector<G> beta, g;
  std::vector<float> init;
};

std::string describe(const Shape& s) {
  return "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.heads) + " T=" + std::to_string(s.seq) +
         " K=" + std::to_string(s.key_dim) + " V=" + std::to_string(s.value_dim);
}

template <class T, class G>
void make_inputs(const Shape& s, Decay decay, Beta beta_kind, bool with_init, std::uint64_t seed, Inputs& in,
                 Stored<T, G>& st, Magnitudes mag = {}) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const i64 rows = s.batch * s.heads * s.seq;
  in.shape = s;
  in.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.key_dim)) * 2.0 * mag.query_scale);
  auto fill_normalized = [&](std::vector<T>& dst, std::vector<double>& exact) {
    dst.resize(static_cast<std::size_t>(rows * s.key_dim));
    exact.resize(dst.size());
    std::vector<double> row(static_cast<std::size_t>(s.key_dim));
    for (i64 r = 0; r < rows; ++r) {
      double n2 = 0.0;
      for (double& x : row) n2 += (x = normal(rng)) * x;
      for (i64 i = 0; i < s.key_dim; ++i) {
        const std::size_t at = static_cast<std::size_t>(r * s.key_dim + i);
        dst[at] = to_storage<T>(row[static_cast<std::size_t>(i)] / std::sqrt(n2));
        exact[at] = from_storage(dst[at]);
      }
    }
  };
  fill_normalized(st.q, in.q);
  fill_normalized(st.k, in.k);
  st.v.resize(static_cast<std::size_t>(rows * s.value_dim));
  in.v.resize(st.v.size());
  for (std::size_t i = 0; i < st.v.size(); ++i)
    in.v[i] = from_storage(st.v[i] = to_storage<T>(mag.values * normal(rng)));
  st.beta.resize(static_cast<std::size_t>(rows));
  st.g.resize(st.beta.size());
  in.beta.resize(st.beta.size());
  in.g.resize(st.beta.size());
  for (std::size_t i = 0; i < st.beta.size(); ++i) {
    const double b = beta_kind == Beta::Zero ? 0.0 : beta_kind == Beta::One ? 1.0 : unit(rng);
    const double x = unit(rng);
    double g = decay == Decay::None ? 0.0 : decay == Decay::Strong ? -20.0 + x : decay == Decay::Growth ? 0.05 * x : -x;
    if (decay == Decay::Mixed && x < 0.04) g = -std::numeric_limits<double>::infinity();
    if (decay == Decay::Mixed && x > 0.96) g = 0.5 * x;
    in.beta[i] = from_storage(st.beta[i] = to_storage<G>(b));
    in.g[i] = from_storage(st.g[i] = to_storage<G>(g));
  }
  st.init.clear();
  in.init.clear();
  if (with_init) {
    st.init.resize(static_cast<std::size_t>(s.batch * s.heads * s.key_dim * s.value_dim));
    in.init.resize(st.init.size());
    for (std::size_t i = 0; i < st.init.size(); ++i)
      in.init[i] = st.init[i] = static_cast<float>(0.5 * mag.state * normal(rng));
  }
}

enum class Form { Recurrent, Chunked };
struct Launch {
  Form form;
  int chunk;    // chunked only
  int variant;  // chunked: 0 = <128,32>, 1 = <256,32>, 2 = <256,64>; 3..5 the same with tensor cores;
                // 6, 7 = <128,16>, <256,16> tensor cores; 8 = <32,8>, 9 = <32,16> tensor cores
  host::Schedule order;
};

std::string describe(const Launch& l) {
  std::string s = l.form == Form::Recurrent
                      ? "recurrent"
                      : "chunked C=" + std::to_string(l.chunk) + " variant=" + std::to_string(l.variant);
  return s + (l.order == host::Schedule::Forward ? " forward" : " reverse");
}

struct Result {
  std::vector<double> out, state;
};

constexpr std::size_t kGuard = 32;

template <class T, class G>
host::ThreadEntry recurrent_kernel(i64 k, int& threads, std::size_t& shared) {
  auto pick = [&](auto policy) {
    using P = decltype(policy);
    threads = P::kThreads;
    shared = P::kSharedBytes;
    return &recurrent_entry<T, G, P>;
  };
  if (k <= 64) return pick(R64{});
  if (k <= 128) return pick(R128{});
  return pick(R256{});
}

template <class T, class G>
host::ThreadEntry chunked_kernel(int variant, i64 chunk, i64 k, int& threads, std::size_t& shared, int& columns) {
  auto pick = [&](auto policy) {
    using P = decltype(policy);
    threads = P::kThreadsV;
    columns = P::kBV;
    shared = static_cast<std::size_t>(P::shared_bytes(chunk, k));
    return &chunked_entry<T, G, P>;
  };
  if constexpr (sizeof(T) == 2) {
    if (variant == 3) return pick(C128x32T{});
    if (variant == 4) return pick(C256x32T{});
    if (variant == 5) return pick(C256x64T{});
    if (variant == 6) return pick(C128x16T{});
    if (variant == 7) return pick(C256x16T{});
    if (variant == 9) return pick(C32x16T{});
  }
  if (variant == 8) return pick(C32x8{});
  if (variant == 0) return pick(C128x32{});
  if (variant == 1) return pick(C256x32{});
  EXPECT_EQ(variant, 2) << "no chunked variant " << variant << " for this type";
  return pick(C256x64{});
}

// The first of variants first, first+1, first+2 (mod 3, within its group of three: plain 0..2,
// tensor cores 3..5) whose shared memory fits the limit for this chunk and K.
template <class T, class G>
int fitting_variant(int first, int chunk, i64 k) {
  const int group = first / 3 * 3;
  for (int tries = 0; tries < 3; ++tries) {
    const int v = group + (first - group + tries) % 3;
    int threads, columns;
    std::size_t shared;
    chunked_kernel<T, G>(v, chunk, k, threads, shared, columns);
    if (shared <= host::shared_memory_limit()) return v;
  }
  return first;  // run() reports that it does not fit
}

// Runs one launch. `alias`: final_state is written over a copy of initial_state (in place).
template <class T, class G>
void run(const Inputs& in, const Stored<T, G>& st, const Launch& l, Result& res, bool alias = false) {
  SCOPED_TRACE(describe(l));
  const Shape& s = in.shape;
  const std::size_t n_out = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.value_dim);
  const std::size_t n_state = static_cast<std::size_t>(s.batch * s.heads * s.key_dim * s.value_dim);
  std::vector<T> out(n_out + kGuard);
  std::memset(out.data(), 0xFF, out.size() * sizeof(T));  // NaN in every float format
  std::vector<float> state(n_state + kGuard);
  std::memset(state.data(), 0xFF, state.size() * sizeof(float));
  if (alias) std::copy(st.init.begin(), st.init.end(), state.begin());
  const std::vector<float> init_before = st.init;

  const T *q = st.q.data(), *k = st.k.data(), *v = st.v.data();
  const G *b = st.beta.data(), *g = st.g.data();
  const float* init = alias ? state.data() : st.init.empty() ? nullptr : st.init.data();
  T* o = out.data();
  float* fs = state.data();
  i64 batch = s.batch, heads = s.heads, seq = s.seq, kd = s.key_dim, vd = s.value_dim, chunk = l.chunk;
  float scale = in.scale;
  int threads = 0, columns = 32;
  std::size_t shared = 0;
  host::ThreadEntry kernel;
  std::vector<void*> args = {&q, &k, &v, &b, &g, &init, &o, &fs, &batch, &heads, &seq, &kd, &vd};
  if (l.form == Form::Recurrent) {
    kernel = recurrent_kernel<T, G>(s.key_dim, threads, shared);
  } else {
    kernel = chunked_kernel<T, G>(l.variant, l.chunk, s.key_dim, threads, shared, columns);
    args.push_back(&chunk);
  }
  args.push_back(&scale);
  ASSERT_LE(shared, host::shared_memory_limit()) << "variant does not fit this K and chunk";
  const i64 slices = (s.value_dim + columns - 1) / columns;
  const i64 items = s.batch * s.heads * slices;
  unsigned grid = static_cast<unsigned>(std::max<i64>(items, 1));
  if (l.order == host::Schedule::Reverse) grid = std::min(grid, items % 2 ? 1u : 2u);
  auto status =
      host::launch(kernel, args.data(), {grid, 1, 1}, {static_cast<unsigned>(threads), 1, 1}, shared, {l.order, 0});
  ASSERT_TRUE(status.ok()) << status.error().message();

  res.out.resize(n_out);
  res.state.resize(n_state);
  for (std::size_t i = 0; i < n_out; ++i) {
    res.out[i] = from_storage(out[i]);
    ASSERT_FALSE(std::isnan(res.out[i])) << "output " << i << " not written";
  }
  for (std::size_t i = 0; i < n_state; ++i) {
    res.state[i] = state[i];
    ASSERT_FALSE(std::isnan(res.state[i])) << "final_state " << i << " not written";
  }
  for (std::size_t i = n_out; i < out.size(); ++i) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &out[i], sizeof(T));
    for (unsigned char byte : bytes) ASSERT_EQ(byte, 0xFF) << "output written past the end at " << i;
  }
  for (std::size_t i = n_state; i < state.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &state[i], 4);
    ASSERT_EQ(bits, 0xFFFFFFFFu) << "final_state written past the end at " << i;
  }
  ASSERT_EQ(0, std::memcmp(init_before.data(), st.init.data(), st.init.size() * sizeof(float)))
      << "initial_state modified";
}

template <class T>
void expect_close(const Result& got, const Result& want, const char* what) {
  ASSERT_EQ(got.out.size(), want.out.size());
  ASSERT_EQ(got.state.size(), want.state.size());
  EXPECT_LE(rudnn::testing::relative_l2(got.out, want.out), row_norm_test::tolerance<T>()) << what << ": output";
  EXPECT_LE(rudnn::testing::relative_l2(got.state, want.state), 1e-5) << what << ": final_state";
}

Result oracle(const Inputs& in) {
  auto r = rudnn::reference::gated_delta(in.q, in.k, in.v, in.beta, in.g, in.init, in.shape, in.scale);
  return {std::move(r.output), std::move(r.final_state)};
}

const host::Schedule kOrders[] = {host::Schedule::Forward, host::Schedule::Reverse};

template <class T, class G>
void check_inputs(const Inputs& in, const Stored<T, G>& st, const std::vector<int>& chunks, int first_variant);

// One problem through the recurrent kernel and the chunked kernel at each chunk size, both
// schedules; each against the oracle and every chunked result against the recurrent one. For f16
// and bf16 every chunk size also runs a tensor-core variant, checked against the oracle, the
// recurrence and the plain-core chunked result.
template <class T, class G = T>
void check_all(const Shape& s, Decay decay, Beta beta, bool with_init, std::vector<int> chunks, int first_variant = 0,
               Magnitudes mag = {}) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(describe(s) + " decay=" + std::to_string(static_cast<int>(decay)) +
               " beta=" + std::to_string(static_cast<int>(beta)) + " init=" + std::to_string(with_init) +
               " magnitudes=" + std::to_string(mag.values) + "/" + std::to_string(mag.state) + "/" +
               std::to_string(mag.query_scale) + " seed=" + std::to_string(seed) + " (RUDNN_TEST_SEED reproduces)");
  Inputs in;
  Stored<T, G> st;
  make_inputs<T, G>(s, decay, beta, with_init, seed, in, st, mag);
  check_inputs<T, G>(in, st, chunks, first_variant);
}

template <class T, class G>
void check_inputs(const Inputs& in, const Stored<T, G>& st, const std::vector<int>& chunks, int first_variant) {
  const Shape& s = in.shape;
  const Result want = oracle(in);
  int variant = first_variant;
  for (auto order : kOrders) {
    Result rec;
    run<T, G>(in, st, {Form::Recurrent, 0, 0, order}, rec);
    if (::testing::Test::HasFatalFailure()) return;
    expect_close<T>(rec, want, "recurrent vs oracle");
    for (int c : chunks) {
      // The first variant that fits the shared-memory limit, rotating through the variants.
      const Launch l{Form::Chunked, c, fitting_variant<T, G>(variant % 3, c, s.key_dim), order};
      Result chk;
      run<T, G>(in, st, l, chk);
      if (::testing::Test::HasFatalFailure()) return;
      SCOPED_TRACE(describe(l));
      expect_close<T>(chk, want, "chunked vs oracle");
      expect_close<T>(chk, rec, "chunked vs recurrent");
      if constexpr (sizeof(T) == 2) {
        const Launch tc{Form::Chunked, c, fitting_variant<T, G>(3 + (variant + 1) % 3, c, s.key_dim), order};
        Result mma;
        run<T, G>(in, st, tc, mma);
        if (::testing::Test::HasFatalFailure()) return;
        SCOPED_TRACE(describe(tc));
        expect_close<T>(mma, want, "tensor-core chunked vs oracle");
        expect_close<T>(mma, rec, "tensor-core chunked vs recurrent");
        expect_close<T>(mma, chk, "tensor-core chunked vs plain-core chunked");
      }
      variant = (variant + 1) % 3;
    }
  }
}

const std::vector<int> kChunks = {16, 32, 64};

template <class T>
void random_suite() {
  const Shape shapes[] = {
      {1, 1, 1, 16, 24},                        // T = 1
      {2, 3, 37, 32, 32},                       // T not a multiple of any chunk
      {1, 2, 70, 16, 24},                       // K ≠ V, V not a multiple of the slice
      {1, 1, 64, 64, 40},                       // T = one 64-chunk exactly
      {2, 1, 20, 128, 128}, {1, 1, 33, 24, 7},  // V % 4 ≠ 0 (scalar state/output path), K not a power of two
  };
  for (const Shape& s : shapes) {
    check_all<T>(s, Decay::Random, Beta::Random, true, kChunks);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(GatedDeltaTemplate, RandomF32) { random_suite<float>(); }
TEST(GatedDeltaTemplate, RandomF16) { random_suite<rudnn::f16>(); }
TEST(GatedDeltaTemplate, RandomBF16) { random_suite<rudnn::bf16>(); }

// beta/log_decay in FP32 while q/k/v are bf16 (the template takes either).
TEST(GatedDeltaTemplate, Bf16WithFloatGates) {
  check_all<rudnn::bf16, float>({2, 2, 45, 32, 48}, Decay::Random, Beta::Random, true, kChunks);
}

TEST(GatedDeltaTemplate, LargeDims) {
  check_all<rudnn::bf16>({1, 1, 3, 256, 256}, Decay::Random, Beta::Random, true, {16, 64});
  check_all<float>({1, 1, 5, 256, 16}, Decay::Random, Beta::Random, true, {16, 64});
  check_all<rudnn::f16>({1, 1, 4, 8, 256}, Decay::Random, Beta::Random, true, {16});
}

TEST(GatedDeltaTemplate, StrongAndNoDecay) {
  check_all<float>({1, 2, 41, 32, 32}, Decay::Strong, Beta::Random, true, kChunks);
  check_all<rudnn::bf16>({1, 2, 41, 32, 32}, Decay::Strong, Beta::Random, true, kChunks);
  check_all<float>({1, 2, 41, 32, 32}, Decay::None, Beta::Random, true, kChunks);
  check_all<rudnn::f16>({1, 2, 41, 32, 32}, Decay::None, Beta::Random, true, kChunks);
}

TEST(GatedDeltaTemplate, BetaZeroAndOne) {
  check_all<float>({1, 2, 29, 32, 16}, Decay::Random, Beta::Zero, true, kChunks);
  check_all<float>({1, 2, 29, 32, 16}, Decay::Random, Beta::One, true, kChunks);
  check_all<rudnn::bf16>({1, 2, 29, 32, 16}, Decay::None, Beta::One, true, kChunks);
}

TEST(GatedDeltaTemplate, NoInitialState) {
  check_all<float>({2, 1, 19, 16, 32}, Decay::Random, Beta::Random, false, kChunks);
}

// T = 0: final_state = initial_state, output untouched (nothing to write; guards checked).
TEST(GatedDeltaTemplate, EmptySequence) {
  check_all<float>({2, 2, 0, 16, 24}, Decay::Random, Beta::Random, true, {16});
  check_all<rudnn::bf16>({1, 1, 0, 32, 8}, Decay::Random, Beta::Random, false, {32});
}

// Running [0, t) and then [t, T) with the first final_state as the second initial_state equals
// running [0, T) (and the oracle).
template <class T>
void chaining(Form form, int chunk, int first_variant = 0) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  const Shape full{2, 1, 50, 32, 24};
  const i64 split = 21;
  SCOPED_TRACE(describe(full) + " split=" + std::to_string(split) + " chunk=" + std::to_string(chunk) +
               " seed=" + std::to_string(seed));
  Inputs in;
  Stored<T, T> st;
  make_inputs<T, T>(full, Decay::Random, Beta::Random, true, seed, in, st);
  const Result want = oracle(in);
  for (auto order : kOrders) {
    Result whole;
    run<T, T>(in, st, {form, chunk, first_variant, order}, whole);
    if (::testing::Test::HasFatalFailure()) return;
    // Segments: slice the [B, H, T, ·] tensors along T.
    Inputs seg[2];
    Stored<T, T> sst[2];
    const i64 bounds[3] = {0, split, full.seq};
    for (int p = 0; p < 2; ++p) {
      const i64 t0 = bounds[p], n = bounds[p + 1] - bounds[p];
      seg[p].shape = {full.batch, full.heads, n, full.key_dim, full.value_dim};
      seg[p].scale = in.scale;
      for (i64 bh = 0; bh < full.batch * full.heads; ++bh)
        for (i64 t = t0; t < t0 + n; ++t) {
          const i64 row = bh * full.seq + t;
          for (i64 i = 0; i < full.key_dim; ++i) {
            sst[p].q.push_back(st.q[static_cast<std::size_t>(row * full.key_dim + i)]);
            sst[p].k.push_back(st.k[static_cast<std::size_t>(row * full.key_dim + i)]);
          }
          for (i64 i = 0; i < full.value_dim; ++i)
            sst[p].v.push_back(st.v[static_cast<std::size_t>(row * full.value_dim + i)]);
          sst[p].beta.push_back(st.beta[static_cast<std::size_t>(row)]);
          sst[p].g.push_back(st.g[static_cast<std::size_t>(row)]);
        }
    }
    sst[0].init = st.init;
    Result first, second;
    run<T, T>(seg[0], sst[0], {form, chunk, first_variant + 1, order}, first);
    if (::testing::Test::HasFatalFailure()) return;
    sst[1].init.assign(first.state.begin(), first.state.end());  // exact: the state is FP32
    run<T, T>(seg[1], sst[1], {form, chunk, first_variant + 2, order}, second);
    if (::testing::Test::HasFatalFailure()) return;
    Result chained;
    chained.state = second.state;
    for (i64 bh = 0; bh < full.batch * full.heads; ++bh)
      for (int p = 0; p < 2; ++p) {
        const Result& part = p == 0 ? first : second;
        const i64 n = bounds[p + 1] - bounds[p];
        const auto begin = part.out.begin() + static_cast<std::ptrdiff_t>(bh * n * full.value_dim);
        chained.out.insert(chained.out.end(), begin, begin + static_cast<std::ptrdiff_t>(n * full.value_dim));
      }
    expect_close<T>(chained, whole, "chained vs whole");
    expect_close<T>(chained, want, "chained vs oracle");
  }
}

TEST(GatedDeltaTemplate, SegmentChainingRecurrent) { chaining<float>(Form::Recurrent, 0); }
TEST(GatedDeltaTemplate, SegmentChainingChunked) {
  chaining<float>(Form::Chunked, 16);
  chaining<rudnn::bf16>(Form::Chunked, 32);
  chaining<rudnn::bf16>(Form::Chunked, 64, 3);  // tensor cores
  chaining<rudnn::f16>(Form::Chunked, 16, 3);
}

// final_state may alias initial_state (documented): the in-place update matches the oracle.
TEST(GatedDeltaTemplate, InPlaceState) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  Inputs in;
  Stored<float, float> st;
  make_inputs<float, float>({2, 2, 23, 32, 40}, Decay::Random, Beta::Random, true, seed, in, st);
  const Result want = oracle(in);
  for (auto order : kOrders) {
    Result rec, chk;
    run<float, float>(in, st, {Form::Recurrent, 0, 0, order}, rec, true);
    if (::testing::Test::HasFatalFailure()) return;
    expect_close<float>(rec, want, "recurrent in place");
    run<float, float>(in, st, {Form::Chunked, 16, 0, order}, chk, true);
    if (::testing::Test::HasFatalFailure()) return;
    expect_close<float>(chk, want, "chunked in place");
  }
}

// Chunk sizes that are not multiples of 16: the tensor-core path pads the chunk's rows to 16 on
// chip (padded steps are no-ops); the plain path takes them as they are.
TEST(GatedDeltaTemplate, ChunksNotMultipleOf16) {
  check_all<rudnn::bf16>({2, 1, 53, 24, 40}, Decay::Random, Beta::Random, true, {1, 8, 24, 40});
  check_all<rudnn::f16>({1, 2, 37, 40, 16}, Decay::Random, Beta::Random, true, {5, 17, 48});
}

// The tensor-core path scales the state by a power of two before splitting it (f16 has a 5-bit
// exponent): states far beyond f16's range and far below its normal range keep the FP32 bound.
// (Unscaled, the first overflows to inf and the second loses bits to f16 subnormals.) No decay in
// the f16 cases, so that errors in the start state's products are not decayed away.
TEST(GatedDeltaTemplate, TensorCoreLargeState) {
  const Shape s{1, 2, 45, 32, 32};
  check_all<rudnn::f16>(s, Decay::None, Beta::Random, true, {16, 64}, 0, {1e3, 1e6, 1e-3});
  check_all<rudnn::bf16>(s, Decay::Random, Beta::Random, true, {32}, 0, {1e4, 1e8, 1e-4});
}
TEST(GatedDeltaTemplate, TensorCoreSmallState) {
  const Shape s{1, 2, 45, 32, 32};
  check_all<rudnn::f16>(s, Decay::None, Beta::Random, true, {16, 32}, 0, {1e-4, 1e-4, 10.0});
  check_all<rudnn::bf16>(s, Decay::None, Beta::One, true, {64}, 0, {1e-6, 1e-6, 1.0});
}

// Issue 10 item 14: log_decay that is not a decay (positive, −inf, both mixed with ordinary
// chunks). The WY form overflows (e^{γ}) or makes NaN (−inf − −inf) on these; such chunks run step by
// step, so the chunked kernels equal the recurrence and the oracle for every log_decay.
TEST(GatedDeltaTemplate, NonDecayingLogDecay) {
  check_all<float>({1, 2, 37, 32, 40}, Decay::Growth, Beta::Random, true, {16, 32});
  check_all<rudnn::bf16>({1, 1, 37, 16, 24}, Decay::Growth, Beta::Random, true, {16});
  check_all<float>({2, 1, 100, 16, 24}, Decay::Mixed, Beta::Random, true, kChunks);
  check_all<rudnn::f16>({1, 1, 100, 16, 24}, Decay::Mixed, Beta::Random, true, kChunks);
  check_all<rudnn::bf16, float>({1, 2, 100, 24, 40}, Decay::Mixed, Beta::Random, true, {16, 40});
}

// Chunks longer than the block (C = 64 on one warp): each thread checks several of a window's
// log_decay values, the first read a chunk ahead and the rest at the chunk's start (ChunkWalk).
// Placed: a full reset (−inf) at steps 40 and 114 of ordinary decays, each the only non-decay of
// its window and past its first 32 steps, so a check that reads only each thread's first value
// always puts −inf − (−inf) into the WY form. Then random resets and growth (Decay::Mixed).
TEST(GatedDeltaTemplate, ChunkLongerThanTheBlock) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  const Shape shape{1, 2, 150, 16, 24};
  auto check = [&](auto type, int variant, Decay decay) {
    using T = decltype(type);
    SCOPED_TRACE("variant=" + std::to_string(variant) + " decay=" + std::to_string(static_cast<int>(decay)));
    Inputs in;
    Stored<T, T> st;
    make_inputs<T, T>(shape, decay, Beta::Random, true, seed, in, st);
    if (decay == Decay::Random) {
      for (i64 row = 0; row < shape.batch * shape.heads; ++row) {
        for (i64 t : {40, 114}) {
          const auto at = static_cast<std::size_t>(row * shape.seq + t);
          st.g[at] = to_storage<T>(-std::numeric_limits<double>::infinity());
          in.g[at] = from_storage(st.g[at]);
        }
      }
    }
    const Result want = oracle(in);
    Result got;
    run<T, T>(in, st, {Form::Chunked, 64, variant, host::Schedule::Forward}, got);
    if (::testing::Test::HasFatalFailure()) return;
    expect_close<T>(got, want, "one-warp chunked vs oracle");
  };
  for (Decay decay : {Decay::Random, Decay::Mixed}) {
    check(float{}, 8, decay);
    check(rudnn::bf16{}, 8, decay);
    check(rudnn::bf16{}, 9, decay);  // tensor cores
  }
}

// The case: log_decay +1.5 at every step, keys cycling through the K = 2 unit vectors,
// β = 1. Each update replaces the state along its key, so the recurrence stays bounded
// (≤ e^{1.5}·|v|; a larger growth between resets would make the FP32 recurrence itself lose
// digits to the cancellation in v − Sᵀk), while the WY form's e^{γ_last} = e^{1.5·64} overflows
// FP32 for C = 64.
template <class T>
void growing_state_bounded() {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  const Shape s{1, 2, 150, 2, 24};
  Inputs in;
  Stored<T, T> st;
  make_inputs<T, T>(s, Decay::None, Beta::One, true, seed, in, st);
  for (i64 row = 0; row < s.batch * s.heads * s.seq; ++row) {
    const i64 t = row % s.seq;
    for (i64 i = 0; i < s.key_dim; ++i) {
      const std::size_t at = static_cast<std::size_t>(row * s.key_dim + i);
      st.k[at] = to_storage<T>(i == t % s.key_dim ? 1.0 : 0.0);
      in.k[at] = from_storage(st.k[at]);
    }
    st.g[static_cast<std::size_t>(row)] = to_storage<T>(1.5);
    in.g[static_cast<std::size_t>(row)] = 1.5;
  }
  check_inputs<T, T>(in, st, {16, 64}, 0);
}
TEST(GatedDeltaTemplate, PositiveLogDecayBoundedState) {
  growing_state_bounded<float>();
  growing_state_bounded<rudnn::bf16>();
}

// bf16 inputs of one shape (random decay and beta, an initial state) and the oracle's result.
struct Bf16Case {
  Inputs in;
  Stored<rudnn::bf16, rudnn::bf16> st;
  Result want;
};
Bf16Case bf16_case(const Shape& shape, std::uint64_t seed) {
  Bf16Case c;
  make_inputs<rudnn::bf16, rudnn::bf16>(shape, Decay::Random, Beta::Random, true, seed, c.in, c.st);
  c.want = oracle(c.in);
  return c;
}

// The tensor-core kernel updates final_state in place like the plain one.
TEST(GatedDeltaTemplate, TensorCoreInPlaceState) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  const Bf16Case c = bf16_case({2, 2, 23, 32, 40}, seed);
  for (auto order : kOrders) {
    Result chk;
    run<rudnn::bf16, rudnn::bf16>(c.in, c.st, {Form::Chunked, 16, 3, order}, chk, true);
    if (::testing::Test::HasFatalFailure()) return;
    expect_close<rudnn::bf16>(chk, c.want, "tensor-core chunked in place");
  }
}

// The 16-column tensor-core slices (variants 6, 7): V = 40 is two whole slices and a half one; chunk
// 16 and 64 (a partial last chunk), against the oracle, both schedules.
TEST(GatedDeltaTemplate, TensorCoreSixteenColumns) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  const Bf16Case c = bf16_case({2, 2, 71, 32, 40}, seed);
  for (int variant : {6, 7})
    for (int chunk : {16, 64})
      for (auto order : kOrders) {
        SCOPED_TRACE("variant " + std::to_string(variant) + " chunk " + std::to_string(chunk));
        Result got;
        run<rudnn::bf16, rudnn::bf16>(c.in, c.st, {Form::Chunked, chunk, variant, order}, got, false);
        if (::testing::Test::HasFatalFailure()) return;
        expect_close<rudnn::bf16>(got, c.want, "16-column tensor-core chunked");
      }
}

// unit_lower_inverse alone (the chunk's WY solve, blocked by 16): A [c][c] from global into shared
// memory, its strictly upper part (where T goes: the solve must never read it as A) and its
// diagonal (never read) NaN, the scratch poisoned with NaN; then the array back to global, T in
// its upper triangle. Args: a (in/out), c.
void inverse_entry(void** args) {
  float* a = *static_cast<float* const*>(args[0]);
  const int c = *static_cast<const int*>(args[1]);
  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  float* sa = rudnn::dynamic_shared<float>();
  float* scratch = sa + c * c;
  for (int e = tid; e < c * c; e += nthreads) sa[e] = a[e];
  for (int e = tid; e < rudnn::shared_memory::gated_delta_inverse_scratch(c); e += nthreads)
    scratch[e] = std::numeric_limits<float>::quiet_NaN();
  __syncthreads();
  gd::unit_lower_inverse(sa, scratch, c, tid, nthreads);
  __syncthreads();
  for (int e = tid; e < c * c; e += nthreads) a[e] = sa[e];
}

// Every T entry against the FP64 forward substitution (relative L2 ≤ 1e-5; the A entries are small
// enough that T stays O(1)), for chunk sizes around the 16-row blocks, block sizes below and above
// the chunk, every schedule (the solve has barriers inside). T lands transposed in A's upper
// triangle, every entry of it written; A's lower triangle and the diagonal keep their bits.
TEST(GatedDeltaTemplate, UnitLowerInverseBlocked) {
  rudnn_emu_bind(host::emulator_api());
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> lower(-0.3, 0.3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const host::Schedule orders[] = {host::Schedule::Forward, host::Schedule::Reverse, host::Schedule::Random};
  for (int c : {1, 2, 15, 16, 17, 31, 32, 33, 48, 50, 64}) {
    auto at = [c](int i, int j) { return static_cast<std::size_t>(i * c + j); };
    std::vector<float> a(static_cast<std::size_t>(c * c));
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < c; ++j) a[at(i, j)] = j < i ? static_cast<float>(lower(random)) : nan;
    // FP64 oracle: T[i][m] = −Σ_{m ≤ j < i} A[i][j]·T[j][m], T[m][m] = 1.
    std::vector<double> want(static_cast<std::size_t>(c * c), 0.0);
    for (int m = 0; m < c; ++m) {
      want[at(m, m)] = 1.0;
      for (int i = m + 1; i < c; ++i) {
        double x = 0.0;
        for (int j = m; j < i; ++j) x += a[at(i, j)] * want[at(j, m)];
        want[at(i, m)] = -x;
      }
    }
    for (unsigned threads : {32u, 96u, 256u}) {
      for (auto order : orders) {
        SCOPED_TRACE("c=" + std::to_string(c) + " threads=" + std::to_string(threads) +
                     " order=" + std::to_string(static_cast<int>(order)));
        std::vector<float> out = a;
        float* ptr = out.data();
        int cc = c;
        void* args[] = {&ptr, &cc};
        const auto bytes =
            sizeof(float) * static_cast<std::size_t>(c * c + rudnn::shared_memory::gated_delta_inverse_scratch(c));
        auto st = host::launch(&inverse_entry, args, {1, 1, 1}, {threads, 1, 1}, bytes, {order, seed});
        ASSERT_TRUE(st.ok()) << st.error().message();
        double err = 0.0, norm = static_cast<double>(c);  // the unit diagonal
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < i; ++j) {
            const float t = out[at(j, i)];  // T[i][j]
            ASSERT_TRUE(std::isfinite(t)) << "T[" << i << "][" << j << "] not written or read NaN";
            err += (t - want[at(i, j)]) * (t - want[at(i, j)]);
            norm += want[at(i, j)] * want[at(i, j)];
          }
        EXPECT_LE(std::sqrt(err / norm), 1e-5);
        for (int i = 0; i < c; ++i) {
          EXPECT_TRUE(std::isnan(out[at(i, i)])) << "diagonal " << i << " written";
          for (int j = 0; j < i; ++j) ASSERT_EQ(out[at(i, j)], a[at(i, j)]) << "A[" << i << "][" << j << "] changed";
        }
      }
    }
  }
}

}  // namespace
