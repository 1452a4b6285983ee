// The gated delta rule on a real GPU against the FP64 recurrence of tests/reference/gated_delta.h:
// chunk_gated_delta_rule (chunks 16/32/64, tails, many chunks) and gated_delta_rule (prefill-length
// and decode T = 1 from a state, the benchmark's B = 64 decode batch), K = V = 128 and K ≠ V,
// initial_state never written. Every test prints SKIP without a CUDA device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "../ops/op_test_util.h"
#include "gpu_test_util.h"
#include "reference/gated_delta.h"
#include "rudnn/gated_delta.h"

namespace rudnn {
namespace {

using testing::host_values;

class GatedDeltaOnGpu : public testing::GpuTest {};

struct Problem {
  std::int64_t b, h, t, k, v;
  bool with_state;
  std::vector<std::int64_t> chunks;  // chunk_gated_delta_rule sizes to run (gated_delta_rule always runs)
};

// Inputs as the benchmark draws them: q, k ~ U(±√(3/K)), v ~ U(−1, 1), log_decay ~ U(−0.5, 0),
// beta ~ U(0, 1), state ~ U(−0.5, 0.5); both entries against the oracle.
void check_problem(const Problem& p, DType dtype, const Device& device) {
  const std::uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(fmt::format("{} B={} H={} T={} K={} V={} state={} seed={}", dtype_name(dtype), p.b, p.h, p.t, p.k, p.v,
                           p.with_state, seed));
  std::mt19937_64 rng(seed);
  const double a = std::sqrt(3.0 / static_cast<double>(p.k));
  const auto n_qk = static_cast<std::size_t>(p.b * p.h * p.t * p.k),
             n_v = static_cast<std::size_t>(p.b * p.h * p.t * p.v);
  const auto n_t = static_cast<std::size_t>(p.b * p.h * p.t), n_s = static_cast<std::size_t>(p.b * p.h * p.k * p.v);
  auto q = testing::random_values(n_qk, dtype, rng, -a, a);
  auto k = testing::random_values(n_qk, dtype, rng, -a, a);
  auto v = testing::random_values(n_v, dtype, rng, -1, 1);
  auto beta = testing::random_values(n_t, dtype, rng, 0, 1);
  auto g = testing::random_values(n_t, dtype, rng, -0.5, 0);
  for (double& x : g) x = std::min(x, 0.0);
  std::vector<double> s0;
  if (p.with_state) s0 = testing::random_values(n_s, DType::F32, rng, -0.5, 0.5);
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.k));
  gated_delta::GatedDeltaInput in{testing::upload({p.b, p.h, p.t, p.k}, dtype, q, device),
                                  testing::upload({p.b, p.h, p.t, p.k}, dtype, k, device),
                                  testing::upload({p.b, p.h, p.t, p.v}, dtype, v, device),
                                  testing::upload({p.b, p.h, p.t}, dtype, beta, device),
                                  testing::upload({p.b, p.h, p.t}, dtype, g, device),
                                  std::nullopt,
                                  static_cast<float>(scale)};
  if (p.with_state) in.initial_state = testing::upload({p.b, p.h, p.k, p.v}, DType::F32, s0, device);
  const auto want = reference::gated_delta(q, k, v, beta, g, s0, {p.b, p.h, p.t, p.k, p.v},
                                           static_cast<double>(static_cast<float>(scale)));
  auto check = [&](Result<gated_delta::GatedDeltaOutput, GatedDeltaError> r, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->output.shape(), (Shape{p.b, p.h, p.t, p.v}));
    EXPECT_LE(testing::relative_l2(host_values(r->output), want.output), 2 * testing::tolerance(dtype));
    // FP32 state math over the same rounded inputs (bound as tests/ops/gated_delta_test.cpp).
    EXPECT_LE(testing::relative_l2(host_values(r->final_state), want.final_state), 1e-4);
  };
  check(gated_delta::gated_delta_rule(in), "gated_delta_rule");
  for (std::int64_t c : p.chunks) check(gated_delta::chunk_gated_delta_rule(in, c), fmt::format("chunk {}", c));
  if (p.with_state) {
    EXPECT_EQ(host_values(*in.initial_state), s0) << "initial_state was written";
  }
}

TEST_F(GatedDeltaOnGpu, BothEntriesMatchTheRecurrence) {
  const Problem problems[] = {
      {2, 4, 200, 128, 128, true, {16, 32, 64}},  // the benchmark's K = V = 128, a tail chunk
      {1, 2, 77, 64, 32, false, {16, 32, 64}},    // K ≠ V, no initial state
      {1, 1, 1000, 128, 128, true, {64}},         // 16 chunks: the state carried chunk to chunk
      {3, 2, 1, 128, 128, true, {64}},            // T = 1
  };
  for (DType dtype : {DType::BF16, DType::F32})
    for (const Problem& p : problems) check_problem(p, dtype, device_);
}

// The decode benchmark's shape: B = 64 single steps from a state.
TEST_F(GatedDeltaOnGpu, DecodeBatchOfSingleSteps) {
  check_problem({64, 16, 1, 128, 128, true, {}}, DType::BF16, device_);
}

// Small, for compute-sanitizer (scripts/gpu-check runs *Sanitized* under memcheck and racecheck).
TEST_F(GatedDeltaOnGpu, SanitizedSmall) { check_problem({1, 2, 70, 64, 64, true, {32, 64}}, DType::BF16, device_); }

}  // namespace
}  // namespace rudnn
