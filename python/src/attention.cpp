// torch.ops.rudnn.attention → rudnn::attention::attention_into. Forward only: the library has no
// dense attention backward (paged attention's is the trainable path).
#include <torch/library.h>

#include "autograd.h"
#include "call.h"
#include "rudnn/attention.h"

namespace rudnn::python {

namespace {

constexpr char kFamily[] = "attention";

at::Tensor attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                     const std::optional<at::Tensor>& mask, const std::optional<at::Tensor>& attn_bias,
                     std::optional<double> scale, bool causal, std::string_view strategy) {
  Call call(kFamily, {{"query", &query},
                      {"key", &key},
                      {"value", &value},
                      {"mask", mask ? &*mask : nullptr},
                      {"attn_bias", attn_bias ? &*attn_bias : nullptr}});
  using attention::AttentionStrategy;
  const AttentionStrategy chosen =
      choose<AttentionStrategy>(call, "strategy", strategy,
                                {{"default", attention::default_strategy()},
                                 {"flash_blackbox_accelerated", AttentionStrategy::FlashBlackboxAccelerated},
                                 {"flash_unit", AttentionStrategy::FlashUnit},
                                 {"fallback", AttentionStrategy::Fallback},
                                 {"autotune", AttentionStrategy::Autotune}});
  Tensor q = call.in(query, "query");
  Tensor k = call.in(key, "key");
  Tensor v = call.in(value, "value");
  std::optional<Tensor> m = call.in(mask, "mask");
  std::optional<Tensor> b = call.in(attn_bias, "attn_bias");
  // [B, Hq, Tq, Dv]; a rank the library rejects gets a placeholder, and the library names it.
  std::vector<std::int64_t> shape{0};
  if (query.dim() == 4 && value.dim() == 4) shape = {query.size(0), query.size(1), query.size(2), value.size(3)};
  at::Tensor out = call.empty(shape, query.scalar_type());
  attention::AttentionModuleOptions options{
      .scale = scale ? std::optional<float>(static_cast<float>(*scale)) : std::nullopt, .causal = causal};
  call.check(attention::attention_into(q, k, v, m, b, call.out(out, "out"), options, chosen));
  call.finish();
  return out;
}

void kernels(torch::Library& m) { m.impl("attention", guarded<kFamily, &attention>); }

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) { m.impl("attention", forward_only(kFamily)); }

}  // namespace rudnn::python
