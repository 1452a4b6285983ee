// RoutingPlan::adopt_dispatch — a dispatch kept as its rows, offsets and slots (how a framework's
// separate dispatch / experts / combine ops pass it along, python/src/moe_steps.cpp) becomes a
// Dispatched again only after its offsets and slots are checked against the routing. An adopted
// dispatch runs the experts, combine and both backward steps with the original's bits, also with its
// rows reordered inside each expert; every malformed one is a typed error naming the tensor, with
// nothing launched.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "contract_fixture.h"
#include "op_test_util.h"
#include "rudnn/moe.h"
#include "simulated_capture.h"

namespace rudnn {
namespace {

using testing::host_bytes;
using testing::host_values;

Tensor upload(const Shape& shape, DType dtype, const std::vector<double>& values) {
  return testing::upload(shape, dtype, values, Device::host());
}

TEST(MoeAdoptDispatch, RunsEveryStepWithTheOriginalsBits) {
  std::mt19937_64 rng(testing::fresh_seed());
  const std::int64_t e = 5, inter = 16, h = 24, tokens = 9, k = 2;
  const DType dt = DType::BF16;
  auto random = [&](const Shape& s, DType dtype) {
    return upload(s, dtype, testing::random_values(static_cast<std::size_t>(element_count(s)), dtype, rng, -1, 1));
  };
  auto experts =
      moe::SwiGluExperts::create(random({e, inter, h}, dt), random({e, inter, h}, dt), random({e, h, inter}, dt));
  ASSERT_TRUE(experts.ok()) << experts.error().message();
  const Tensor input = random({tokens, h}, dt), logits = random({tokens, e}, DType::F32);
  const Tensor grad = random({tokens, h}, dt);
  auto routing = moe::route(logits, {k, true});
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  auto original = routing->dispatch(input);
  ASSERT_TRUE(original.ok()) << original.error().message();

  // Each step of a dispatch: the experts (both strategies), combine, combine's, dispatch's and the
  // experts' gradients (dinput is in rows order: compared through dispatch's gradient).
  auto steps = [&](const moe::Dispatched& d) {
    std::vector<std::vector<std::byte>> out;
    for (auto strategy : {moe::GroupedStrategy::Scalar, moe::GroupedStrategy::TensorCore}) {
      auto y = experts->forward_dispatched_with_strategy(d, strategy);
      EXPECT_TRUE(y.ok()) << y.error().message();
      if (!y.ok()) return out;
      auto combined = d.combine(*y);
      auto grads = d.combine_backward(*y, grad);
      EXPECT_TRUE(combined.ok() && grads.ok());
      if (!combined.ok() || !grads.ok()) return out;
      auto dinput = d.dispatch_backward(grads->dexpert);
      EXPECT_TRUE(dinput.ok()) << dinput.error().message();
      if (!dinput.ok()) return out;
      // The experts' backward orders each expert's rows by token through the slots.
      auto cache = experts->training_cache(d);
      EXPECT_TRUE(cache.ok()) << cache.error().message();
      if (!cache.ok()) return out;
      auto trained = cache->backward_with_strategy(grads->dexpert, moe::GroupedStrategy::Scalar);
      EXPECT_TRUE(trained.ok()) << trained.error().message();
      if (!trained.ok()) return out;
      for (const Tensor* t : {&*combined, &grads->dweights, &*dinput, &trained->dgate, &trained->dup, &trained->ddown})
        out.push_back(host_bytes(*t));
    }
    return out;
  };
  const auto expected = steps(*original);
  ASSERT_EQ(expected.size(), 12u);

  auto same = routing->adopt_dispatch(original->rows(), original->expert_offsets(), original->slots());
  ASSERT_TRUE(same.ok()) << same.error().message();
  EXPECT_EQ(steps(*same), expected);

  // The rows of each expert reversed, the slots following them: another valid dispatch of the routing.
  const auto offsets = host_values(original->expert_offsets());
  auto slots = host_values(original->slots());
  const auto rows = host_values(original->rows());
  std::vector<double> moved(rows.size());
  std::vector<std::int64_t> to(static_cast<std::size_t>(tokens * k));
  for (std::int64_t x = 0; x < e; ++x) {
    const auto lo = static_cast<std::int64_t>(offsets[static_cast<std::size_t>(x)]);
    const auto hi = static_cast<std::int64_t>(offsets[static_cast<std::size_t>(x) + 1]);
    for (std::int64_t r = lo; r < hi; ++r) to[static_cast<std::size_t>(r)] = lo + hi - 1 - r;
  }
  for (std::int64_t r = 0; r < tokens * k; ++r)
    std::copy_n(rows.begin() + r * h, h, moved.begin() + to[static_cast<std::size_t>(r)] * h);
  for (double& s : slots) s = static_cast<double>(to[static_cast<std::size_t>(s)]);
  ASSERT_NE(slots, host_values(original->slots())) << "the routing left no expert with two rows";
  auto reordered = routing->adopt_dispatch(upload({tokens * k, h}, dt, moved), original->expert_offsets(),
                                           upload({tokens, k}, DType::U32, slots));
  ASSERT_TRUE(reordered.ok()) << reordered.error().message();
  EXPECT_EQ(steps(*reordered), expected);
}

TEST(MoeAdoptDispatch, ReadsBackSoACaptureRefusesIt) {
  auto routing = moe::RoutingPlan::create(upload({3, 2}, DType::U32, {0, 1, 2, 3, 1, 0}),
                                          upload({3, 2}, DType::F32, {1, 1, 1, 1, 1, 1}), 4);
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  const Tensor offsets = upload({5}, DType::U32, {0, 2, 4, 5, 6}),
               slots = upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 1});
  const Tensor rows = upload({6, 8}, DType::F32, std::vector<double>(48, 0.5));
  const Queue queue = Queue::default_queue(Device::host());  // the capture keeps a reference
  const testing::SimulatedCapture capture(queue);
  auto refused = routing->adopt_dispatch(rows, offsets, slots);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::CaptureViolation) << refused.error().message();
}

class MoeAdoptContract : public testing::ContractTest {};

// Routing {0, 1 | 2, 3 | 1, 0} over 4 experts: expert 0 has (0, 0) and (2, 1), expert 1 (0, 1) and
// (2, 0), expert 2 (1, 0), expert 3 (1, 1); offsets {0, 2, 4, 5, 6}; slots {0, 2, 4, 5, 3, 1} is one
// valid dispatch.
TEST_F(MoeAdoptContract, EveryMalformedDispatchIsNamed) {
  auto routing = moe::RoutingPlan::create(upload({3, 2}, DType::U32, {0, 1, 2, 3, 1, 0}),
                                          upload({3, 2}, DType::F32, {1, 1, 1, 1, 1, 1}), 4);
  ASSERT_TRUE(routing.ok()) << routing.error().message();
  const Tensor rows = t({6, 8}, DType::F32), offsets = upload({5}, DType::U32, {0, 2, 4, 5, 6});
  const Tensor slots = upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 1});
  rebase();
  const auto& r = *routing;
  expect_rejected(r.adopt_dispatch(t({6, 8}, DType::U32), offsets, slots), ErrorKind::UnsupportedDType, "rows");
  expect_rejected(r.adopt_dispatch(t({6, 8}, DType::FP8E4M3), offsets, slots), ErrorKind::QuantizedDType, "rows");
  expect_rejected(r.adopt_dispatch(t({5, 8}, DType::F32), offsets, slots), ErrorKind::ShapeMismatch, "rows");
  expect_rejected(r.adopt_dispatch(t({48}, DType::F32), offsets, slots), ErrorKind::ShapeMismatch, "rows");
  expect_rejected(r.adopt_dispatch(rows, t({5}, DType::I32), slots), ErrorKind::UnsupportedDType, "offsets");
  expect_rejected(r.adopt_dispatch(rows, t({4}, DType::U32), slots), ErrorKind::ShapeMismatch, "offsets");
  expect_rejected(r.adopt_dispatch(rows, offsets, t({3, 2}, DType::I64)), ErrorKind::UnsupportedDType, "slots");
  expect_rejected(r.adopt_dispatch(rows, offsets, t({2, 3}, DType::U32)), ErrorKind::ShapeMismatch, "slots");
  auto q2 = Queue::create(Device::host());
  ASSERT_TRUE(q2.ok());
  expect_rejected(r.adopt_dispatch(rows, t({5}, DType::U32, &q2.value()), slots), ErrorKind::QueueMismatch, "offsets");
  expect_rejected(r.adopt_dispatch(t({6, 8}, DType::F32, &q2.value()), offsets, slots), ErrorKind::QueueMismatch,
                  "rows");

  // Values: each names the first bad position.
  auto rejected_value = [&](const Tensor& o, const Tensor& s, const char* argument, const char* where) {
    auto result = r.adopt_dispatch(rows, o, s);
    expect_rejected(result, ErrorKind::InvalidValue, argument);
    if (!result.ok()) EXPECT_NE(result.error().message().find(where), std::string::npos) << result.error().message();
  };
  rejected_value(upload({5}, DType::U32, {1, 2, 4, 5, 6}), slots, "offsets", "0 at [0]");
  rejected_value(upload({5}, DType::U32, {0, 3, 4, 5, 6}), slots, "offsets", "2 at [1]");
  rejected_value(upload({5}, DType::U32, {0, 2, 4, 5, 7}), slots, "offsets", "6 at [4]");
  // (2, 1) chooses expert 0, whose rows are [0, 2).
  rejected_value(offsets, upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 2}), "slots", "at [2, 1]");
  rejected_value(offsets, upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 0}), "slots", "at [2, 1]");
  rejected_value(offsets, upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 99}), "slots", "at [2, 1]");

  auto adopted = r.adopt_dispatch(rows, offsets, slots);
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  EXPECT_EQ(adopted->hidden(), 8);
  EXPECT_EQ(host_values(adopted->slots()), (std::vector<double>{0, 2, 4, 5, 3, 1}));
}

// RoutingPlan::adopt: create and adopt_dispatch in one (the indices read once), the same checks.
TEST_F(MoeAdoptContract, AdoptInOneChecksBoth) {
  const Tensor indices = upload({3, 2}, DType::U32, {0, 1, 2, 3, 1, 0});
  const Tensor weights = upload({3, 2}, DType::F32, {1, 1, 1, 1, 1, 1});
  const Tensor rows = t({6, 8}, DType::F32), offsets = upload({5}, DType::U32, {0, 2, 4, 5, 6});
  const Tensor slots = upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 1});
  rebase();
  auto adopted = moe::RoutingPlan::adopt(indices, weights, 4, rows, offsets, slots);
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  EXPECT_EQ(adopted->routing().experts(), 4);
  EXPECT_EQ(host_values(adopted->expert_offsets()), (std::vector<double>{0, 2, 4, 5, 6}));
  // create's contract: an index ≥ experts (3 of 3 experts) named with its position.
  auto beyond = moe::RoutingPlan::adopt(indices, weights, 3, rows, upload({4}, DType::U32, {0, 2, 4, 5}), slots);
  expect_rejected(beyond, ErrorKind::InvalidValue, "expert_indices");
  if (!beyond.ok()) EXPECT_NE(beyond.error().message().find("3 at [1, 1]"), std::string::npos);
  expect_rejected(moe::RoutingPlan::adopt(indices, t({3, 1}, DType::F32), 4, rows, offsets, slots),
                  ErrorKind::ShapeMismatch, "weights");
  // adopt_dispatch's: a slot outside its expert's rows, a malformed rows tensor.
  expect_rejected(
      moe::RoutingPlan::adopt(indices, weights, 4, rows, offsets, upload({3, 2}, DType::U32, {0, 2, 4, 5, 3, 2})),
      ErrorKind::InvalidValue, "slots");
  expect_rejected(moe::RoutingPlan::adopt(indices, weights, 4, t({5, 8}, DType::F32), offsets, slots),
                  ErrorKind::ShapeMismatch, "rows");
}

}  // namespace
}  // namespace rudnn
