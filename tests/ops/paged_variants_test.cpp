// Every registered paged attention and MLA tile (compiler::paged_variants with tensor cores and
// wgmma: the tensor-core tiles and each plain one that serves the call), and the backward's tensor-core and
// plain kernels, lowered with that config, built and run on the host emulation device — against
// the FP64 oracle and against each other (DESIGN §5: equivalence between variants). The public
// entries pick one tile per shape (the tensor-core one here); rudnn-precompile packs the others
// and a kernel_config in the IR selects them, so each must give the same answer.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "entry.h"
#include "jit.h"
#include "op_test_util.h"
#include "paged_test_util.h"
#include "reference/paged_attention.h"
#include "rudnn/compiler/paged_attention.h"

namespace rudnn {
namespace {

using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;
using testing::fresh_seed;
using testing::host_values;
using testing::relative_l2;
using testing::tolerance;

// The schedule as the kernels' four i32 operands (the page table padded to its longest row).
struct Schedule {
  Tensor table, lengths, sequence_ids, positions;
};

Schedule upload_schedule(const Layout& l) {
  std::size_t width = 1;
  for (const auto& t : l.tables) width = std::max(width, t.size());
  std::vector<double> table(l.tables.size() * width, 0.0);
  for (std::size_t s = 0; s < l.tables.size(); ++s)
    for (std::size_t j = 0; j < l.tables[s].size(); ++j) table[s * width + j] = l.tables[s][j];
  auto as_doubles = [](const std::vector<std::int64_t>& v) { return std::vector<double>(v.begin(), v.end()); };
  const Device host = Device::host();
  const auto sequences = static_cast<std::int64_t>(l.tables.size());
  return {testing::upload({sequences, static_cast<std::int64_t>(width)}, DType::I32, table, host),
          testing::upload({sequences}, DType::I32, as_doubles(l.lengths), host),
          testing::upload({l.queries()}, DType::I32, as_doubles(l.sequence_ids), host),
          testing::upload({l.queries()}, DType::I32, as_doubles(l.positions), host)};
}

contracts::PagedMetadata metadata_of(const Schedule& s) {
  return {ops::operand(s.table), ops::operand(s.lengths), ops::operand(s.sequence_ids), ops::operand(s.positions)};
}

// Lowers `request`, builds the plan and runs it with `slots` (the op's operands, then its results;
// the plan's temporaries come from the pool).
template <class Request, class Lower>
void run(const Request& request, Lower lower, std::initializer_list<const Tensor*> slots) {
  const Device host = Device::host();
  auto lowered = lower(request, ops::target_for(host));
  ASSERT_TRUE(lowered.ok()) << lowered.error().message();
  auto plan = ops::build_plan(host, *lowered);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  std::vector<ops::OperandView> views;
  for (const Tensor* t : slots) views.push_back({t->data(), &t->shape(), &t->strides()});
  auto st = ops::run_plan(**plan, Queue::default_queue(host), views);
  ASSERT_TRUE(st.ok()) << st.error().message();
}

std::string describe(const compiler::KernelConfig& c) { return c.to_string(); }

// Attention (GQA 32/8 at D = 128, and 8/2 at D = 64) and MLA (R = 128, P = 16 and 64, H = 8): decode rows,
// a chunked prefill and a run of a few rows, causal; every registered tile ≈ the oracle and ≈ the
// heuristic tile.
TEST(PagedVariants, EveryForwardTileMatchesTheOracle) {
  ops::set_poison_outputs(true);
  const Device host = Device::host();
  struct Case {
    contracts::PagedKind kind;
    std::int64_t hq, hkv, d, dv;  // MLA: H, 1, R + P, R
    DType dtype;
  };
  const Case kCases[] = {{contracts::PagedKind::Attention, 32, 8, 128, 128, DType::BF16},
                         {contracts::PagedKind::Attention, 8, 2, 64, 64, DType::F16},
                         {contracts::PagedKind::Mla, 8, 1, 144, 128, DType::BF16},
                         {contracts::PagedKind::Mla, 8, 1, 192, 128, DType::F16}};
  for (const Case& c : kCases) {
    const std::uint64_t seed = fresh_seed();
    const bool mla = c.kind == contracts::PagedKind::Mla;
    SCOPED_TRACE(
        fmt::format("seed={} {} Hq={} Hkv={} D={} Dv={}", seed, mla ? "MLA" : "attention", c.hq, c.hkv, c.d, c.dv));
    std::mt19937_64 rng(seed);
    Layout l = make_layout(rng, 16, {{70, Rows::Chunk, 20}, {33, Rows::Decode}, {41, Rows::Random, 4}}, false);
    const Schedule sched = upload_schedule(l);
    const std::int64_t rows = l.pages * l.page_size, queries = l.queries();
    const std::int64_t dk = mla ? c.dv : c.d, rope = mla ? c.d - c.dv : 0;
    auto values = [&](std::int64_t n) { return testing::random_values(sz(n), c.dtype, rng, -1, 1); };
    const auto q = values(queries * c.hq * dk), qp = values(queries * c.hq * rope);
    const auto k = values(rows * c.hkv * dk), kp = values(rows * rope), v = values(rows * c.hkv * c.dv);
    const Tensor tq = testing::upload({queries, c.hq, dk}, c.dtype, q, host);
    const Tensor tk = testing::upload({l.pages, l.page_size, c.hkv, dk}, c.dtype, k, host);
    const Tensor tv = mla ? tk : testing::upload({l.pages, l.page_size, c.hkv, c.dv}, c.dtype, v, host);
    const Tensor tqp = mla ? testing::upload({queries, c.hq, rope}, c.dtype, qp, host) : tq;
    const Tensor tkp = mla ? testing::upload({l.pages, l.page_size, 1, rope}, c.dtype, kp, host) : tk;
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    const auto want =
        mla ? reference::paged_mla(q, qp, k, kp, l.ref(), c.hq, dk, rope, static_cast<float>(scale), true)
            : reference::paged_attention(q, k, v, l.ref(), {c.hq, c.hkv, c.d, c.dv}, static_cast<float>(scale), true);

    contracts::PagedAttentionSignature sig;
    sig.kind = c.kind;
    sig.query = ops::operand(tq);
    sig.key = ops::operand(tk);
    if (mla) {
      sig.query_rope = ops::operand(tqp);
      sig.key_rope = ops::operand(tkp);
    } else {
      sig.value = ops::operand(tv);
    }
    sig.metadata = metadata_of(sched);
    sig.scale = scale;
    sig.causal = true;
    ASSERT_FALSE(contracts::check_paged_attention(sig).has_value()) << contracts::describe_call(sig);

    // The host emulation device has wgmma (sm_90a): the wgmma tile too, where it serves.
    const auto configs = compiler::paged_variants(sig, true, contracts::kLargestSharedBytes, true);
    ASSERT_GE(configs.size(), 2u) << "the tensor-core tile and at least one plain one";
    // Every case but MLA at R + Pr = 144 (not whole 64-column panels) has a wgmma tile.
    const bool wgmma_serves = !(mla && c.d == 144);
    EXPECT_EQ(std::ranges::count_if(
                  configs,
                  [](const compiler::KernelConfig& k) { return k.to_string().find("wgmma=1") != std::string::npos; }),
              wgmma_serves ? 1 : 0);
    std::optional<std::vector<double>> heuristic;
    for (const auto& config : configs) {
      SCOPED_TRACE(describe(config));
      const Tensor out = *Tensor::empty({queries, c.hq, c.dv}, c.dtype, host);
      const compiler::PagedAttentionRequest request{sig, config};
      if (mla)
        run(request, compiler::lower_paged_attention,
            {&tq, &tqp, &tk, &tkp, &sched.table, &sched.lengths, &sched.sequence_ids, &sched.positions, &out});
      else
        run(request, compiler::lower_paged_attention,
            {&tq, &tk, &tv, &sched.table, &sched.lengths, &sched.sequence_ids, &sched.positions, &out});
      const auto got = host_values(out);
      EXPECT_LE(relative_l2(got, want), 2 * tolerance(c.dtype));
      if (!heuristic) heuristic = got;  // paged_variants lists the heuristic tile first
      EXPECT_LE(relative_l2(got, *heuristic), 2 * tolerance(c.dtype)) << "against the heuristic tile";
    }
  }
}

// The backward's tensor-core kernel ({warps 4, tensor_core 1}) and the plain one ({warps 4}):
// GQA 4 at D = 64, causal; dq, dk and dv ≈ the oracle and ≈ each other.
TEST(PagedVariants, BackwardTensorCoreMatchesPlain) {
  ops::set_poison_outputs(true);
  const Device host = Device::host();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed={}", seed));
  std::mt19937_64 rng(seed);
  const std::int64_t hq = 8, hkv = 2, d = 64;
  const DType dtype = DType::F16;
  Layout l = make_layout(rng, 16, {{70, Rows::Chunk, 20}, {33, Rows::Decode}, {9, Rows::Random, 3}}, false);
  const Schedule sched = upload_schedule(l);
  const std::int64_t rows = l.pages * l.page_size, queries = l.queries();
  auto values = [&](std::int64_t n) { return testing::random_values(sz(n), dtype, rng, -1, 1); };
  const auto q = values(queries * hq * d), k = values(rows * hkv * d), v = values(rows * hkv * d),
             go = values(queries * hq * d);
  const Tensor tq = testing::upload({queries, hq, d}, dtype, q, host);
  const Tensor tk = testing::upload({l.pages, l.page_size, hkv, d}, dtype, k, host);
  const Tensor tv = testing::upload({l.pages, l.page_size, hkv, d}, dtype, v, host);
  const Tensor tgo = testing::upload({queries, hq, d}, dtype, go, host);
  const float scale = 0.125f;
  const auto want = reference::paged_attention_backward(q, k, v, go, l.ref(), {hq, hkv, d, d}, scale, true);

  contracts::PagedAttentionSignature forward;
  forward.kind = contracts::PagedKind::Attention;
  forward.query = ops::operand(tq);
  forward.key = ops::operand(tk);
  forward.value = ops::operand(tv);
  forward.metadata = metadata_of(sched);
  forward.scale = scale;
  forward.causal = true;
  const contracts::PagedBackwardSignature sig{forward, ops::operand(tgo)};
  ASSERT_FALSE(contracts::check_paged_backward(sig).has_value());

  std::vector<std::vector<double>> grads[2];
  for (int tensor_core = 0; tensor_core < 2; ++tensor_core) {
    SCOPED_TRACE(tensor_core ? "tensor cores" : "plain");
    const Tensor dq = *Tensor::empty(tq.shape(), dtype, host), dk = *Tensor::empty(tk.shape(), dtype, host),
                 dv = *Tensor::empty(tv.shape(), dtype, host);
    const compiler::PagedBackwardRequest request{
        sig, compiler::KernelConfig{{{"warps", 4}, {"tensor_core", tensor_core}}}, {}, {true, true, true, false}};
    run(request, compiler::lower_paged_backward,
        {&tq, &tk, &tv, &tgo, &sched.table, &sched.lengths, &sched.sequence_ids, &sched.positions, &dq, &dk, &dv});
    grads[tensor_core] = {host_values(dq), host_values(dk), host_values(dv)};
    const std::vector<double>* oracle[] = {&want.dq, &want.dk, &want.dv};
    for (int i = 0; i < 3; ++i)
      EXPECT_LE(relative_l2(grads[tensor_core][sz(i)], *oracle[i]), 3 * tolerance(dtype)) << i;
  }
  for (int i = 0; i < 3; ++i)
    EXPECT_LE(relative_l2(grads[1][sz(i)], grads[0][sz(i)]), 3 * tolerance(dtype)) << "gradient " << i;
}

}  // namespace
}  // namespace rudnn
