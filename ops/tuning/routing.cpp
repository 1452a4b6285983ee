// How autotune times a routing candidate (rudnn.route, rudnn.route_sigmoid_grouped): the key's
// expert count and options at the bucket's token count, random logits per input set.
#if RUDNN_HAS_AUTOTUNE
#include "contracts/moe.h"
#include "rudnn/autotune/spaces/moe.h"
#include "tuning_problem.h"

namespace rudnn::ops {
namespace {

Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                    const autotune::TuningKey& key) {
  // static dims {E, has_bias, top_k, renormalize[, groups, selected_groups, group_top_two]}; buckets {T}.
  const bool grouped = key.op == "rudnn.route_sigmoid_grouped";
  const auto& s = key.static_dims;
  if ((key.op != "rudnn.route" && !grouped) || s.size() != (grouped ? 7u : 4u) || key.buckets.size() != 1 ||
      key.dtypes.empty())
    return RuntimeError(ErrorKind::InvalidValue, "key", "a routing key [E, has_bias, top_k, renormalize, ...] [T]",
                        key.to_string());
  const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
  const std::int64_t tokens = key.buckets[0];
  contracts::GroupRouteSignature sig;
  sig.logits = {{tokens, s[0]}, key.dtypes[0], id};
  if (s[1]) sig.bias = contracts::MoeOperand{{s[0]}, key.dtypes.back(), id};
  sig.top_k = s[2];
  sig.renormalize = s[3] != 0;
  if (grouped) {
    sig.groups = s[4];
    sig.selected_groups = s[5];
    sig.group_top_two = s[6] != 0;
  }
  const auto e = grouped ? contracts::check_route_sigmoid_grouped(sig)
                         : contracts::check_route({sig.logits, sig.top_k, sig.renormalize});
  if (e) return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
  using Role = TuningSlot::Role;
  // Slots: logits, [bias (grouped: kept when absent)], indices, weights.
  std::vector<TuningSlot> slots = {{Role::PerSetInput, "logits", sig.logits.shape, sig.logits.dtype, {}}};
  if (grouped)
    slots.push_back(sig.bias ? TuningSlot{Role::Input, "bias", sig.bias->shape, sig.bias->dtype, {}}
                             : TuningSlot{Role::Absent, "bias", {}, DType::F32, {}});
  slots.push_back({Role::Output, "indices", {tokens, sig.top_k}, DType::U32, {}});
  slots.push_back({Role::Output, "weights", {tokens, sig.top_k}, sig.logits.dtype, {}});
  return SlotTuningProblem::make(device, std::move(slots),
                                 [grouped, sig](const compiler::KernelConfig& config, const compiler::Target& target) {
                                   return compiler::lower_routing(compiler::RouteRequest{grouped, sig, config}, target);
                                 });
}

const bool kRegistered = register_tuning_problem(autotune::moe_routing_search_space()->family(), &make);

}  // namespace
}  // namespace rudnn::ops
#endif
