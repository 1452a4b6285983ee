#pragma once
// The MoE families' search spaces (autotune/spaces/moe.cpp, registered there).
#include "rudnn/autotune/search_space.h"

namespace rudnn::autotune {

// rudnn.swiglu_experts: the registered tiles of the call's resolved strategy
// (compiler::expert_variants); key = op, the weights' dtype, static dims {E, I, H, tensor_core},
// buckets {anchor(rows per expert)} (rows = the dynamic rows of the dispatched input).
std::shared_ptr<const SearchSpace> moe_experts_search_space();

// Each its registered tiles (compiler::*_variants): routing (rudnn.route,
// rudnn.route_sigmoid_grouped; key: dtypes, static {E, has_bias, top_k, renormalize[, groups,
// selected_groups, group_top_two]}, buckets {anchor(T)}), dispatch (static {H, top_k, experts},
// buckets {T}) and combine (dtypes {rows, weights}, static {H, top_k}, buckets {T}).
std::shared_ptr<const SearchSpace> moe_routing_search_space();
std::shared_ptr<const SearchSpace> moe_dispatch_search_space();
std::shared_ptr<const SearchSpace> moe_combine_search_space();

}  // namespace rudnn::autotune
