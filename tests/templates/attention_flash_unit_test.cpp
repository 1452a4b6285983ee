// rudnn::attention::flash_attention_unit (attention/flash_unit.cuh) on the host emulation device vs
// the FP64 oracle, for f32, f16 and bf16: the shared case list (attention_unit_harness.h) with every
// policy variant that fits, D = Dv = 256 on a tiny problem, the Fallback ≡ FlashUnit equivalence,
// and the value_dim guard. Both schedules (the reverse one with a 3-block grid, so the grid stride
// runs), outputs poisoned, guards past the end, fresh seeds.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attention_unit_harness.h"
#include "rudnn/attention/flash_unit.cuh"

namespace {

namespace A = rudnn::attention;
namespace host = attention_test::host;
using attention_test::arg;
using attention_test::Case;
using attention_test::Extra;
using attention_test::Problem;
using host::Schedule;
using rudnn::i64;
using rudnn::u8;

template <class T, class MB, class BB, class P>
void unit_entry(void** a) {
  const attention_test::StrideArgs s{a, 19};
  A::flash_attention_unit<T, MB, BB, P>(
      arg<const T*>(a, 0), arg<const T*>(a, 1), arg<const T*>(a, 2), arg<const MB*>(a, 3), arg<const BB*>(a, 4),
      arg<T*>(a, 5), arg<i64>(a, 6), arg<i64>(a, 7), arg<i64>(a, 8), arg<i64>(a, 9), arg<i64>(a, 10), arg<i64>(a, 11),
      arg<i64>(a, 12), arg<i64>(a, 13), arg<i64>(a, 14), arg<i64>(a, 15), arg<i64>(a, 16), arg<i64>(a, 17),
      arg<float>(a, 18), s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10], s[11]);
}

enum class Pol { Small, Medium, Large };
const char* name_of(Pol p) {
  static const char* const kNames[] = {"small", "medium", "large"};
  return kNames[static_cast<int>(p)];
}
int max_value_dim(Pol p) {
  switch (p) {
    case Pol::Small: return A::FlashUnitSmall::kMaxDv;
    case Pol::Medium: return A::FlashUnitMedium::kMaxDv;
    default: return A::FlashUnitLarge::kMaxDv;
  }
}

struct Variant {
  Pol policy;
  bool void_extras;  // MB = BB = void (only for cases without mask and bias)
};

template <class T, class P>
void launch_unit(const Problem<T>& p, const Variant& v, host::ScheduleOptions order, unsigned grid_cap,
                 std::vector<T>& out, attention_test::Views<T>* views) {
  const Case& c = p.c;
  host::ThreadEntry entry = v.void_extras ? &unit_entry<T, void, void, P>
                            : c.bias_in_t ? &unit_entry<T, u8, T, P>
                                          : &unit_entry<T, u8, float, P>;
  const i64 panel_rows = c.q_heads / c.kv_heads * c.q_len;
  const i64 tiles = c.batch * c.kv_heads * ((panel_rows + P::kBM - 1) / P::kBM);
  unsigned blocks = static_cast<unsigned>(tiles);
  if (grid_cap) blocks = std::min(blocks, grid_cap);
  std::optional<attention_test::LaunchArgs> args;
  if (views)
    args.emplace(p, *views, nullptr);
  else
    args.emplace(p, out.data(), nullptr);
  const auto shared = static_cast<std::size_t>(P::shared_bytes(c.head_dim, c.value_dim));
  auto st = host::launch(entry, args->argv, {blocks, 1, 1}, {static_cast<unsigned>(P::kThreads), 1, 1}, shared, order);
  ASSERT_TRUE(st.ok()) << st.error().message();
}

// The output (dense, with its guard); with `views` the kernel reads and writes those instead.
template <class T>
std::vector<T> run_unit(const Problem<T>& p, const Variant& v, host::ScheduleOptions order,
                        attention_test::Views<T>* views = nullptr) {
  std::vector<T> out = attention_test::poisoned<T>(p.out_elems());
  const unsigned cap = order.order == Schedule::Forward ? 0u : 3u;
  switch (v.policy) {
    case Pol::Small: launch_unit<T, A::FlashUnitSmall>(p, v, order, cap, out, views); break;
    case Pol::Medium: launch_unit<T, A::FlashUnitMedium>(p, v, order, cap, out, views); break;
    case Pol::Large: launch_unit<T, A::FlashUnitLarge>(p, v, order, cap, out, views); break;
  }
  if (!views) return out;
  EXPECT_TRUE(views->out_at.spares_untouched(views->out)) << "wrote between the rows of the out view";
  return views->out_at.gather(views->out, attention_test::kGuard);
}

std::string trace(const Case& c, const Variant& v, Schedule order, std::uint64_t seed) {
  return attention_test::describe(c) + " policy=" + name_of(v.policy) + (v.void_extras ? " MB=BB=void" : "") + " " +
         attention_test::name_of(order) + " seed=" + std::to_string(seed);
}

template <class T>
void run_case(const Case& c, const Variant& v, Schedule order) {
  const std::uint64_t seed = row_norm_test::fresh_seed();
  SCOPED_TRACE(trace(c, v, order, seed));
  const auto p = attention_test::make_problem<T>(c, seed);
  const auto out = run_unit<T>(p, v, {order, 0});
  if (::testing::Test::HasFailure()) return;
  attention_test::check_output(p, out);
}

// Every case with every policy whose kMaxValueDim covers Dv, both schedules.
template <class T>
void shared_suite() {
  rudnn_emu_bind(host::emulator_api());
  int n = 0;
  for (const Case& c : attention_test::shared_cases())
    for (Pol pol : {Pol::Small, Pol::Medium, Pol::Large}) {
      if (c.value_dim > max_value_dim(pol)) continue;
      const bool plain = c.mask == Extra::None && c.bias == Extra::None;
      for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
        run_case<T>(c, {pol, plain && n++ % 2 == 0}, order);
        if (::testing::Test::HasFailure()) return;
      }
    }
}

TEST(AttentionFlashUnitTemplate, SharedCasesF32) { shared_suite<float>(); }
TEST(AttentionFlashUnitTemplate, SharedCasesF16) { shared_suite<rudnn::f16>(); }
TEST(AttentionFlashUnitTemplate, SharedCasesBF16) { shared_suite<rudnn::bf16>(); }

// The largest head dims (D = Dv = 256) and odd ones below, on tiny problems.
template <class T>
void wide_suite() {
  rudnn_emu_bind(host::emulator_api());
  const Case cases[] = {
      {"D=256", 1, 2, 1, 9, 40, 256, 256, true, Extra::Full, Extra::OverHeads, false, true},
      {"D=255 Dv=129", 2, 2, 2, 3, 35, 255, 129, false, Extra::None, Extra::Full, true},
      {"D=256 Dv=128 decode", 1, 4, 1, 1, 33, 256, 128, false, Extra::OverBatch, Extra::None, false, true},
  };
  for (const Case& c : cases)
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      run_case<T>(c, {Pol::Large, false}, order);
      if (c.value_dim <= 128) run_case<T>(c, {Pol::Medium, false}, order);
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(AttentionFlashUnitTemplate, HeadDim256F32) { wide_suite<float>(); }
TEST(AttentionFlashUnitTemplate, HeadDim256F16) { wide_suite<rudnn::f16>(); }
TEST(AttentionFlashUnitTemplate, HeadDim256BF16) { wide_suite<rudnn::bf16>(); }

// Fallback and FlashUnit on the same inputs agree with each other (and each with the oracle); the
// schedules cycle through forward, reverse and random (seeded from the case seed).
template <class T>
void equivalence_suite() {
  rudnn_emu_bind(host::emulator_api());
  const auto all = attention_test::shared_cases();
  const Case cases[] = {all[0], all[3], all[4], all[7], all[8], all[10]};
  int n = 0;
  for (const Case& c : cases) {
    const std::uint64_t seed = row_norm_test::fresh_seed();
    const Schedule order = n % 3 == 0 ? Schedule::Forward : n % 3 == 1 ? Schedule::Reverse : Schedule::Random;
    const Variant uv{c.value_dim <= 64 ? Pol::Small : Pol::Medium, false};
    const attention_test::fb::Variant fv{n % 2 == 0, n % 3, false};
    ++n;
    SCOPED_TRACE(trace(c, uv, order, seed) + " vs fallback");
    const auto p = attention_test::make_problem<T>(c, seed);
    const auto fused = run_unit<T>(p, uv, {order, seed});
    const auto fallback =
        attention_test::fb::run_fallback<T>(p, fv, {order, seed}, order == Schedule::Forward ? 0u : 3u);
    if (::testing::Test::HasFailure()) return;
    const auto a = attention_test::check_output(p, fused);
    const auto b = attention_test::check_output(p, fallback);
    if (::testing::Test::HasFailure()) return;
    EXPECT_LE(attention_test::relative_l2(a, b), row_norm_test::tolerance<T>()) << "FlashUnit vs Fallback";
  }
}

TEST(AttentionFlashUnitTemplate, MatchesFallbackF32) { equivalence_suite<float>(); }
TEST(AttentionFlashUnitTemplate, MatchesFallbackF16) { equivalence_suite<rudnn::f16>(); }
TEST(AttentionFlashUnitTemplate, MatchesFallbackBF16) { equivalence_suite<rudnn::bf16>(); }

// Token-major views with spares after every row (SPEC §13: an engine's buffers): the same bits as the
// dense call, the spares untouched; and Fallback on the same views.
template <class T>
void views_suite() {
  rudnn_emu_bind(host::emulator_api());
  const auto all = attention_test::shared_cases();
  int n = 0;
  for (const Case& c : {all[0], all[2], all[4], all[9], all[10]}) {
    const std::uint64_t seed = row_norm_test::fresh_seed();
    const Schedule order = n % 2 == 0 ? Schedule::Forward : Schedule::Reverse;
    const Variant uv{c.value_dim <= 64 ? Pol::Small : Pol::Medium, false};
    SCOPED_TRACE(trace(c, uv, order, seed) + " token-major views");
    const auto p = attention_test::make_problem<T>(c, seed);
    attention_test::Views<T> views(p, 3 + n, 5);
    const auto strided = run_unit<T>(p, uv, {order, seed}, &views);
    const auto dense = run_unit<T>(p, uv, {order, seed});
    attention_test::Views<T> fallback_views(p, 1, 2);
    const auto fallback = attention_test::fb::run_fallback<T>(p, {n % 2 == 0, n % 3, false}, {order, seed},
                                                              order == Schedule::Forward ? 0u : 3u, &fallback_views);
    ++n;
    if (::testing::Test::HasFailure()) return;
    attention_test::check_output(p, strided);
    attention_test::check_output(p, fallback);
    ASSERT_EQ(0, std::memcmp(strided.data(), dense.data(), static_cast<std::size_t>(p.out_elems()) * sizeof(T)))
        << "FlashUnit on views differs from the dense call";
  }
}

TEST(AttentionFlashUnitTemplate, TokenMajorViewsF32) { views_suite<float>(); }
TEST(AttentionFlashUnitTemplate, TokenMajorViewsF16) { views_suite<rudnn::f16>(); }
TEST(AttentionFlashUnitTemplate, TokenMajorViewsBF16) { views_suite<rudnn::bf16>(); }

// A value dim past the policy's registers is refused (an emulator fault naming the trap), never
// silently truncated.
TEST(AttentionFlashUnitTemplate, ValueDimBeyondPolicyTraps) {
  rudnn_emu_bind(host::emulator_api());
  const Case c{"Dv past kMaxValueDim", 1, 1, 1, 2, 3, 8, 65};
  const auto p = attention_test::make_problem<float>(c, row_norm_test::fresh_seed());
  std::vector<float> out = attention_test::poisoned<float>(p.out_elems());
  attention_test::LaunchArgs args(p, out.data(), nullptr);
  auto st = host::launch(&unit_entry<float, u8, float, A::FlashUnitSmall>, args.argv, {1, 1, 1},
                         {A::FlashUnitSmall::kThreads, 1, 1},
                         static_cast<std::size_t>(A::FlashUnitSmall::shared_bytes(8, 65)), {Schedule::Forward, 0});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("kMaxValueDim"), std::string::npos) << st.error().message();
}

}  // namespace
