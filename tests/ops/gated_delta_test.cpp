// The gated delta rule through the public entries (chunk_gated_delta_rule, gated_delta_rule) on the
// host emulation device against the FP64 recurrence (tests/reference/gated_delta.h): chunked =
// recurrent = oracle for chunk sizes 16/32/64, T = 1, T not a multiple of the chunk, K ≠ V, strong
// and no decay, beta 0 and 1, with and without an initial state; segment chaining; initial_state
// never written; the shared-memory bound read from the device's limit; every contract line of
// SPEC §7 rejected with nothing launched. Both thread orders, poisoned outputs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>

#include "contract_fixture.h"
#include "host/emulator.h"
#include "host/host_device.h"
#include "jit.h"
#include "op_test_util.h"
#include "reference/gated_delta.h"
#include "rudnn/gated_delta.h"
#include "rudnn/stats.h"

namespace rudnn {
namespace {

using runtime::host::Schedule;
using testing::fresh_seed;

using testing::host_values;

struct Problem {
  std::int64_t b, h, t, k, v;
  double decay_lo, decay_hi;  // log_decay ~ U(lo, hi) ≤ 0
  double beta_lo, beta_hi;
  bool with_state;
};

struct Inputs {
  std::vector<double> q, k, v, beta, g, s0;
  std::optional<gated_delta::GatedDeltaInput> holder;
  gated_delta::GatedDeltaInput& api() { return *holder; }
};

Inputs make(const Problem& p, DType dtype, std::mt19937_64& rng) {
  Inputs in;
  const double a = 1.0 / std::sqrt(static_cast<double>(p.k));  // roughly unit-norm keys and queries
  const auto n_qk = static_cast<std::size_t>(p.b * p.h * p.t * p.k),
             n_v = static_cast<std::size_t>(p.b * p.h * p.t * p.v);
  const auto n_t = static_cast<std::size_t>(p.b * p.h * p.t), n_s = static_cast<std::size_t>(p.b * p.h * p.k * p.v);
  in.q = testing::random_values(n_qk, dtype, rng, -a, a);
  in.k = testing::random_values(n_qk, dtype, rng, -a, a);
  in.v = testing::random_values(n_v, dtype, rng, -1, 1);
  in.beta = testing::random_values(n_t, dtype, rng, p.beta_lo, p.beta_hi);
  in.g = testing::random_values(n_t, dtype, rng, p.decay_lo, p.decay_hi);
  for (double& x : in.g) x = std::min(x, 0.0);
  if (p.with_state) in.s0 = testing::random_values(n_s, DType::F32, rng, -0.5, 0.5);
  const Device host = Device::host();
  in.holder = gated_delta::GatedDeltaInput{testing::upload({p.b, p.h, p.t, p.k}, dtype, in.q, host),
                                           testing::upload({p.b, p.h, p.t, p.k}, dtype, in.k, host),
                                           testing::upload({p.b, p.h, p.t, p.v}, dtype, in.v, host),
                                           testing::upload({p.b, p.h, p.t}, dtype, in.beta, host),
                                           testing::upload({p.b, p.h, p.t}, dtype, in.g, host),
                                           std::nullopt,
                                           0.75f};
  if (p.with_state) in.api().initial_state = testing::upload({p.b, p.h, p.k, p.v}, DType::F32, in.s0, host);
  return in;
}

class GatedDelta : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { ops::set_poison_outputs(true); }
  void TearDown() override { runtime::host::set_default_schedule({}); }
};

TEST_P(GatedDelta, ChunkedAndRecurrentMatchTheRecurrence) {
  const DType dtype = GetParam();
  const Problem problems[] = {
      {1, 2, 37, 16, 24, -0.5, 0.0, 0.0, 1.0, true},    // T not a multiple of any chunk, K ≠ V
      {2, 1, 1, 32, 8, -0.5, 0.0, 0.0, 1.0, false},     // T = 1, no initial state
      {1, 1, 40, 8, 40, -20.0, -15.0, 0.0, 1.0, true},  // strong decay
      {1, 1, 33, 16, 16, 0.0, 0.0, 1.0, 1.0, true},     // no decay, beta = 1
      {1, 1, 20, 16, 16, -0.3, 0.0, 0.0, 0.0, true},    // beta = 0: the state only decays
  };
  for (const Problem& p : problems) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("B={} H={} T={} K={} V={} decay=[{}, {}] beta=[{}, {}] state={} seed={}", p.b, p.h, p.t,
                             p.k, p.v, p.decay_lo, p.decay_hi, p.beta_lo, p.beta_hi, p.with_state, seed));
    std::mt19937_64 rng(seed);
    Inputs in = make(p, dtype, rng);
    auto want = reference::gated_delta(in.q, in.k, in.v, in.beta, in.g, in.s0, {p.b, p.h, p.t, p.k, p.v}, 0.75);
    const std::vector<double> s0_before = p.with_state ? host_values(*in.api().initial_state) : std::vector<double>{};
    for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
      runtime::host::set_default_schedule({order, seed});
      std::vector<Result<gated_delta::GatedDeltaOutput, GatedDeltaError>> runs;
      runs.push_back(gated_delta::gated_delta_rule(in.api()));
      for (std::int64_t c : {16, 32, 64}) runs.push_back(gated_delta::chunk_gated_delta_rule(in.api(), c));
      for (auto& r : runs) {
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(r->output.shape(), (Shape{p.b, p.h, p.t, p.v}));
        EXPECT_EQ(r->output.dtype(), dtype);
        EXPECT_EQ(r->final_state.dtype(), DType::F32);
        EXPECT_LE(testing::relative_l2(host_values(r->output), want.output), 2 * testing::tolerance(dtype));
        // The state is FP32 math over the same rounded inputs.
        EXPECT_LE(testing::relative_l2(host_values(r->final_state), want.final_state), 1e-4);
      }
      if (p.with_state) EXPECT_EQ(host_values(*in.api().initial_state), s0_before) << "initial_state was written";
    }
  }
}

// Issue 10 item 14: every log_decay, not only decays (≤ 0): positive steps, −inf (a full reset) and
// ordinary steps mixed, so that chunks the WY form cannot take (run step by step) and WY chunks
// hand the state to each other. The chunked entry equals the recurrence and the oracle.
TEST_P(GatedDelta, AnyLogDecay) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const Problem p{1, 2, 90, 16, 24, -0.5, 0.0, 0.0, 1.0, true};
  Inputs in = make(p, dtype, rng);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double& x : in.g) {
    const double r = u(rng);
    if (r < 0.04) x = -std::numeric_limits<double>::infinity();
    if (r > 0.9) x = 0.5 * r;
  }
  in.g = HostData::from_f64({static_cast<std::int64_t>(in.g.size())}, dtype, in.g).to_f64();  // as stored
  in.api().log_decay = testing::upload({p.b, p.h, p.t}, dtype, in.g, Device::host());
  auto want = reference::gated_delta(in.q, in.k, in.v, in.beta, in.g, in.s0, {p.b, p.h, p.t, p.k, p.v}, 0.75);
  for (Schedule order : {Schedule::Forward, Schedule::Reverse}) {
    runtime::host::set_default_schedule({order, seed});
    std::vector<Result<gated_delta::GatedDeltaOutput, GatedDeltaError>> runs;
    runs.push_back(gated_delta::gated_delta_rule(in.api()));
    for (std::int64_t c : {16, 32, 64}) runs.push_back(gated_delta::chunk_gated_delta_rule(in.api(), c));
    for (auto& r : runs) {
      ASSERT_TRUE(r.ok()) << r.error().message();
      EXPECT_LE(testing::relative_l2(host_values(r->output), want.output), 2 * testing::tolerance(dtype));
      EXPECT_LE(testing::relative_l2(host_values(r->final_state), want.final_state), 1e-4);
    }
  }
}

TEST_P(GatedDelta, SegmentsChain) {
  const DType dtype = GetParam();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const Problem p{1, 2, 45, 16, 16, -0.4, 0.0, 0.0, 1.0, true};
  Inputs in = make(p, dtype, rng);
  auto whole = gated_delta::chunk_gated_delta_rule(in.api(), 16);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  // [0, 19) chunked, then [19, 45) token by token from its final state.
  const std::int64_t t0 = 19;
  auto slice = [&](const std::vector<double>& x, std::int64_t width, std::int64_t from, std::int64_t to) {
    std::vector<double> out;
    for (std::int64_t bh = 0; bh < p.b * p.h; ++bh)
      out.insert(out.end(), x.begin() + (bh * p.t + from) * width, x.begin() + (bh * p.t + to) * width);
    return out;
  };
  auto part = [&](std::int64_t from, std::int64_t to, std::optional<Tensor> state) {
    const Device host = Device::host();
    const std::int64_t n = to - from;
    return gated_delta::GatedDeltaInput{testing::upload({p.b, p.h, n, p.k}, dtype, slice(in.q, p.k, from, to), host),
                                        testing::upload({p.b, p.h, n, p.k}, dtype, slice(in.k, p.k, from, to), host),
                                        testing::upload({p.b, p.h, n, p.v}, dtype, slice(in.v, p.v, from, to), host),
                                        testing::upload({p.b, p.h, n}, dtype, slice(in.beta, 1, from, to), host),
                                        testing::upload({p.b, p.h, n}, dtype, slice(in.g, 1, from, to), host),
                                        std::move(state),
                                        in.api().query_scale};
  };
  auto first = gated_delta::chunk_gated_delta_rule(part(0, t0, in.api().initial_state), 16);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = gated_delta::gated_delta_rule(part(t0, p.t, first->final_state));
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_LE(testing::relative_l2(host_values(second->final_state), host_values(whole->final_state)), 1e-5);
  const auto out = host_values(whole->output);
  EXPECT_LE(testing::relative_l2(host_values(first->output), slice(out, p.v, 0, t0)), 2 * testing::tolerance(dtype));
  EXPECT_LE(testing::relative_l2(host_values(second->output), slice(out, p.v, t0, p.t)), 2 * testing::tolerance(dtype));
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, GatedDelta, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(GatedDeltaLimits, ChunkBoundReadsTheDevicesSharedMemory) {
  std::mt19937_64 rng(fresh_seed());
  Inputs in = make({1, 1, 8, 16, 16, -0.1, 0.0, 0.0, 1.0, false}, DType::F32, rng);
  auto& info = runtime::host_device_info();
  const std::size_t saved = info.shared_memory_per_block_optin;
  info.shared_memory_per_block_optin = 16 * 1024;  // a small device
  const Stats before = stats();
  auto too_big = gated_delta::chunk_gated_delta_rule(in.api(), 64);         // 4·(64² + 64) = 16640 > 16384
  auto kernel_too_big = gated_delta::chunk_gated_delta_rule(in.api(), 48);  // passes SPEC's bound, not the kernel's
  auto fits = gated_delta::chunk_gated_delta_rule(in.api(), 16);
  info.shared_memory_per_block_optin = saved;
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().kind(), ErrorKind::InvalidValue);
  EXPECT_EQ(too_big.error().argument(), "chunk_size");
  ASSERT_FALSE(kernel_too_big.ok());
  EXPECT_EQ(kernel_too_big.error().kind(), ErrorKind::Unsupported) << kernel_too_big.error().message();
  ASSERT_TRUE(fits.ok()) << fits.error().message();
  EXPECT_EQ(stats().kernel_launches, before.kernel_launches + 1);
}

// --- every contract line: a typed error naming the argument, nothing compiled or launched ---

class GatedDeltaContract : public testing::ContractTest {};

TEST_F(GatedDeltaContract, EachLineRejected) {
  const DType f = DType::BF16;
  auto good = [&] {
    return gated_delta::GatedDeltaInput{t({1, 2, 8, 16}, f),
                                        t({1, 2, 8, 16}, f),
                                        t({1, 2, 8, 24}, f),
                                        t({1, 2, 8}, f),
                                        t({1, 2, 8}, f),
                                        t({1, 2, 16, 24}, DType::F32),
                                        1.0f};
  };
  auto expect = [&](auto edit, ErrorKind kind, const char* argument, std::int64_t chunk = 16) {
    auto in = good();
    edit(in);
    auto r = chunk != 0 ? gated_delta::chunk_gated_delta_rule(in, chunk) : gated_delta::gated_delta_rule(in);
    SCOPED_TRACE(argument);
    expect_rejected(r, kind, argument);
  };
  using I = gated_delta::GatedDeltaInput;
  expect([&](I& in) { in.query = t({1, 2, 8, 16}, DType::FP8E4M3); }, ErrorKind::QuantizedDType, "query");
  expect([&](I& in) { in.query = t({1, 2, 8, 16}, DType::I32); }, ErrorKind::UnsupportedDType, "query");
  expect([&](I& in) { in.query = t({2, 8, 16}, f); }, ErrorKind::ShapeMismatch, "query");
  expect([&](I& in) { in.query = t({1, 2, 8, 0}, f); }, ErrorKind::EmptyDimension, "query");
  expect(
      [&](I& in) {
        in.query = t({1, 2, 8, 512}, f);
        in.key = t({1, 2, 8, 512}, f);
      },
      ErrorKind::Unsupported, "query");
  expect([&](I& in) { in.key = t({1, 2, 8, 16}, DType::F16); }, ErrorKind::UnsupportedDType, "key");
  expect([&](I& in) { in.key = t({1, 2, 8, 8}, f); }, ErrorKind::ShapeMismatch, "key");
  expect([&](I& in) { in.value = t({1, 2, 8, 24}, DType::F32); }, ErrorKind::UnsupportedDType, "value");
  expect([&](I& in) { in.value = t({1, 2, 9, 24}, f); }, ErrorKind::ShapeMismatch, "value");
  expect([&](I& in) { in.value = t({1, 2, 8, 0}, f); }, ErrorKind::EmptyDimension, "value");
  expect([&](I& in) { in.value = t({1, 2, 8, 300}, f); }, ErrorKind::Unsupported, "value");
  expect([&](I& in) { in.beta = t({1, 2, 8}, DType::F16); }, ErrorKind::UnsupportedDType, "beta");
  expect([&](I& in) { in.beta = t({1, 2, 8}, DType::FP8E4M3); }, ErrorKind::QuantizedDType, "beta");
  expect([&](I& in) { in.beta = t({1, 2, 7}, f); }, ErrorKind::ShapeMismatch, "beta");
  expect([&](I& in) { in.log_decay = t({2, 8}, f); }, ErrorKind::ShapeMismatch, "log_decay");
  expect([&](I& in) { in.log_decay = t({1, 2, 8}, DType::F32); }, ErrorKind::UnsupportedDType, "log_decay");
  expect([&](I& in) { in.initial_state = t({1, 2, 16, 24}, f); }, ErrorKind::UnsupportedDType, "initial_state");
  expect([&](I& in) { in.initial_state = t({1, 2, 24, 16}, DType::F32); }, ErrorKind::ShapeMismatch, "initial_state");
  expect([&](I& in) { in.query_scale = std::numeric_limits<float>::infinity(); }, ErrorKind::InvalidValue,
         "query_scale");
  expect([&](I&) {}, ErrorKind::InvalidValue, "chunk_size", -4);
  expect([&](I&) {}, ErrorKind::InvalidValue, "chunk_size", 1 << 20);  // 4·(C² + C) beyond any device
  // Sizes whose 4·(C² + C) wraps to a small number (a hang once): rejected by the contract's bound.
  expect([&](I&) {}, ErrorKind::InvalidValue, "chunk_size", std::int64_t{1} << 62);
  expect([&](I&) {}, ErrorKind::InvalidValue, "chunk_size", std::numeric_limits<std::int64_t>::max());
  expect([&](I&) {}, ErrorKind::InvalidValue, "chunk_size", contracts::kMaxChunkSize + 1);
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect([&](I& in) { in.value = t({1, 2, 8, 24}, f, &q2.value()); }, ErrorKind::QueueMismatch, "value");
  auto zero = good();
  auto r = gated_delta::chunk_gated_delta_rule(zero, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().argument(), "chunk_size");
  const Stats after = stats();
  EXPECT_EQ(after.kernel_launches, before_.kernel_launches) << "a rejected call launched a kernel";
  EXPECT_EQ(after.jit_compiles, before_.jit_compiles);
}

// A device without mma.sync m16n8k16 (sm_75; the emulator made to report it): bf16 chunked calls run
// the plain-core tile (the tensor-core one would not compile there) and still match the oracle; the
// shared-memory bound uses the plain path's formula.
TEST(GatedDeltaArch, PlainCoresBeforeSm80) {
  ops::set_poison_outputs(true);
  auto& info = runtime::host_device_info();
  const std::string saved = info.arch;
  info.arch = "sm_75";
  const std::uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  // K 24, V 40, chunk 48: a plan key no other test builds (the plan cache does not key on the arch).
  const Problem p{1, 2, 50, 24, 40, -0.5, 0.0, 0.0, 1.0, true};
  Inputs in = make(p, DType::BF16, rng);
  auto r = gated_delta::chunk_gated_delta_rule(in.api(), 48);
  info.arch = saved;
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto want = reference::gated_delta(in.q, in.k, in.v, in.beta, in.g, in.s0, {p.b, p.h, p.t, p.k, p.v}, 0.75);
  EXPECT_LE(testing::relative_l2(host_values(r->output), want.output), 2 * testing::tolerance(DType::BF16)) << seed;
  EXPECT_LE(testing::relative_l2(host_values(r->final_state), want.final_state), 1e-4) << seed;
}

TEST(GatedDeltaEmpty, ZeroStepsCopyTheState) {
  ops::set_poison_outputs(true);
  std::mt19937_64 rng(fresh_seed());
  Inputs in = make({1, 2, 0, 8, 8, -0.1, 0.0, 0.0, 1.0, true}, DType::F32, rng);
  for (std::int64_t c : {0, 16}) {
    auto r = c ? gated_delta::chunk_gated_delta_rule(in.api(), c) : gated_delta::gated_delta_rule(in.api());
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->output.shape(), (Shape{1, 2, 0, 8}));
    EXPECT_EQ(host_values(r->final_state), in.s0);
  }
}

}  // namespace
}  // namespace rudnn
