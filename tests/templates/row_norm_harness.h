#pragma once
// Runs rudnn::norm::row_norm on the host emulation device and compares it with the FP64 oracles
// (tests/reference). Shared by the per-op test files, which instantiate the kernels they need.
#include <gtest/gtest.h>

#include "common/numerics.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "host/emulator.h"
#include "reference/normalization.h"
#include "rudnn/dtype.h"
#include "rudnn/norm/row_norm.cuh"

extern "C" void rudnn_emu_bind(const rudnn_emu_api* api);

namespace row_norm_test {

namespace host = rudnn::runtime::host;
using rudnn::i64;

enum class Op { LayerNorm, RmsNorm, Softmax };

// The kernel entry the emulator calls in every thread: args[i] points at parameter i's value,
// as the CUDA launch convention has it.
template <class OpT, class T, int kTpr, int kRpb, int kWidth>
void entry(void** args) {
  rudnn::norm::row_norm<OpT, T, rudnn::norm::RowPolicy<kTpr, kRpb, kWidth>>(
      *static_cast<const T* const*>(args[0]), *static_cast<const float* const*>(args[1]),
      *static_cast<const float* const*>(args[2]), *static_cast<T* const*>(args[3]), *static_cast<const i64*>(args[4]),
      *static_cast<const i64*>(args[5]), *static_cast<const float*>(args[6]), *static_cast<const i64*>(args[7]),
      *static_cast<const i64*>(args[8]));
}

template <class OpT, class T, int kTpr, int kRpb>
host::ThreadEntry pick_width(int width) {
  switch (width) {
    case 1: return &entry<OpT, T, kTpr, kRpb, 1>;
    case 2: return &entry<OpT, T, kTpr, kRpb, 2>;
    case 4: return &entry<OpT, T, kTpr, kRpb, 4>;
    case 8:
      if constexpr (sizeof(T) == 2) return &entry<OpT, T, kTpr, kRpb, 8>;
      return nullptr;
  }
  return nullptr;
}

// The geometries under test: one warp per row with 4 rows per block (warp-only reduction, rows
// past the end inside a block), 4 warps per row with 2 rows per block, and 32 warps per row.
struct Geometry {
  int threads_per_row, rows_per_block;
};
inline constexpr Geometry kGeometries[] = {{32, 4}, {128, 2}, {1024, 1}};

template <class OpT, class T>
host::ThreadEntry pick(Geometry g, int width) {
  if (g.threads_per_row == 32 && g.rows_per_block == 4) return pick_width<OpT, T, 32, 4>(width);
  if (g.threads_per_row == 128 && g.rows_per_block == 2) return pick_width<OpT, T, 128, 2>(width);
  if (g.threads_per_row == 1024 && g.rows_per_block == 1) return pick_width<OpT, T, 1024, 1>(width);
  return nullptr;
}

// Storage conversions of the test side come from core (rudnn/dtype.h), not from the templates.
template <class T>
T to_storage(double v) {
  if constexpr (sizeof(T) == 4) {
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<T, rudnn::f16>) {
    return T{rudnn::float_to_half_bits(static_cast<float>(v))};
  } else {
    return T{rudnn::float_to_bf16_bits(static_cast<float>(v))};
  }
}
template <class T>
double from_storage(T v) {
  if constexpr (sizeof(T) == 4) {
    return v;
  } else if constexpr (std::is_same_v<T, rudnn::f16>) {
    return rudnn::half_bits_to_float(v.bits);
  } else {
    return rudnn::bf16_bits_to_float(v.bits);
  }
}

template <class T>
double tolerance() {
  if constexpr (sizeof(T) == 4) return 1e-5;
  if constexpr (std::is_same_v<T, rudnn::f16>) return 2e-3;
  return 1e-2;
}

inline int widest_vector(i64 h, int element_bytes) {
  for (int w = 16 / element_bytes; w > 1; w /= 2)
    if (h % w == 0) return w;
  return 1;
}

struct Case {
  Op op;
  i64 rows, h;
  Geometry geometry;
  int width;
  host::ScheduleOptions schedule;
  unsigned grid;  // blocks; fewer than ceil(rows / rows_per_block) exercises the grid stride
  bool with_beta;
  std::uint64_t seed;
  i64 input_gap = 0, output_gap = 0;  // elements between rows: row-strided views (multiples of width)
};

inline std::string describe(const Case& c, const char* type) {
  static const char* const kOps[] = {"layer_norm", "rms_norm", "softmax"};
  return std::string(kOps[static_cast<int>(c.op)]) + " " + type + " rows=" + std::to_string(c.rows) +
         " h=" + std::to_string(c.h) + " threads_per_row=" + std::to_string(c.geometry.threads_per_row) +
         " rows_per_block=" + std::to_string(c.geometry.rows_per_block) + " vector_width=" + std::to_string(c.width) +
         " grid=" + std::to_string(c.grid) + (c.schedule.order == host::Schedule::Forward ? " forward" : " reverse") +
         (c.with_beta ? " beta" : "") + " gaps=" + std::to_string(c.input_gap) + "/" + std::to_string(c.output_gap) +
         " seed=" + std::to_string(c.seed);
}

// Runs one case and checks: launch succeeded, every output element written (the output starts
// as NaN bytes), nothing written past the end or into the gaps between strided rows, relative L2
// error within the dtype's bound. The input's gaps hold huge values a misplaced read would show.
template <class OpT, class T>
void run_case(const Case& c, const char* type) {
  SCOPED_TRACE(describe(c, type));
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const i64 n = c.rows * c.h;
  // layer_norm gets an offset so that a naive E[x^2] - E[x]^2 would lose digits. Not for short
  // rows: a few samples can sit very close together, and then the FP32 rounding of the mean
  // (~ulp(offset)) alone, which SPEC's FP32 statistics allow, exceeds the F32 bound relative to
  // their tiny spread (a rare but real flake seen with h = 3).
  const double offset = c.op == Op::LayerNorm && c.h >= 32 ? 4.0 : 0.0;
  const double scale = c.op == Op::Softmax ? 3.0 : 1.0;
  const i64 in_stride = c.h + c.input_gap, out_stride = c.h + c.output_gap;
  std::vector<T> x(static_cast<std::size_t>(c.rows * in_stride), to_storage<T>(1e4));
  std::vector<double> xd(static_cast<std::size_t>(n));
  for (i64 r = 0; r < c.rows; ++r)
    for (i64 j = 0; j < c.h; ++j) {
      T& v = x[static_cast<std::size_t>(r * in_stride + j)];
      v = to_storage<T>(offset + scale * normal(rng));
      xd[static_cast<std::size_t>(r * c.h + j)] = from_storage(v);  // the oracle sees exactly the kernel's input
    }
  std::vector<float> gamma(static_cast<std::size_t>(c.h)), beta(gamma.size());
  std::vector<double> gd(gamma.size()), bd;
  for (std::size_t i = 0; i < gamma.size(); ++i) {
    gamma[i] = static_cast<float>(1.0 + 0.5 * normal(rng));
    beta[i] = static_cast<float>(0.5 * normal(rng));
    gd[i] = gamma[i];
  }
  if (c.with_beta) bd.assign(beta.begin(), beta.end());

  constexpr std::size_t kGuard = 64;  // elements past the end that must stay untouched
  std::vector<T> y(static_cast<std::size_t>(c.rows * out_stride) + kGuard);
  std::memset(y.data(), 0xFF, y.size() * sizeof(T));  // NaN in every float format

  std::vector<double> expected;
  switch (c.op) {
    case Op::LayerNorm: expected = rudnn::reference::layer_norm(xd, c.rows, c.h, gd, bd, 1e-5); break;
    case Op::RmsNorm: expected = rudnn::reference::rms_norm(xd, c.rows, c.h, gd, 1e-5); break;
    case Op::Softmax: expected = rudnn::reference::softmax(xd, c.rows, c.h); break;
  }

  const T* in = x.data();
  const float* g = c.op == Op::Softmax ? nullptr : gamma.data();
  const float* b = c.op == Op::LayerNorm && c.with_beta ? beta.data() : nullptr;
  T* out = y.data();
  const i64 rows = c.rows, h = c.h;
  const float eps = 1e-5f;
  void* args[] = {&in,
                  &g,
                  &b,
                  &out,
                  const_cast<i64*>(&rows),
                  const_cast<i64*>(&h),
                  const_cast<float*>(&eps),
                  const_cast<i64*>(&in_stride),
                  const_cast<i64*>(&out_stride)};
  const host::ThreadEntry kernel = pick<OpT, T>(c.geometry, c.width);
  ASSERT_NE(kernel, nullptr);
  const int warps = c.geometry.threads_per_row / 32;
  const std::size_t shared =
      static_cast<std::size_t>(c.geometry.rows_per_block) * (warps > 1 ? warps : 1) * 2 * sizeof(float);
  const unsigned block = static_cast<unsigned>(c.geometry.threads_per_row * c.geometry.rows_per_block);
  auto status = host::launch(kernel, args, {c.grid, 1, 1}, {block, 1, 1}, shared, c.schedule);
  ASSERT_TRUE(status.ok()) << status.error().message();

  double err = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const i64 r = static_cast<i64>(i) / out_stride, j = static_cast<i64>(i) % out_stride;
    if (r < c.rows && j < c.h) {
      const double v = from_storage(y[i]);
      const double e = expected[static_cast<std::size_t>(r * c.h + j)];
      ASSERT_FALSE(std::isnan(v)) << "element " << i << " not written";
      err += (v - e) * (v - e);
      norm += e * e;
    } else {
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &y[i], sizeof(T));
      for (unsigned char byte : bytes) ASSERT_EQ(byte, 0xFF) << "wrote into a gap or past the end at " << i;
    }
  }
  const double rel = std::sqrt(err / (norm > 0 ? norm : 1.0));
  EXPECT_LE(rel, tolerance<T>());
}

using rudnn::testing::fresh_seed;

// Every h, row count, geometry and both schedules for one (op, dtype).
template <class OpT, class T>
void run_all(Op op, const char* type) {
  rudnn_emu_bind(host::emulator_api());
  const i64 hs[] = {1, 3, 31, 32, 33, 34, 36, 257, 4096, 4097};
  const i64 row_counts[] = {1, 3, 70};
  for (i64 h : hs)
    for (i64 rows : row_counts)
      for (const Geometry& g : kGeometries) {
        const int width = widest_vector(h, static_cast<int>(sizeof(T)));
        const unsigned blocks = static_cast<unsigned>((rows + g.rows_per_block - 1) / g.rows_per_block);
        // Forward with one block per row group; reverse with at most 2 blocks (grid stride).
        Case fwd{op, rows, h, g, width, {host::Schedule::Forward, 0}, blocks, true, fresh_seed()};
        run_case<OpT, T>(fwd, type);
        Case rev{op, rows, h, g, width, {host::Schedule::Reverse, 0}, blocks < 2 ? blocks : 2u, false, fresh_seed()};
        run_case<OpT, T>(rev, type);
        // Row-strided views (SPEC §13): gaps between input rows and between output rows.
        Case strided = fwd;
        strided.seed = fresh_seed();
        strided.input_gap = 3 * width;
        strided.output_gap = width;
        run_case<OpT, T>(strided, type);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

}  // namespace row_norm_test
