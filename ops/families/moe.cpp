// The MoE families in the graph runner and rudnn-precompile: routing (rudnn.route,
// rudnn.route_sigmoid_grouped), rudnn.dispatch, rudnn.swiglu_experts and rudnn.combine. The steps
// pass objects along the graph, not only tensors: the routing plan a dispatch starts from (attached
// to the indices value) and the dispatched rows that experts and combine read (attached to the
// dispatch's rows and slots values).
#include <fmt/format.h>

#include "contracts/arch.h"
#include "family.h"
#include "moe_strategy.h"
#include "rudnn/Dialect/Rudnn/IR/MoEConfig.h"
#include "rudnn/Dialect/Rudnn/IR/RudnnOps.h"
#include "rudnn/moe.h"

namespace rudnn::ops {
namespace {

// ----- routing

std::optional<RuntimeError> run_routing(mlir::Operation& op, GraphValues& values) {
  const dialect::RouteOpView route = *dialect::asRouteOp(&op);
  const auto& o = route.options;
  auto routed = [&]() -> Result<moe::RoutingPlan, MoeError> {
    if (!route.grouped) return moe::route(values[route.logits], {o.top_k, o.renormalize});
    moe::GroupRoutingOptions g;
    g.top_k = o.top_k;
    g.groups = o.groups;
    g.selected_groups = o.selected_groups;
    g.group_top_two = o.group_top_two;
    g.renormalize = o.renormalize;
    g.scale = static_cast<float>(o.scale);
    return moe::route_sigmoid_grouped(values[route.logits], values.optional(route.bias), g);
  }();
  if (!routed.ok()) return op_error(routed.error(), op);
  if (auto e = values.bind(op.getResult(0), routed->expert_indices())) return e;
  if (auto e = values.bind(op.getResult(1), routed->weights())) return e;
  values.attach(op.getResult(0), std::make_shared<moe::RoutingPlan>(std::move(routed.value())));
  return std::nullopt;
}

Result<std::vector<compiler::LoweredOp>, RuntimeError> routing_kernels(mlir::Operation& op,
                                                                       const compiler::Target& target,
                                                                       bool with_candidates, const std::string& where) {
  const dialect::RouteOpView route = *dialect::asRouteOp(&op);
  if (auto e = require_static(route.logits, {-1}, where, "logits")) return *e;
  compiler::RouteRequest request{route.grouped, route.options, std::nullopt};
  request.signature.logits = operand_of(route.logits);
  if (route.bias) request.signature.bias = operand_of(route.bias);
  return lower_configs(request, with_candidates ? compiler::routing_variants() : std::vector<compiler::KernelConfig>{},
                       target, &compiler::lower_routing);
}

// ----- dispatch

std::optional<RuntimeError> run_dispatch(mlir::Operation& op, GraphValues& values) {
  auto dp = llvm::cast<dialect::DispatchOp>(op);
  auto routing = values.attached<moe::RoutingPlan>(dp.getIndices());
  if (!routing) return foreign_value(op, "indices", "the indices result of a routing op in this graph");
  // The attribute sizes the offsets; the routing's logits fixed the expert count that runs.
  const std::int64_t experts = dp.getExpertsAttr().getInt();
  if (experts != routing->experts())
    return RuntimeError(ErrorKind::InvalidValue, "rudnn.dispatch experts",
                        fmt::format("{} (the expert count of the routing its indices come from)", routing->experts()),
                        std::to_string(experts));
  auto d = routing->dispatch(values[dp.getInput()]);
  if (!d.ok()) return op_error(d.error(), op);
  auto shared = std::make_shared<moe::Dispatched>(std::move(d.value()));
  if (auto e = values.bind(dp.getRows(), shared->rows())) return e;
  if (auto e = values.bind(dp.getOffsets(), shared->expert_offsets())) return e;
  if (auto e = values.bind(dp.getSlots(), shared->slots())) return e;
  values.attach(dp.getRows(), shared);
  values.attach(dp.getSlots(), shared);
  return std::nullopt;
}

Result<std::vector<compiler::LoweredOp>, RuntimeError> dispatch_kernels(mlir::Operation& op,
                                                                        const compiler::Target& target,
                                                                        bool with_candidates,
                                                                        const std::string& where) {
  auto dp = llvm::cast<dialect::DispatchOp>(op);
  if (auto e = require_static(dp.getInput(), {-1}, where, "input")) return *e;
  if (auto e = require_static(dp.getIndices(), {-1}, where, "indices")) return *e;
  compiler::DispatchRequest request{
      {operand_of(dp.getInput()), operand_of(dp.getIndices()), dp.getExpertsAttr().getInt()}, std::nullopt};
  const auto& input = request.signature.input;
  return lower_configs(request,
                       with_candidates ? compiler::dispatch_variants(input.dtype, input.shape.back())
                                       : std::vector<compiler::KernelConfig>{},
                       target, &compiler::lower_dispatch);
}

// ----- experts

moe::GroupedStrategy strategy_of(dialect::SwiGluExpertsOp op) { return moe::grouped_strategy(op.getStrategy()); }

std::optional<RuntimeError> run_experts(mlir::Operation& op, GraphValues& values) {
  auto ex = llvm::cast<dialect::SwiGluExpertsOp>(op);
  auto d = values.attached<moe::Dispatched>(ex.getRows());
  if (!d) return foreign_value(op, "rows", "the rows result of a rudnn.dispatch in this graph");
  // The experts run on the dispatch object, which carries its own offsets: offsets from anywhere
  // else would be ignored, so they are an error (as combine's foreign weights are).
  if (values[ex.getOffsets()].data() != d->expert_offsets().data())
    return foreign_value(op, "offsets", "the offsets of the dispatch the rows came from");
  auto experts = moe::SwiGluExperts::create(values[ex.getGate()], values[ex.getUp()], values[ex.getDown()]);
  if (!experts.ok()) return op_error(experts.error(), op);
  auto out = experts->forward_dispatched_with_strategy(*d, strategy_of(ex));
  if (!out.ok()) return op_error(out.error(), op);
  return values.bind(ex.getOutput(), std::move(out.value()));
}

// The entry resolves Auto against the target and sizes the heuristic tile by the call's load (rows
// per expert, bucketed to a power of two): every bucket up to the largest tile's rows is lowered,
// which yields every tile the heuristic can pick.
Result<std::vector<compiler::LoweredOp>, RuntimeError> experts_kernels(mlir::Operation& op,
                                                                       const compiler::Target& target,
                                                                       bool with_candidates, const std::string& where) {
  auto ex = llvm::cast<dialect::SwiGluExpertsOp>(op);
  for (auto [v, name] : {std::pair{ex.getRows(), "rows"},
                         {ex.getOffsets(), "offsets"},
                         {ex.getGate(), "gate"},
                         {ex.getUp(), "up"},
                         {ex.getDown(), "down"}})
    if (auto e = require_static(v, {-1}, where, name)) return *e;
  for (auto [v, name] : {std::pair{ex.getGate(), "gate"}, {ex.getUp(), "up"}, {ex.getDown(), "down"}})
    if (auto e = require_static(v, {0, 1}, where, name)) return *e;
  compiler::ExpertsRequest request;
  request.signature.weights = {operand_of(ex.getGate()), operand_of(ex.getUp()), operand_of(ex.getDown())};
  request.signature.rows = operand_of(ex.getRows());
  request.signature.offsets = operand_of(ex.getOffsets());
  auto resolved =
      contracts::resolve_experts_strategy(moe::to_contract(strategy_of(ex)), request.signature.weights, target.arch);
  if (!resolved.ok()) return op_error(resolved.error(), op);
  request.strategy = resolved.value();
  const bool tensor_core = request.strategy == contracts::ExpertsStrategy::TensorCore;
  const auto& tiles = tensor_core ? dialect::moe_config::tensorCoreTiles() : dialect::moe_config::scalarTiles();
  std::int64_t largest = 1;
  for (const auto& t : tiles) largest = std::max(largest, t.blockM);
  std::vector<compiler::LoweredOp> out;
  auto lower = [&](std::optional<compiler::KernelConfig> config, std::int64_t bucket) -> Status<RuntimeError> {
    request.config = std::move(config);
    request.rows_per_expert = bucket;
    auto lowered = compiler::lower_experts(request, target);
    if (!lowered.ok()) return lowered.error();
    out.push_back(std::move(lowered.value()));
    return {};
  };
  for (std::int64_t bucket = 1; bucket <= 2 * largest; bucket *= 2)
    if (auto s = lower(std::nullopt, bucket); !s.ok()) return s.error();
  if (with_candidates)
    for (auto& c : compiler::expert_variants(tensor_core, contracts::has_wgmma(target.arch, target.host_emulation)))
      if (auto s = lower(c, -1); !s.ok()) return s.error();
  return out;
}

// ----- combine

std::optional<RuntimeError> run_combine(mlir::Operation& op, GraphValues& values) {
  auto cb = llvm::cast<dialect::CombineOp>(op);
  auto d = values.attached<moe::Dispatched>(cb.getSlots());
  if (!d) return foreign_value(op, "slots", "the slots result of a rudnn.dispatch in this graph");
  if (values[cb.getWeights()].data() != d->routing().weights().data())
    return foreign_value(op, "weights", "the weights of the routing the slots came from");
  auto out = d->combine(values[cb.getExpertRows()]);
  if (!out.ok()) return op_error(out.error(), op);
  return values.bind(cb.getOutput(), std::move(out.value()));
}

Result<std::vector<compiler::LoweredOp>, RuntimeError> combine_kernels(mlir::Operation& op,
                                                                       const compiler::Target& target,
                                                                       bool with_candidates, const std::string& where) {
  auto cb = llvm::cast<dialect::CombineOp>(op);
  for (auto [v, name] :
       {std::pair{cb.getExpertRows(), "expert_rows"}, {cb.getSlots(), "slots"}, {cb.getWeights(), "weights"}})
    if (auto e = require_static(v, {-1}, where, name)) return *e;
  compiler::CombineRequest request{
      {operand_of(cb.getExpertRows()), operand_of(cb.getSlots()), operand_of(cb.getWeights())}, std::nullopt};
  const auto& rows = request.signature.expert_rows;
  return lower_configs(request,
                       with_candidates ? compiler::combine_variants(rows.dtype, rows.shape.back())
                                       : std::vector<compiler::KernelConfig>{},
                       target, &compiler::lower_combine);
}

const bool kRegistered =
    register_family(
        {"moe routing",
         {dialect::RouteOp::getOperationName().str(), dialect::RouteSigmoidGroupedOp::getOperationName().str()},
         &run_routing,
         &routing_kernels}) &&
    register_family(
        {"moe dispatch", {dialect::DispatchOp::getOperationName().str()}, &run_dispatch, &dispatch_kernels}) &&
    register_family(
        {"moe experts", {dialect::SwiGluExpertsOp::getOperationName().str()}, &run_experts, &experts_kernels}) &&
    register_family({"moe combine", {dialect::CombineOp::getOperationName().str()}, &run_combine, &combine_kernels});

}  // namespace
}  // namespace rudnn::ops
