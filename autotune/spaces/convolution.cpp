// The convolution space (rudnn.conv_forward, rudnn.conv_data_backward, rudnn.conv_weight_backward).
#include "rudnn/autotune/spaces/convolution.h"

#include "contracts/conv.h"
#include "rudnn/compiler/conv.h"

namespace rudnn::autotune {

namespace {

// The query's options are contracts::conv_key_words; the batch is the first dynamic value (every
// operand's dynamic dim is its batch).
std::optional<TuningKey> conv_key(const compiler::ConfigQuery& q) {
  if (q.dtypes.empty() || q.dynamic_values.empty()) return std::nullopt;
  if (!contracts::conv_signature_from_key(q.options, q.dtypes[0], 1, nullptr)) return std::nullopt;
  return TuningKey{q.op_name, {q.dtypes[0]}, q.options, {anchor(q.dynamic_values[0])}};
}

// Tensor-core candidates are listed whatever the device: a target without mma.sync rejects them at
// lowering, and the tuner drops a candidate that fails.
std::vector<compiler::KernelConfig> conv_candidates(const TuningKey& k) {
  if (k.dtypes.empty() || k.buckets.empty()) return {};
  auto sig = contracts::conv_signature_from_key(k.static_dims, k.dtypes[0], k.buckets[0], nullptr);
  if (!sig) return {};
  return compiler::conv_variants(*sig, true);
}

const SearchSpaceRegistration kRegistered(&convolution_search_space);

}  // namespace

std::shared_ptr<const SearchSpace> convolution_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "convolution",
      std::vector<std::string_view>{"rudnn.conv_forward", "rudnn.conv_data_backward", "rudnn.conv_weight_backward"},
      &conv_key, &conv_candidates);
  return space;
}

}  // namespace rudnn::autotune
