#pragma once
// Search spaces: for each op family, the kernel configs autotune may time for a signature, and the
// part of the autotune cache key that the family's configs depend on. Families plug in by
// registering a SearchSpace; the normalization family is built in.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rudnn/compiler/config_provider.h"
#include "rudnn/compiler/kernel_launch.h"
#include "rudnn/dtype.h"

namespace rudnn::autotune {

// The op part of an autotune cache key: what a tuned config may depend on. Dynamic extents are
// anchored to power-of-two buckets, so one tuning serves every size in its bucket.
struct TuningKey {
  std::string op;             // "rudnn.rms_norm"
  std::vector<DType> dtypes;  // of the op's present operands, in order
  std::vector<std::int64_t> static_dims;
  std::vector<std::int64_t> buckets;  // anchored dynamic extents (for normalization: rows)
  std::string to_string() const;      // "rudnn.rms_norm bf16,f32 [4096] buckets [512]"
  bool operator==(const TuningKey&) const = default;
};

// The bucket of a dynamic extent: the smallest power of two >= extent (1 for extents <= 1).
// Tuning for a bucket times exactly the bucket's size, the largest of the bucket.
std::int64_t anchor(std::int64_t extent);

class SearchSpace {
 public:
  virtual ~SearchSpace() = default;
  virtual std::string_view family() const = 0;  // "normalization": also names the problem factory (tuner.h)
  virtual bool covers(std::string_view op_name) const = 0;
  // The key of `query`, or nothing when the query lacks what the key needs (unknown dynamic
  // extents). The default keys every static extent and anchors every dynamic one.
  virtual std::optional<TuningKey> key(const compiler::ConfigQuery& query) const;
  // Every config to consider for `key`, in a fixed order; each one the op's verifier accepts.
  virtual std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const = 0;
};

// The space that covers `op_name`: the most recently registered one (so a test or a later family
// can narrow or replace a space), or null.
std::shared_ptr<const SearchSpace> search_space_for(std::string_view op_name);
void register_search_space(std::shared_ptr<const SearchSpace> space);
void unregister_search_space(const SearchSpace* space);

// The built-in normalization space: compiler::normalization_variants(kind, dtype, H); key = op,
// dtypes, static dims {H}, buckets {anchor(rows)} where rows is the product of the leading dims.
std::shared_ptr<const SearchSpace> normalization_search_space();

// The built-in MoE experts space (rudnn.swiglu_experts): the registered tiles of the call's resolved
// strategy (compiler::expert_variants); key = op, the weights' dtype, static dims {E, I, H,
// tensor_core}, buckets {anchor(rows per expert)} (rows = the dynamic rows of the dispatched input).
std::shared_ptr<const SearchSpace> moe_experts_search_space();

// The built-in attention space (rudnn.attention with strategy Autotune): every registered tile of
// every strategy that fits (compiler::attention_variants); key = op, the query dtype (and the
// bias dtype), static dims {Hq, Hkv, D, Dv, causal, mask, bias, strategy}, buckets {anchor(B),
// anchor(Tq), anchor(Tk)}.
std::shared_ptr<const SearchSpace> attention_search_space();

// The built-in spaces of the other families, each its registered tiles (compiler::*_variants):
// routing (rudnn.route, rudnn.route_sigmoid_grouped; key: dtypes, static {E, has_bias, top_k,
// renormalize[, groups, selected_groups, group_top_two]}, buckets {anchor(T)}), dispatch (static
// {H, top_k, experts}, buckets {T}), combine (dtypes {rows, weights}, static {H, top_k}, buckets
// {T}) and the gated delta rule (dtypes {query, beta}, static {K, V, chunk_size, has_state},
// buckets {B, H, T}).
std::shared_ptr<const SearchSpace> moe_routing_search_space();
std::shared_ptr<const SearchSpace> moe_dispatch_search_space();
std::shared_ptr<const SearchSpace> moe_combine_search_space();
std::shared_ptr<const SearchSpace> gated_delta_search_space();
// Convolution (forward, data and weight backward): key dtypes {input or grad_output}, static
// contracts::conv_key_words, buckets {batch}.
std::shared_ptr<const SearchSpace> convolution_search_space();

// "threads_per_row=128,rows_per_block=1" ↔ KernelConfig (the cache's text form). Nothing for text
// that is not a comma-separated list of name=integer.
std::optional<compiler::KernelConfig> parse_config(std::string_view text);

}  // namespace rudnn::autotune
