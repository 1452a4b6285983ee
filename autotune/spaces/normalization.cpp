// The normalization space (rudnn.layer_norm, rudnn.rms_norm, rudnn.softmax_last_axis).
#include "rudnn/autotune/spaces/normalization.h"

#include "rudnn/compiler/pipeline.h"

namespace rudnn::autotune {

namespace {

std::optional<contracts::NormKind> norm_kind(std::string_view op) {
  if (op == "rudnn.layer_norm") return contracts::NormKind::LayerNorm;
  if (op == "rudnn.rms_norm") return contracts::NormKind::RmsNorm;
  if (op == "rudnn.softmax_last_axis") return contracts::NormKind::Softmax;
  return std::nullopt;
}

class NormalizationSpace final : public SearchSpace {
 public:
  std::string_view family() const override { return "normalization"; }
  bool covers(std::string_view op) const override { return norm_kind(op).has_value(); }

  // The kernel only sees rows (the product of the leading dims) and H: the key is the same for
  // [B, T, H] and [B*T, H], and the rank is not part of it.
  std::optional<TuningKey> key(const compiler::ConfigQuery& query) const override {
    if (query.shapes.empty() || query.shapes.front().empty() || query.dtypes.size() != query.shapes.size())
      return std::nullopt;
    const auto& input = query.shapes.front();
    const std::int64_t h = input.back();
    if (h < 0) return std::nullopt;  // a dynamic H has no variants to choose between
    std::int64_t rows = 1;
    std::size_t next = 0;
    for (std::size_t i = 0; i + 1 < input.size(); ++i) {
      std::int64_t d = input[i];
      if (d < 0) {
        if (next >= query.dynamic_values.size()) return std::nullopt;
        d = query.dynamic_values[next++];
      }
      rows *= d;
    }
    return TuningKey{query.op_name, query.dtypes, {h}, {anchor(rows)}};
  }

  std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const override {
    auto kind = norm_kind(key.op);
    if (!kind || key.dtypes.empty() || key.static_dims.size() != 1) return {};
    return compiler::normalization_variants(*kind, key.dtypes.front(), key.static_dims.front());
  }
};

const SearchSpaceRegistration kRegistered(&normalization_search_space);

}  // namespace

std::shared_ptr<const SearchSpace> normalization_search_space() {
  static const auto space = std::make_shared<const NormalizationSpace>();
  return space;
}

}  // namespace rudnn::autotune
