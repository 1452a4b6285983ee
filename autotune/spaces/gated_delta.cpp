// The gated delta rule space (rudnn.gated_delta).
#include "rudnn/autotune/spaces/gated_delta.h"

#include "rudnn/compiler/pipeline.h"

namespace rudnn::autotune {

namespace {

// Gated delta: query [B, H, T, K], key, value [B, H, T, V], beta, log_decay [B, H, T],
// initial_state? [B, H, K, V]; options {chunk_size}. Key: dtypes {query, beta}, static {K, V,
// chunk_size, has_state}, buckets {B, H, T} (the query's dynamic extents).
std::optional<TuningKey> gated_delta_key(const compiler::ConfigQuery& q) {
  if (q.shapes.size() < 5 || q.shapes[0].size() != 4 || q.shapes[2].size() != 4 || q.options.size() != 1 ||
      !all_static({q.shapes[0][3], q.shapes[2][3]}) || q.dynamic_values.size() < 3)
    return std::nullopt;
  return TuningKey{q.op_name,
                   {q.dtypes[0], q.dtypes[3]},
                   {q.shapes[0][3], q.shapes[2][3], q.options[0], q.shapes.size() > 5 ? 1 : 0},
                   {anchor(q.dynamic_values[0]), anchor(q.dynamic_values[1]), anchor(q.dynamic_values[2])}};
}

const SearchSpaceRegistration kRegistered(&gated_delta_search_space);

}  // namespace

std::shared_ptr<const SearchSpace> gated_delta_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "gated_delta", std::vector<std::string_view>{"rudnn.gated_delta"}, &gated_delta_key, [](const TuningKey& k) {
        return compiler::gated_delta_variants(k.static_dims.at(2) > 0, k.static_dims.at(0), k.dtypes.at(0));
      });
  return space;
}

}  // namespace rudnn::autotune
