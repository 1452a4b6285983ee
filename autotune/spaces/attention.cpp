// The attention space (rudnn.attention with strategy Autotune).
#include "rudnn/autotune/spaces/attention.h"

#include "rudnn/compiler/pipeline.h"

namespace rudnn::autotune {

namespace {

class AttentionSpace final : public SearchSpace {
 public:
  std::string_view family() const override { return "attention"; }
  bool covers(std::string_view op) const override { return op == "rudnn.attention"; }

  std::optional<TuningKey> key(const compiler::ConfigQuery& query) const override {
    // Operands q, k, v[, mask][, bias]; options {causal, mask, bias, strategy}; dynamic values start
    // with q's (B, Tq) and k's (B, Tk).
    if (query.shapes.size() < 3 || query.options.size() != 4 || query.dynamic_values.size() < 4) return std::nullopt;
    const auto& q = query.shapes[0];
    const auto& v = query.shapes[2];
    if (q.size() != 4 || v.size() != 4 || q[1] < 0 || query.shapes[1][1] < 0 || q[3] < 0 || v[3] < 0)
      return std::nullopt;
    std::vector<DType> dtypes = {query.dtypes[0]};
    if (query.options[2]) dtypes.push_back(query.dtypes.back());
    const auto& o = query.options;
    return TuningKey{
        query.op_name,
        dtypes,
        {q[1], query.shapes[1][1], q[3], v[3], o[0], o[1], o[2], o[3]},
        {anchor(query.dynamic_values[0]), anchor(query.dynamic_values[1]), anchor(query.dynamic_values[3])}};
  }

  std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const override {
    if (!covers(key.op) || key.static_dims.size() != 8 || key.dtypes.empty()) return {};
    const auto strategy = static_cast<contracts::AttentionStrategy>(key.static_dims[7]);
    return compiler::attention_variants(strategy, key.dtypes[0], key.static_dims[2], key.static_dims[3]);
  }
};

const SearchSpaceRegistration kRegistered(&attention_search_space);

}  // namespace

std::shared_ptr<const SearchSpace> attention_search_space() {
  static const auto space = std::make_shared<const AttentionSpace>();
  return space;
}

}  // namespace rudnn::autotune
