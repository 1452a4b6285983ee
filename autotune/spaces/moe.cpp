// The MoE spaces: SwiGLU experts, routing, dispatch and combine.
#include "rudnn/autotune/spaces/moe.h"

#include "rudnn/compiler/pipeline.h"

namespace rudnn::autotune {

namespace {

// The expert GEMM tiles depend on the weights' shape, the strategy and how many rows each expert
// gets (the tile's block_m against the load), not on the token count as such.
class MoeExpertsSpace final : public SearchSpace {
 public:
  std::string_view family() const override { return "moe_experts"; }
  bool covers(std::string_view op) const override { return op == "rudnn.swiglu_experts"; }

  std::optional<TuningKey> key(const compiler::ConfigQuery& query) const override {
    // Operands: rows [N, H], offsets [E + 1], gate [E, I, H], up, down; options {tensor_core}.
    if (query.shapes.size() != 5 || query.dtypes.size() != 5 || query.options.size() != 1) return std::nullopt;
    const auto& gate = query.shapes[2];
    if (gate.size() != 3 || gate[0] <= 0 || gate[1] <= 0 || gate[2] <= 0 || query.dynamic_values.size() != 1)
      return std::nullopt;
    const std::int64_t experts = gate[0];
    const std::int64_t per_expert = (query.dynamic_values[0] + experts - 1) / experts;
    return TuningKey{
        query.op_name, {query.dtypes[2]}, {experts, gate[1], gate[2], query.options[0]}, {anchor(per_expert)}};
  }

  std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const override {
    if (!covers(key.op) || key.static_dims.size() != 4) return {};
    return compiler::expert_variants(key.static_dims[3] != 0);
  }
};

// Routing: logits [T, E] (+ bias [E]); options {top_k, renormalize[, groups, selected, top_two]}.
// Key: dtypes {logits[, bias]}, static {E, has_bias, options...}, buckets {T}.
std::optional<TuningKey> routing_key(const compiler::ConfigQuery& q) {
  if (q.shapes.empty() || q.shapes[0].size() != 2 || !all_static({q.shapes[0][1]}) || q.dynamic_values.empty() ||
      q.options.size() < 2)
    return std::nullopt;
  TuningKey k{q.op_name, q.dtypes, {q.shapes[0][1], q.shapes.size() > 1 ? 1 : 0}, {anchor(q.dynamic_values[0])}};
  k.static_dims.insert(k.static_dims.end(), q.options.begin(), q.options.end());
  return k;
}

// Dispatch: input [T, H], indices [T, top_k]; options {experts}. Key: static {H, top_k, experts},
// buckets {T}.
std::optional<TuningKey> dispatch_key(const compiler::ConfigQuery& q) {
  if (q.shapes.size() != 2 || q.shapes[0].size() != 2 || q.shapes[1].size() != 2 || q.options.size() != 1 ||
      !all_static({q.shapes[0][1], q.shapes[1][1], q.options[0]}) || q.dynamic_values.empty())
    return std::nullopt;
  return TuningKey{
      q.op_name, {q.dtypes[0]}, {q.shapes[0][1], q.shapes[1][1], q.options[0]}, {anchor(q.dynamic_values[0])}};
}

// Combine: expert_rows [T·top_k, H], slots [T, top_k], weights [T, top_k]. Key: dtypes {rows,
// weights}, static {H, top_k}, buckets {T} (the slots' rows: the second dynamic value).
std::optional<TuningKey> combine_key(const compiler::ConfigQuery& q) {
  if (q.shapes.size() != 3 || q.shapes[0].size() != 2 || q.shapes[1].size() != 2 ||
      !all_static({q.shapes[0][1], q.shapes[1][1]}) || q.dynamic_values.size() < 2)
    return std::nullopt;
  return TuningKey{
      q.op_name, {q.dtypes[0], q.dtypes[2]}, {q.shapes[0][1], q.shapes[1][1]}, {anchor(q.dynamic_values[1])}};
}

const SearchSpaceRegistration kExperts(&moe_experts_search_space);
const SearchSpaceRegistration kRouting(&moe_routing_search_space);
const SearchSpaceRegistration kDispatch(&moe_dispatch_search_space);
const SearchSpaceRegistration kCombine(&moe_combine_search_space);

}  // namespace

std::shared_ptr<const SearchSpace> moe_experts_search_space() {
  static const auto space = std::make_shared<const MoeExpertsSpace>();
  return space;
}

std::shared_ptr<const SearchSpace> moe_routing_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "moe_routing", std::vector<std::string_view>{"rudnn.route", "rudnn.route_sigmoid_grouped"}, &routing_key,
      [](const TuningKey&) { return compiler::routing_variants(); });
  return space;
}

std::shared_ptr<const SearchSpace> moe_dispatch_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "moe_dispatch", std::vector<std::string_view>{"rudnn.dispatch"}, &dispatch_key,
      [](const TuningKey& k) { return compiler::dispatch_variants(k.dtypes.at(0), k.static_dims.at(0)); });
  return space;
}

std::shared_ptr<const SearchSpace> moe_combine_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "moe_combine", std::vector<std::string_view>{"rudnn.combine"}, &combine_key,
      [](const TuningKey& k) { return compiler::combine_variants(k.dtypes.at(0), k.static_dims.at(0)); });
  return space;
}

}  // namespace rudnn::autotune
