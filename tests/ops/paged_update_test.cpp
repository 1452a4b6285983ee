// DevicePlan::update (docs/paged_attention.md, "Updating a plan in place"): a new schedule written
// into the plan's own metadata buffers — the next decode step of a serving loop that replays CUDA
// graphs captured over the plan's calls. After an update, attention, the backward's dq and append
// through the plan (and through a copy made before it) give the same bits as through a plan
// uploaded fresh from the new schedule, also with a narrower table (padded); schedules that do not
// fit (page size, pages, sequences, query rows, a wider table) and an update during a capture are
// rejected naming `host` / the capture, and the plan keeps serving its old schedule bit for bit; an
// ordered workspace made before an update is rejected after it; append's conflict check follows the
// schedule.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "jit.h"
#include "op_test_util.h"
#include "paged_test_util.h"
#include "rudnn/paged_attention.h"
#include "rudnn/stats.h"
#include "simulated_capture.h"

namespace rudnn {
namespace {

using paged_attention::DevicePlan;
using paged_attention::HostPlan;
using paged_attention::OrderedBackwardWorkspace;
using paged_test::Layout;
using paged_test::make_layout;
using paged_test::Rows;
using paged_test::Seq;
using paged_test::sz;
using testing::fresh_seed;
using testing::host_bytes;

constexpr std::int64_t kHq = 4, kHkv = 2, kD = 16;
constexpr float kScale = 0.25f;

// One decode step further: every sequence one key longer, its row one position on (the tables have a
// spare page for it).
Layout next_step(Layout l) {
  for (auto& length : l.lengths) ++length;
  for (auto& p : l.positions) ++p;
  return l;
}

// The same schedule with each table cut to the pages its length needs (narrower than the plan's).
Layout trimmed(Layout l) {
  for (std::size_t s = 0; s < l.tables.size(); ++s)
    l.tables[s].resize(sz((l.lengths[s] + l.page_size - 1) / l.page_size));
  return l;
}

struct Inputs {
  Tensor q, k, v, grad_out;
};

Inputs random_inputs(const Layout& l, std::mt19937_64& rng) {
  const Device host = Device::host();
  const std::int64_t n = l.queries(), rows = l.pages * l.page_size;
  auto make = [&](const Shape& shape, std::int64_t count) {
    return testing::upload(shape, DType::F32, testing::random_values(sz(count), DType::F32, rng), host);
  };
  return {make({n, kHq, kD}, n * kHq * kD), make({l.pages, l.page_size, kHkv, kD}, rows * kHkv * kD),
          make({l.pages, l.page_size, kHkv, kD}, rows * kHkv * kD), make({n, kHq, kD}, n * kHq * kD)};
}

// What a plan computes for `in`: attention's output and the backward's dq (both deterministic).
std::vector<std::vector<std::byte>> results(const DevicePlan& plan, const Inputs& in) {
  auto out = plan.attention(in.q, in.k, in.v, kScale, true);
  EXPECT_TRUE(out.ok()) << out.error().message();
  auto g = plan.attention_backward(in.q, in.k, in.v, in.grad_out, kScale, true);
  EXPECT_TRUE(g.ok()) << g.error().message();
  if (!out.ok() || !g.ok()) return {};
  return {host_bytes(*out), host_bytes(g->dq)};
}

std::vector<std::vector<std::byte>> fresh_results(const Layout& l, const Inputs& in) {
  auto plan = paged_test::device_plan(l, in.q);
  EXPECT_TRUE(plan.has_value());
  return plan ? results(*plan, in) : std::vector<std::vector<std::byte>>{};
}

Layout decode_layout(std::mt19937_64& rng) {
  return make_layout(rng, 16,
                     {Seq{30, Rows::Decode, 0, -1, 0, 1}, Seq{17, Rows::Decode, 0, -1, 0, 1},
                      Seq{45, Rows::Decode, 0, 0, 1, 1}, Seq{8, Rows::Chunk, 3, -1, 0, 1}},
                     true);
}

class PagedUpdate : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::set_poison_outputs(true);
    seed_ = fresh_seed();
    rng_.seed(seed_);
  }
  std::uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(PagedUpdate, ServesTheNewScheduleInPlace) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  const Layout a = decode_layout(rng_);
  const Inputs in = random_inputs(a, rng_);
  auto plan = paged_test::device_plan(a, in.q);
  ASSERT_TRUE(plan.has_value());
  const DevicePlan copy = *plan;  // shares the buffers
  EXPECT_EQ(plan->updates(), 0);
  auto previous = results(*plan, in);
  EXPECT_EQ(previous, fresh_results(a, in));

  const Layout b = next_step(a), c = trimmed(next_step(b));
  for (const Layout* next : {&b, &c}) {
    SCOPED_TRACE(next->describe());
    auto host = paged_test::host_plan(*next);
    ASSERT_TRUE(host.has_value());
    const std::uint64_t waits = stats().host_synchronizations;
    auto st = plan->update(*host);
    ASSERT_TRUE(st.ok()) << st.error().message();
    // The schedule goes through the plan's staging: the host waits neither for the queue nor, in the
    // first two updates, for earlier copies (each writes its own half; StagingHalvesAlternate).
    EXPECT_EQ(stats().host_synchronizations, waits) << "update waited for the queue";
    host.reset();  // the caller's schedule is not read after update returns
    const auto want = fresh_results(*next, in);
    EXPECT_NE(want, previous) << "the step changes nothing: the test would prove nothing";
    EXPECT_EQ(results(*plan, in), want) << "the updated plan";
    EXPECT_EQ(results(copy, in), want) << "a copy made before the update";
    previous = want;
  }
  EXPECT_EQ(plan->updates(), 2);
  EXPECT_EQ(copy.updates(), 2);

  // append writes at the new schedule's slots: the caches equal a fresh plan's append.
  const auto row_values = testing::random_values(sz(c.queries() * kHkv * kD), DType::F32, rng_);
  const Tensor key = testing::upload({c.queries(), kHkv, kD}, DType::F32, row_values, Device::host());
  auto fresh = paged_test::device_plan(c, in.q);
  ASSERT_TRUE(fresh.has_value());
  auto append = [&](const DevicePlan& p) {
    auto copy_of = [](const Tensor& t) {
      return testing::upload(t.shape(), DType::F32, testing::host_values(t), Device::host());
    };
    auto caches = p.append(key, key, copy_of(in.k), copy_of(in.v));
    EXPECT_TRUE(caches.ok()) << caches.error().message();
    return caches.ok()
               ? std::vector<std::vector<std::byte>>{host_bytes(caches->key_cache), host_bytes(caches->value_cache)}
               : std::vector<std::vector<std::byte>>{};
  };
  EXPECT_EQ(append(*plan), append(*fresh));
}

// The staging's two halves alternate: an update writes the half the update before last used, and
// waits for the copies that read it only if they have not completed (then it counts as a host
// synchronization). On the host device the copies finish inside their call: no update waits — not
// the first two (each has its own half) and not the later ones (their half's copies are done).
TEST_F(PagedUpdate, StagingHalvesAlternate) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  const Layout a = decode_layout(rng_);
  const Inputs in = random_inputs(a, rng_);
  auto plan = paged_test::device_plan(a, in.q);
  ASSERT_TRUE(plan.has_value());
  Layout next = a;
  for (int update = 1; update <= 4; ++update) {
    SCOPED_TRACE(::testing::Message() << "update " << update);
    next = next_step(next);
    auto host = paged_test::host_plan(next);
    ASSERT_TRUE(host.has_value());
    const std::uint64_t waits = stats().host_synchronizations;
    auto st = plan->update(*host);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(stats().host_synchronizations, waits) << "the update waited for copies that had completed";
    EXPECT_EQ(results(*plan, in), fresh_results(next, in));
  }
  EXPECT_EQ(plan->updates(), 4);
}

TEST_F(PagedUpdate, SchedulesThatDoNotFitAreRejectedAndChangeNothing) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  const Layout a = decode_layout(rng_);
  const Inputs in = random_inputs(a, rng_);
  auto plan = paged_test::device_plan(a, in.q);
  ASSERT_TRUE(plan.has_value());
  const auto before = results(*plan, in);

  auto expect_rejected = [&](const Layout& l, const char* what) {
    SCOPED_TRACE(what);
    auto host = HostPlan::create(l.page_size, l.pages, l.tables, l.lengths, l.sequence_ids, l.positions);
    ASSERT_TRUE(host.ok()) << host.error().message();
    auto st = plan->update(*host);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind(), ErrorKind::ShapeMismatch) << st.error().message();
    EXPECT_EQ(st.error().argument(), "host") << st.error().message();
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  };
  Layout page_size = a;
  page_size.page_size = 32;
  expect_rejected(page_size, "page size");
  Layout pages = a;
  ++pages.pages;
  expect_rejected(pages, "pages");
  Layout sequences = a;
  sequences.tables.push_back({0});
  sequences.lengths.push_back(1);
  expect_rejected(sequences, "sequences");
  Layout queries = a;
  queries.sequence_ids.push_back(0);
  queries.positions.push_back(0);
  expect_rejected(queries, "query rows");
  Layout wider = a;
  for (auto& table : wider.tables) table.push_back(table.front());  // one page wider than every table
  expect_rejected(wider, "page tables of at most");

  {  // an update during a capture (simulated on the host queue)
    auto host = paged_test::host_plan(next_step(a));
    ASSERT_TRUE(host.has_value());
    Status<PagedAttentionError> st = [&] {
      const testing::SimulatedCapture capture(in.q.queue());
      return plan->update(*host);
    }();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind(), ErrorKind::CaptureViolation) << st.error().message();
  }
  EXPECT_EQ(plan->updates(), 0);
  EXPECT_EQ(results(*plan, in), before) << "a rejected update changed the schedule";
}

TEST_F(PagedUpdate, OrderedWorkspaceFromBeforeAnUpdateIsRejected) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  const Layout a = decode_layout(rng_), b = next_step(a);
  const Inputs in = random_inputs(a, rng_);
  auto plan = paged_test::device_plan(a, in.q);
  ASSERT_TRUE(plan.has_value());
  auto stale = OrderedBackwardWorkspace::create(*plan, in.q);
  ASSERT_TRUE(stale.ok()) << stale.error().message();
  auto host = paged_test::host_plan(b);
  ASSERT_TRUE(host.has_value());
  ASSERT_TRUE(plan->update(*host).ok());

  Tensor dk = testing::upload(in.k.shape(), DType::F32, std::vector<double>(sz(in.k.numel()), 7.0), Device::host());
  const auto dk_before = host_bytes(dk);
  auto st = plan->attention_backward_ordered_into(in.q, in.k, in.v, in.grad_out, kScale, true, *stale,
                                                  {nullptr, &dk, nullptr});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), ErrorKind::InvalidValue) << st.error().message();
  EXPECT_EQ(st.error().argument(), "workspace") << st.error().message();
  EXPECT_EQ(host_bytes(dk), dk_before) << "a rejected call wrote its output";

  // A workspace made after the update: the fresh plan's ordered gradients, bit for bit.
  auto ws = OrderedBackwardWorkspace::create(*plan, in.q);
  ASSERT_TRUE(ws.ok()) << ws.error().message();
  ASSERT_TRUE(
      plan->attention_backward_ordered_into(in.q, in.k, in.v, in.grad_out, kScale, true, *ws, {nullptr, &dk, nullptr})
          .ok());
  auto fresh = paged_test::device_plan(b, in.q);
  ASSERT_TRUE(fresh.has_value());
  auto fresh_ws = OrderedBackwardWorkspace::create(*fresh, in.q);
  ASSERT_TRUE(fresh_ws.ok());
  Tensor want = testing::upload(in.k.shape(), DType::F32, std::vector<double>(sz(in.k.numel()), 7.0), Device::host());
  ASSERT_TRUE(fresh
                  ->attention_backward_ordered_into(in.q, in.k, in.v, in.grad_out, kScale, true, *fresh_ws,
                                                    {nullptr, &want, nullptr})
                  .ok());
  EXPECT_EQ(host_bytes(dk), host_bytes(want));
}

TEST_F(PagedUpdate, AppendConflictFollowsTheSchedule) {
  SCOPED_TRACE(::testing::Message() << "seed=" << seed_);
  const Layout a = decode_layout(rng_);
  Layout clash = a;  // rows 0 and 1 write one slot: sequence 0's last position
  clash.sequence_ids[0] = clash.sequence_ids[1] = 0;
  clash.positions[0] = clash.positions[1] = a.lengths[0] - 1;
  const Inputs in = random_inputs(a, rng_);
  auto plan = paged_test::device_plan(a, in.q);
  ASSERT_TRUE(plan.has_value());
  Tensor rows = testing::upload({a.queries(), kHkv, kD}, DType::F32,
                                std::vector<double>(sz(a.queries() * kHkv * kD), 0.5), Device::host());
  auto append = [&] { return plan->append(rows, rows, in.k, in.v); };
  ASSERT_TRUE(append().ok());
  auto host = paged_test::host_plan(clash);
  ASSERT_TRUE(host.has_value());
  ASSERT_TRUE(plan->update(*host).ok());
  auto refused = append();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::InvalidValue) << refused.error().message();
  host = paged_test::host_plan(a);
  ASSERT_TRUE(host.has_value());
  ASSERT_TRUE(plan->update(*host).ok());
  EXPECT_TRUE(append().ok());
}

}  // namespace
}  // namespace rudnn
