// torch.ops.rudnn.{chunk_gated_delta_rule, gated_delta_rule} → rudnn::gated_delta::*_into.
// Forward only: the library has no gated delta backward.
#include <torch/library.h>

#include "autograd.h"
#include "call.h"
#include "rudnn/gated_delta.h"

namespace rudnn::python {

namespace {

constexpr char kFamily[] = "gated_delta";
using Outputs = std::tuple<at::Tensor, at::Tensor>;

// chunk_size 0: the token-by-token gated_delta_rule.
Outputs run(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& beta,
            const at::Tensor& log_decay, const std::optional<at::Tensor>& initial_state, double query_scale,
            std::int64_t chunk_size) {
  Call call(kFamily, {{"query", &query},
                      {"key", &key},
                      {"value", &value},
                      {"beta", &beta},
                      {"log_decay", &log_decay},
                      {"initial_state", initial_state ? &*initial_state : nullptr}});
  gated_delta::GatedDeltaInput in{call.in(query, "query"),         call.in(key, "key"),
                                  call.in(value, "value"),         call.in(beta, "beta"),
                                  call.in(log_decay, "log_decay"), call.in(initial_state, "initial_state"),
                                  static_cast<float>(query_scale)};
  // The output [B, H, T, V] and state [B, H, K, V]; a rank the library rejects gets placeholders,
  // and the library names it.
  std::vector<std::int64_t> output_shape{0}, state_shape{0};
  if (query.dim() == 4 && value.dim() == 4) {
    output_shape = {query.size(0), query.size(1), query.size(2), value.size(3)};
    state_shape = {query.size(0), query.size(1), query.size(3), value.size(3)};
  }
  at::Tensor output = call.empty(output_shape, query.scalar_type());
  at::Tensor final_state = call.empty(state_shape, c10::ScalarType::Float);
  gated_delta::GatedDeltaOutput out{call.out(output, "output"), call.out(final_state, "final_state")};
  if (chunk_size == 0)
    call.check(gated_delta::gated_delta_rule_into(in, out));
  else
    call.check(gated_delta::chunk_gated_delta_rule_into(in, chunk_size, out));
  call.finish();
  return {output, final_state};
}

Outputs chunk(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& beta,
              const at::Tensor& log_decay, const std::optional<at::Tensor>& initial_state, double query_scale,
              std::int64_t chunk_size) {
  if (chunk_size == 0)  // 0 selects the token-by-token kernel in run(): not a chunk size
    raise(kFamily, Error(ErrorKind::InvalidValue, "chunk_size", "1 ≤ chunk_size ≤ 1024", "0"));
  return run(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size);
}

Outputs step(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, const at::Tensor& beta,
             const at::Tensor& log_decay, const std::optional<at::Tensor>& initial_state, double query_scale) {
  return run(query, key, value, beta, log_decay, initial_state, query_scale, 0);
}

void kernels(torch::Library& m) {
  m.impl("chunk_gated_delta_rule", guarded<kFamily, &chunk>);
  m.impl("gated_delta_rule", guarded<kFamily, &step>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  for (const char* op : {"chunk_gated_delta_rule", "gated_delta_rule"}) m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
