// Every line of the routing contracts (SPEC §3–§4, core/contracts/moe.h): the right ErrorKind and
// argument, and the accepted edges (top_k = E, E = 1, the DeepSeek-V3 options, dynamic extents).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "contracts/moe.h"

namespace {

using namespace rudnn;
using contracts::GroupRouteSignature;
using contracts::kDynamic;
using contracts::RouteSignature;

RouteSignature route(Shape shape, DType dtype, std::int64_t k) {
  RouteSignature s;
  s.logits = {std::move(shape), dtype, 0};
  s.top_k = k;
  return s;
}

GroupRouteSignature deepseek() {
  GroupRouteSignature s;
  s.logits = {{16, 256}, DType::BF16, 0};
  s.bias = contracts::MoeOperand{{256}, DType::F32, 0};
  s.top_k = 8;
  s.groups = 8;
  s.selected_groups = 4;
  s.group_top_two = true;
  s.scale = 2.5;
  return s;
}

void expect_error(const std::optional<MoeError>& e, ErrorKind kind, const char* argument) {
  ASSERT_TRUE(e.has_value()) << "accepted";
  EXPECT_EQ(e->kind(), kind) << e->message();
  EXPECT_EQ(e->argument(), argument) << e->message();
}

TEST(MoeContract, RouteAccepts) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    EXPECT_FALSE(contracts::check_route(route({4, 64}, t, 8)));
    EXPECT_FALSE(contracts::check_route(route({1, 1}, t, 1)));
    EXPECT_FALSE(contracts::check_route(route({3, 8}, t, 8)));  // top_k = E
    EXPECT_FALSE(contracts::check_route(route({0, 8}, t, 2)));  // no tokens
    EXPECT_FALSE(contracts::check_route(route({kDynamic, 8}, t, 2)));
    EXPECT_FALSE(contracts::check_route(route({kDynamic, kDynamic}, t, 100)));
  }
}

TEST(MoeContract, RouteRejects) {
  expect_error(contracts::check_route(route({4, 8}, DType::FP8E4M3, 2)), ErrorKind::QuantizedDType, "logits");
  expect_error(contracts::check_route(route({4, 8}, DType::I32, 2)), ErrorKind::UnsupportedDType, "logits");
  expect_error(contracts::check_route(route({8}, DType::F32, 2)), ErrorKind::ShapeMismatch, "logits");
  expect_error(contracts::check_route(route({2, 4, 8}, DType::F32, 2)), ErrorKind::ShapeMismatch, "logits");
  expect_error(contracts::check_route(route({4, 0}, DType::F32, 1)), ErrorKind::EmptyDimension, "logits");
  expect_error(contracts::check_route(route({4, 8}, DType::F32, 0)), ErrorKind::InvalidValue, "top_k");
  expect_error(contracts::check_route(route({4, 8}, DType::F32, -1)), ErrorKind::InvalidValue, "top_k");
  expect_error(contracts::check_route(route({4, 8}, DType::F32, 9)), ErrorKind::InvalidValue, "top_k");
}

TEST(MoeContract, GroupedAccepts) {
  EXPECT_FALSE(contracts::check_route_sigmoid_grouped(deepseek()));
  auto s = deepseek();
  s.bias.reset();
  EXPECT_FALSE(contracts::check_route_sigmoid_grouped(s));
  s = deepseek();
  s.logits.shape = {2, 1024};
  s.bias->shape = {1024};
  s.groups = 128;
  s.selected_groups = 128;
  s.top_k = 64;
  EXPECT_FALSE(contracts::check_route_sigmoid_grouped(s));
  GroupRouteSignature one;
  one.logits = {{1, 1}, DType::F32, 0};
  EXPECT_FALSE(contracts::check_route_sigmoid_grouped(one));
  s = deepseek();
  s.top_k = 4 * 32;  // = selected_groups x experts_per_group, but > 64
  expect_error(contracts::check_route_sigmoid_grouped(s), ErrorKind::InvalidValue, "top_k");
}

TEST(MoeContract, GroupedRejects) {
  auto with = [](auto edit) {
    auto s = deepseek();
    edit(s);
    return contracts::check_route_sigmoid_grouped(s);
  };
  using S = GroupRouteSignature;
  expect_error(with([](S& s) { s.logits.dtype = DType::FP8E4M3; }), ErrorKind::QuantizedDType, "logits");
  expect_error(with([](S& s) { s.logits.dtype = DType::U32; }), ErrorKind::UnsupportedDType, "logits");
  expect_error(with([](S& s) { s.logits.shape = {256}; }), ErrorKind::ShapeMismatch, "logits");
  expect_error(with([](S& s) { s.logits.shape = {4, 0}; }), ErrorKind::EmptyDimension, "logits");
  expect_error(with([](S& s) { s.logits.shape = {4, 2048}; }), ErrorKind::InvalidValue, "logits");
  expect_error(with([](S& s) { s.groups = 0; }), ErrorKind::InvalidValue, "groups");
  expect_error(with([](S& s) { s.groups = 256; }), ErrorKind::InvalidValue, "groups");
  expect_error(with([](S& s) { s.top_k = 0; }), ErrorKind::InvalidValue, "top_k");
  expect_error(with([](S& s) { s.top_k = 65; }), ErrorKind::InvalidValue, "top_k");
  expect_error(with([](S& s) { s.groups = 6; }), ErrorKind::InvalidValue, "groups");  // 256 % 6
  expect_error(with([](S& s) { s.selected_groups = 0; }), ErrorKind::InvalidValue, "selected_groups");
  expect_error(with([](S& s) { s.selected_groups = 9; }), ErrorKind::InvalidValue, "selected_groups");
  expect_error(with([](S& s) {
                 s.selected_groups = 1;
                 s.top_k = 33;
               }),
               ErrorKind::InvalidValue, "top_k");
  expect_error(with([](S& s) {
                 s.groups = 128;
                 s.selected_groups = 4;
                 s.top_k = 4;
                 s.logits.shape = {4, 128};
                 s.bias->shape = {128};
               }),
               ErrorKind::InvalidValue, "group_top_two");  // 1 expert per group
  expect_error(with([](S& s) { s.scale = 0; }), ErrorKind::InvalidValue, "scale");
  expect_error(with([](S& s) { s.scale = -1; }), ErrorKind::InvalidValue, "scale");
  expect_error(with([](S& s) { s.scale = std::numeric_limits<double>::infinity(); }), ErrorKind::InvalidValue, "scale");
  expect_error(with([](S& s) { s.scale = std::nan(""); }), ErrorKind::InvalidValue, "scale");
  expect_error(with([](S& s) { s.bias->dtype = DType::FP8E4M3; }), ErrorKind::QuantizedDType, "bias");
  expect_error(with([](S& s) { s.bias->dtype = DType::BF16; }), ErrorKind::UnsupportedDType, "bias");
  expect_error(with([](S& s) { s.bias->shape = {128}; }), ErrorKind::ShapeMismatch, "bias");
  expect_error(with([](S& s) { s.bias->shape = {1, 256}; }), ErrorKind::ShapeMismatch, "bias");
  expect_error(with([](S& s) { s.bias->device = 1; }), ErrorKind::DeviceMismatch, "bias");
}

}  // namespace

// --- dispatch, experts, combine (SPEC §3) ---

namespace {

contracts::ExpertWeights weights(DType d, std::int64_t e = 4, std::int64_t i = 8, std::int64_t h = 16) {
  return {{{e, i, h}, d, 0}, {{e, i, h}, d, 0}, {{e, h, i}, d, 0}};
}

TEST(MoeDispatchContract, EachLineRejected) {
  using contracts::DispatchSignature;
  auto sig = [](Shape in, DType d, Shape idx, DType id = DType::U32, std::int64_t e = 4) {
    return DispatchSignature{{std::move(in), d, 0}, {std::move(idx), id, 0}, e};
  };
  EXPECT_FALSE(contracts::check_dispatch(sig({3, 16}, DType::BF16, {3, 2})));
  EXPECT_FALSE(contracts::check_dispatch(sig({kDynamic, 16}, DType::F32, {kDynamic, 4})));
  EXPECT_FALSE(contracts::check_dispatch(sig({0, 16}, DType::F32, {0, 2})));  // no tokens is fine
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::FP8E4M3, {3, 2})), ErrorKind::QuantizedDType, "input");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::I32, {3, 2})), ErrorKind::UnsupportedDType, "input");
  expect_error(contracts::check_dispatch(sig({48}, DType::F32, {3, 2})), ErrorKind::ShapeMismatch, "input");
  expect_error(contracts::check_dispatch(sig({3, 0}, DType::F32, {3, 2})), ErrorKind::EmptyDimension, "input");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::F32, {3, 2}, DType::I32)), ErrorKind::UnsupportedDType,
               "indices");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::F32, {6})), ErrorKind::ShapeMismatch, "indices");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::F32, {3, 0})), ErrorKind::EmptyDimension, "indices");
  expect_error(contracts::check_dispatch(sig({4, 16}, DType::F32, {3, 2})), ErrorKind::ShapeMismatch, "input");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::F32, {3, 2}, DType::U32, 0)), ErrorKind::InvalidValue,
               "experts");
  expect_error(contracts::check_dispatch(sig({3, 16}, DType::F32, {3, 5})), ErrorKind::ShapeMismatch, "indices");
  auto other = sig({3, 16}, DType::F32, {3, 2});
  other.input.device = 1;
  expect_error(contracts::check_dispatch(other), ErrorKind::DeviceMismatch, "input");
}

TEST(MoeExpertsContract, EachLineRejected) {
  EXPECT_FALSE(contracts::check_expert_weights(weights(DType::BF16)));
  expect_error(contracts::check_expert_weights(weights(DType::FP8E4M3)), ErrorKind::QuantizedDType, "gate");
  expect_error(contracts::check_expert_weights(weights(DType::U32)), ErrorKind::UnsupportedDType, "gate");
  expect_error(contracts::check_expert_weights(weights(DType::F32, 0)), ErrorKind::EmptyDimension, "gate");
  auto w = weights(DType::F16);
  w.gate.shape = {4, 8};
  expect_error(contracts::check_expert_weights(w), ErrorKind::ShapeMismatch, "gate");
  w = weights(DType::F16);
  w.up.dtype = DType::BF16;
  expect_error(contracts::check_expert_weights(w), ErrorKind::UnsupportedDType, "up");
  w = weights(DType::F16);
  w.down.dtype = DType::F32;
  expect_error(contracts::check_expert_weights(w), ErrorKind::UnsupportedDType, "down");
  w = weights(DType::F16);
  w.up.shape = {4, 8, 8};
  expect_error(contracts::check_expert_weights(w), ErrorKind::ShapeMismatch, "up");
  w = weights(DType::F16);
  w.down.shape = {4, 8, 16};
  expect_error(contracts::check_expert_weights(w), ErrorKind::ShapeMismatch, "down");
  w = weights(DType::F16);
  w.down.device = 1;
  expect_error(contracts::check_expert_weights(w), ErrorKind::DeviceMismatch, "down");

  contracts::ExpertsSignature s{weights(DType::BF16), {{12, 16}, DType::BF16, 0}, {{5}, DType::U32, 0}};
  EXPECT_FALSE(contracts::check_experts(s));
  auto bad = s;
  bad.rows.dtype = DType::F32;
  expect_error(contracts::check_experts(bad), ErrorKind::UnsupportedDType, "rows");
  bad = s;
  bad.rows.shape = {12, 8};
  expect_error(contracts::check_experts(bad), ErrorKind::ShapeMismatch, "rows");
  bad = s;
  bad.offsets.shape = {4};
  expect_error(contracts::check_experts(bad), ErrorKind::ShapeMismatch, "offsets");
  bad = s;
  bad.offsets.dtype = DType::I64;
  expect_error(contracts::check_experts(bad), ErrorKind::UnsupportedDType, "offsets");
  bad = s;
  bad.rows.device = 2;
  expect_error(contracts::check_experts(bad), ErrorKind::DeviceMismatch, "rows");
}

TEST(MoeExpertsContract, TensorCoreRequirements) {
  EXPECT_FALSE(contracts::check_tensor_core_experts(weights(DType::BF16), "sm_90a"));
  EXPECT_FALSE(contracts::check_tensor_core_experts(weights(DType::F16), "sm_80"));
  EXPECT_FALSE(contracts::check_tensor_core_experts(weights(DType::F16), "host-x86_64"));
  expect_error(contracts::check_tensor_core_experts(weights(DType::F32), "sm_90a"), ErrorKind::Unsupported, "strategy");
  expect_error(contracts::check_tensor_core_experts(weights(DType::BF16, 4, 8, 12), "sm_90a"), ErrorKind::Unsupported,
               "strategy");
  expect_error(contracts::check_tensor_core_experts(weights(DType::BF16, 4, 12, 16), "sm_90a"), ErrorKind::Unsupported,
               "strategy");
  expect_error(contracts::check_tensor_core_experts(weights(DType::F16), "sm_75"), ErrorKind::Unsupported, "strategy");
}

TEST(MoeCombineContract, EachLineRejected) {
  auto sig = [](Shape rows, Shape slots, Shape w, DType rd = DType::F32, DType sd = DType::U32, DType wd = DType::F32) {
    return contracts::CombineSignature{{std::move(rows), rd, 0}, {std::move(slots), sd, 0}, {std::move(w), wd, 0}};
  };
  EXPECT_FALSE(contracts::check_combine(sig({6, 16}, {3, 2}, {3, 2})));
  EXPECT_FALSE(contracts::check_combine(sig({kDynamic, 16}, {kDynamic, 2}, {kDynamic, 2})));
  expect_error(contracts::check_combine(sig({6, 16}, {3, 2}, {3, 2}, DType::FP8E4M3)), ErrorKind::QuantizedDType,
               "expert_output");
  expect_error(contracts::check_combine(sig({96}, {3, 2}, {3, 2})), ErrorKind::ShapeMismatch, "expert_output");
  expect_error(contracts::check_combine(sig({6, 0}, {3, 2}, {3, 2})), ErrorKind::EmptyDimension, "expert_output");
  expect_error(contracts::check_combine(sig({6, 16}, {3, 2}, {3, 2}, DType::F32, DType::I32)),
               ErrorKind::UnsupportedDType, "slots");
  expect_error(contracts::check_combine(sig({6, 16}, {3, 2}, {3, 2}, DType::F32, DType::U32, DType::U32)),
               ErrorKind::UnsupportedDType, "weights");
  expect_error(contracts::check_combine(sig({6, 16}, {3, 2}, {3, 3})), ErrorKind::ShapeMismatch, "weights");
  expect_error(contracts::check_combine(sig({5, 16}, {3, 2}, {3, 2})), ErrorKind::ShapeMismatch, "expert_output");
  auto other = sig({6, 16}, {3, 2}, {3, 2});
  other.weights.device = 1;
  expect_error(contracts::check_combine(other), ErrorKind::DeviceMismatch, "weights");
}

}  // namespace
