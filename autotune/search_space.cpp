// The search-space registry, shape anchoring and the built-in normalization space.
#include "rudnn/autotune/search_space.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <mutex>

#include <fmt/format.h>

#include "rudnn/compiler/conv.h"
#include "rudnn/compiler/pipeline.h"

namespace rudnn::autotune {

std::string TuningKey::to_string() const {
  std::vector<std::string_view> names;
  for (DType t : dtypes) names.push_back(dtype_name(t));
  return fmt::format("{} {} [{}] buckets [{}]", op, fmt::join(names, ","), fmt::join(static_dims, ", "),
                     fmt::join(buckets, ", "));
}

std::int64_t anchor(std::int64_t extent) {
  if (extent <= 1) return 1;
  const auto u = static_cast<std::uint64_t>(extent);
  if (u > (std::uint64_t{1} << 62)) return std::int64_t{1} << 62;  // beyond any real extent
  return static_cast<std::int64_t>(std::bit_ceil(u));
}

std::optional<TuningKey> SearchSpace::key(const compiler::ConfigQuery& query) const {
  TuningKey k;
  k.op = query.op_name;
  k.dtypes = query.dtypes;
  std::size_t next = 0;
  for (const auto& shape : query.shapes)
    for (std::int64_t d : shape) {
      if (d >= 0) {
        k.static_dims.push_back(d);
        continue;
      }
      if (next >= query.dynamic_values.size()) return std::nullopt;
      k.buckets.push_back(anchor(query.dynamic_values[next++]));
    }
  return k;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const SearchSpace>> spaces;  // later entries win
};

Registry& registry() {
  static Registry r;
  static const bool builtins = [] {
    r.spaces.push_back(normalization_search_space());
    r.spaces.push_back(moe_experts_search_space());
    r.spaces.push_back(attention_search_space());
    r.spaces.push_back(moe_routing_search_space());
    r.spaces.push_back(moe_dispatch_search_space());
    r.spaces.push_back(moe_combine_search_space());
    r.spaces.push_back(gated_delta_search_space());
    r.spaces.push_back(convolution_search_space());
    return true;
  }();
  (void)builtins;
  return r;
}

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

// A space written as two functions: the families whose key is a few extents and option words.
class FunctionSpace final : public SearchSpace {
 public:
  using KeyOf = std::optional<TuningKey> (*)(const compiler::ConfigQuery& query);
  using Candidates = std::vector<compiler::KernelConfig> (*)(const TuningKey& key);
  FunctionSpace(std::string_view family, std::vector<std::string_view> ops, KeyOf key_of, Candidates candidates)
      : family_(family), ops_(std::move(ops)), key_of_(key_of), candidates_(candidates) {}
  std::string_view family() const override { return family_; }
  bool covers(std::string_view op) const override { return std::find(ops_.begin(), ops_.end(), op) != ops_.end(); }
  std::optional<TuningKey> key(const compiler::ConfigQuery& query) const override {
    if (!covers(query.op_name) || query.shapes.size() != query.dtypes.size()) return std::nullopt;
    return key_of_(query);
  }
  std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const override {
    return covers(key.op) ? candidates_(key) : std::vector<compiler::KernelConfig>{};
  }

 private:
  std::string_view family_;
  std::vector<std::string_view> ops_;
  KeyOf key_of_;
  Candidates candidates_;
};

bool all_static(std::initializer_list<std::int64_t> extents) {
  return std::all_of(extents.begin(), extents.end(), [](std::int64_t e) { return e > 0; });
}

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

// Convolution: the query's options are contracts::conv_key_words; the batch is the first dynamic
// value (every operand's dynamic dim is its batch).
std::optional<TuningKey> conv_key(const compiler::ConfigQuery& q) {
  if (q.dtypes.empty() || q.dynamic_values.empty()) return std::nullopt;
  if (!contracts::conv_signature_from_key(q.options, q.dtypes[0], 1, nullptr)) return std::nullopt;
  return TuningKey{q.op_name, {q.dtypes[0]}, q.options, {anchor(q.dynamic_values[0])}};
}

std::vector<compiler::KernelConfig> conv_candidates(const TuningKey& k) {
  if (k.dtypes.empty() || k.buckets.empty()) return {};
  auto sig = contracts::conv_signature_from_key(k.static_dims, k.dtypes[0], k.buckets[0], nullptr);
  if (!sig) return {};
  return compiler::conv_variants(*sig, true);
}

}  // namespace

std::shared_ptr<const SearchSpace> convolution_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "convolution",
      std::vector<std::string_view>{"rudnn.conv_forward", "rudnn.conv_data_backward", "rudnn.conv_weight_backward"},
      &conv_key, &conv_candidates);
  return space;
}

std::shared_ptr<const SearchSpace> attention_search_space() {
  static const auto space = std::make_shared<const AttentionSpace>();
  return space;
}

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

std::shared_ptr<const SearchSpace> gated_delta_search_space() {
  static const auto space = std::make_shared<const FunctionSpace>(
      "gated_delta", std::vector<std::string_view>{"rudnn.gated_delta"}, &gated_delta_key, [](const TuningKey& k) {
        return compiler::gated_delta_variants(k.static_dims.at(2) > 0, k.static_dims.at(0), k.dtypes.at(0));
      });
  return space;
}

std::shared_ptr<const SearchSpace> normalization_search_space() {
  static const auto space = std::make_shared<const NormalizationSpace>();
  return space;
}

std::shared_ptr<const SearchSpace> search_space_for(std::string_view op_name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto it = r.spaces.rbegin(); it != r.spaces.rend(); ++it)
    if ((*it)->covers(op_name)) return *it;
  return nullptr;
}

void register_search_space(std::shared_ptr<const SearchSpace> space) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.spaces.push_back(std::move(space));
}

void unregister_search_space(const SearchSpace* space) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.spaces, [&](const auto& s) { return s.get() == space; });
}

std::optional<compiler::KernelConfig> parse_config(std::string_view text) {
  compiler::KernelConfig config;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    std::int64_t value = 0;
    const std::string_view number = item.substr(eq + 1);
    auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || ptr != number.data() + number.size() || number.empty()) return std::nullopt;
    config.values.emplace_back(std::string(item.substr(0, eq)), value);
  }
  if (config.values.empty()) return std::nullopt;
  return config;
}

}  // namespace rudnn::autotune
