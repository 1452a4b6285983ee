#pragma once
// FP64 oracle of attention (SPEC §5): grouped-query heads, optional boolean mask (nonzero =
// excluded) and float bias, each broadcast over batch and/or heads, scale, causal aligned to the
// bottom right (query i sees key j iff j ≤ i + Tk − Tq), rows with every key excluded → zeros.
// Plain C++, no code shared with the templates.
#include <cstdint>
#include <vector>

namespace rudnn::reference {

struct AttentionShape {
  std::int64_t batch = 1, q_heads = 1, kv_heads = 1, q_len = 1, kv_len = 1, head_dim = 1, value_dim = 1;
};

// A mask or bias [mask_batch ∈ {1, B}, mask_heads ∈ {1, Hq}, Tq, Tk]; empty values = none.
struct AttentionExtra {
  std::vector<double> values;
  std::int64_t batch = 1, heads = 1;
};

// query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] → [B, Hq, Tq, Dv].
// scores = scale · q·k + bias; masked and causally hidden keys excluded; softmax over the rest.
std::vector<double> attention(const std::vector<double>& query, const std::vector<double>& key,
                              const std::vector<double>& value, const AttentionShape& shape, const AttentionExtra& mask,
                              const AttentionExtra& bias, double scale, bool causal);

}  // namespace rudnn::reference
