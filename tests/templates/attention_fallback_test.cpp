// rudnn::attention Fallback kernels (attention/fallback.cuh: scores → softmax → weighted sum through
// an FP32 workspace) on the host emulation device vs the FP64 oracle, for f32, f16 and bf16: the shared
// case list (attention_unit_harness.h), D = Dv = 1024 on a tiny problem, every tile and softmax
// variant, both schedules (the reverse one with a 3-block grid, so the grid stride runs), outputs and
// workspace poisoned, guards past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "attention_unit_harness.h"
#include "rudnn/attention/fallback.cuh"

namespace {

namespace A = rudnn::attention;
namespace host = attention_test::host;
using attention_test::Case;
using attention_test::Extra;
using attention_test::fb::softmax_entry;
using attention_test::fb::Variant;
using host::Schedule;
using rudnn::i64;

template <class T>
void run_case(const Case& c, const Variant& v, Schedule order) {
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(attention_test::describe(c) + " tile=" + (v.large_tile ? "large" : "small") +
               " softmax=" + std::to_string(v.softmax) + (v.void_extras ? " MB=BB=void" : "") + " " +
               attention_test::name_of(order) + " seed=" + std::to_string(seed));
  const auto p = attention_test::make_problem<T>(c, seed);
  const auto out = attention_test::fb::run_fallback<T>(p, v, {order, 0}, order == Schedule::Reverse ? 3u : 0u);
  if (::testing::Test::HasFailure()) return;
  attention_test::check_output(p, out);
}

template <class T>
void shared_suite() {
  rudnn_emu_bind(host::emulator_api());
  int n = 0;
  for (const Case& c : attention_test::shared_cases())
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      const bool plain = c.mask == Extra::None && c.bias == Extra::None;
      const Variant v{n % 2 == 0, n % 3, plain && n % 2 == 1};
      ++n;
      run_case<T>(c, v, order);
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(AttentionFallbackTemplate, SharedCasesF32) { shared_suite<float>(); }
TEST(AttentionFallbackTemplate, SharedCasesF16) { shared_suite<rudnn::f16>(); }
TEST(AttentionFallbackTemplate, SharedCasesBF16) { shared_suite<rudnn::bf16>(); }

// Head dims up to 1024 (the Fallback contract's limit), and odd ones just below.
template <class T>
void wide_suite() {
  rudnn_emu_bind(host::emulator_api());
  const Case cases[] = {
      {"D=1024", 1, 2, 1, 3, 5, 1024, 1024, true, Extra::Full, Extra::OverBatch, false, true},
      {"D=1023 Dv=1001", 1, 2, 2, 2, 7, 1023, 1001, false, Extra::None, Extra::Full, true},
  };
  for (const Case& c : cases) {
    run_case<T>(c, {true, 2, false}, Schedule::Forward);
    run_case<T>(c, {false, 0, false}, Schedule::Reverse);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(AttentionFallbackTemplate, HeadDim1024F32) { wide_suite<float>(); }
TEST(AttentionFallbackTemplate, HeadDim1024F16) { wide_suite<rudnn::f16>(); }
TEST(AttentionFallbackTemplate, HeadDim1024BF16) { wide_suite<rudnn::bf16>(); }

// The softmax kernel alone on hand-made rows: all −inf (→ zeros), one kept key (→ exactly 1), huge
// finite values, and a row longer than a block's threads.
TEST(AttentionFallbackTemplate, SoftmaxRows) {
  rudnn_emu_bind(host::emulator_api());
  const float ninf = -std::numeric_limits<float>::infinity();
  const i64 tk = 300;
  std::vector<float> base(static_cast<std::size_t>(4 * tk));
  std::mt19937_64 rng(row_norm_test::fresh_seed());
  std::normal_distribution<double> normal(0.0, 3.0);
  for (i64 j = 0; j < tk; ++j) {
    base[static_cast<std::size_t>(j)] = ninf;                                                 // row 0: nothing kept
    base[static_cast<std::size_t>(tk + j)] = j == 7 ? 1e4f : ninf;                            // row 1: one key
    base[static_cast<std::size_t>(2 * tk + j)] = static_cast<float>(1e4 + 10 * normal(rng));  // row 2: huge logits
    base[static_cast<std::size_t>(3 * tk + j)] = j % 2 ? ninf : static_cast<float>(normal(rng));
  }
  auto run = [&](host::ThreadEntry entry, unsigned threads, std::size_t shared, unsigned blocks, Schedule order) {
    std::vector<float> ws = attention_test::poisoned<float>(4 * tk);
    std::copy(base.begin(), base.end(), ws.begin());
    const void* ptr[7] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, ws.data()};
    i64 sizes[12] = {1, 4, 4, 1, tk, 1, 1, 0, 0, 0, 0, 0};  // B=1, Hq=4, Tq=1: 4 rows of Tk
    float scale = 1.0f;
    i64 strides[12] = {};  // the softmax reads only the workspace
    void* argv[32];
    for (int i = 0; i < 7; ++i) argv[i] = &ptr[i];
    for (int i = 0; i < 12; ++i) argv[7 + i] = &sizes[i];
    argv[19] = &scale;
    for (int i = 0; i < 12; ++i) argv[20 + i] = &strides[i];
    auto st = host::launch(entry, argv, {blocks, 1, 1}, {threads, 1, 1}, shared, {order, 0});
    ASSERT_TRUE(st.ok()) << st.error().message();
    attention_test::expect_guard_intact(ws, 4 * tk, "workspace");
    for (i64 r = 0; r < 4; ++r) {
      const float* x = base.data() + r * tk;
      double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (i64 j = 0; j < tk; ++j) mx = std::max(mx, static_cast<double>(x[j]));
      for (i64 j = 0; j < tk; ++j) sum += x[j] == ninf ? 0.0 : std::exp(static_cast<double>(x[j]) - mx);
      for (i64 j = 0; j < tk; ++j) {
        const double want = r == 0 || x[j] == ninf ? 0.0 : std::exp(static_cast<double>(x[j]) - mx) / sum;
        const float got = ws[static_cast<std::size_t>(r * tk + j)];
        if (r <= 1 || x[j] == ninf)
          ASSERT_EQ(got, want) << "row " << r << " key " << j;
        else
          ASSERT_NEAR(got, want, 1e-6 + 1e-5 * want) << "row " << r << " key " << j;
      }
    }
  };
  for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
    SCOPED_TRACE(attention_test::name_of(order));
    run(&softmax_entry<A::FallbackSoftmaxWarp>, A::FallbackSoftmaxWarp::kThreads, 0, 1, order);
    run(&softmax_entry<A::FallbackSoftmaxNarrow>, A::FallbackSoftmaxNarrow::kThreads, 0, 1, order);
    run(&softmax_entry<A::FallbackSoftmaxBlock>, A::FallbackSoftmaxBlock::kThreads,
        A::FallbackSoftmaxBlock::kSharedBytes, order == Schedule::Forward ? 4u : 1u, order);
  }
}

}  // namespace
