// torch.ops.rudnn.attention → rudnn::attention::attention_into (forward only: the library has no
// dense attention backward; paged attention's backward is the trainable path).
#include "bridge.h"
#include "rudnn/attention.h"

namespace rudnn::python {

void bind_attention(nb::module_& m) {
  // strategy: an AttentionStrategy's number, −1 for default_strategy().
  m.def("attention", [](const Place& place, const TensorArg& query, const TensorArg& key, const TensorArg& value,
                        const OptionalTensor& mask, const OptionalTensor& attn_bias, std::optional<float> scale,
                        bool causal, int strategy, const TensorArg& out) {
    return run("attention", place, [&](Views& v) -> std::optional<Error> {
      auto q = v(query, "query");
      auto k = v(key, "key");
      auto val = v(value, "value");
      auto msk = v(mask, "mask");
      auto bias = v(attn_bias, "attn_bias");
      auto o = v(out, "out");
      if (v.error()) return v.error();
      attention::AttentionModuleOptions options{.scale = scale, .causal = causal};
      auto chosen = strategy < 0 ? attention::default_strategy() : static_cast<attention::AttentionStrategy>(strategy);
      return failure(attention::attention_into(*q, *k, *val, msk, bias, *o, options, chosen));
    });
  });
}

}  // namespace rudnn::python
