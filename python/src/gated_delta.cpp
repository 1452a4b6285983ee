// torch.ops.rudnn.{chunk_gated_delta_rule, gated_delta_rule} → rudnn::gated_delta::*_into
// (forward only: the library has no gated delta backward).
#include "bridge.h"
#include "rudnn/gated_delta.h"

namespace rudnn::python {

void bind_gated_delta(nb::module_& m) {
  // chunk_size 0: the token-by-token gated_delta_rule.
  m.def("gated_delta_rule",
        [](const Place& place, const TensorArg& query, const TensorArg& key, const TensorArg& value,
           const TensorArg& beta, const TensorArg& log_decay, const OptionalTensor& initial_state, float query_scale,
           std::int64_t chunk_size, const TensorArg& output, const TensorArg& final_state) {
          return run("gated_delta", place, [&](Views& v) -> std::optional<Error> {
            auto q = v(query, "query");
            auto k = v(key, "key");
            auto val = v(value, "value");
            auto b = v(beta, "beta");
            auto g = v(log_decay, "log_decay");
            auto s0 = v(initial_state, "initial_state");
            auto o = v(output, "output");
            auto s = v(final_state, "final_state");
            if (v.error()) return v.error();
            gated_delta::GatedDeltaInput in{*q, *k, *val, *b, *g, s0, query_scale};
            gated_delta::GatedDeltaOutput out{*o, *s};
            if (chunk_size == 0) return failure(gated_delta::gated_delta_rule_into(in, out));
            return failure(gated_delta::chunk_gated_delta_rule_into(in, chunk_size, out));
          });
        });
}

}  // namespace rudnn::python
