#include "reference/attention.h"

#include <cmath>
#include <limits>

namespace rudnn::reference {

std::vector<double> attention(const std::vector<double>& query, const std::vector<double>& key,
                              const std::vector<double>& value, const AttentionShape& s, const AttentionExtra& mask,
                              const AttentionExtra& bias, double scale, bool causal) {
  const std::int64_t group = s.q_heads / s.kv_heads;
  std::vector<double> out(static_cast<std::size_t>(s.batch * s.q_heads * s.q_len * s.value_dim), 0.0);
  std::vector<double> scores(static_cast<std::size_t>(s.kv_len));
  std::vector<bool> keep(static_cast<std::size_t>(s.kv_len));
  // Index of (b, h, i, j) in a broadcast [batch', heads', Tq, Tk] extra.
  auto extra_at = [&](const AttentionExtra& x, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    const std::int64_t bb = x.batch == 1 ? 0 : b, hh = x.heads == 1 ? 0 : h;
    return static_cast<std::size_t>(((bb * x.heads + hh) * s.q_len + i) * s.kv_len + j);
  };
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.q_heads; ++h) {
      const std::int64_t kvh = h / group;
      for (std::int64_t i = 0; i < s.q_len; ++i) {
        const double* q = query.data() + ((b * s.q_heads + h) * s.q_len + i) * s.head_dim;
        double best = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < s.kv_len; ++j) {
          const auto jj = static_cast<std::size_t>(j);
          keep[jj] = !(causal && j > i + s.kv_len - s.q_len) &&
                     (mask.values.empty() || mask.values[extra_at(mask, b, h, i, j)] == 0.0);
          if (!keep[jj]) continue;
          const double* k = key.data() + ((b * s.kv_heads + kvh) * s.kv_len + j) * s.head_dim;
          double dot = 0.0;
          for (std::int64_t d = 0; d < s.head_dim; ++d) dot += q[d] * k[d];
          scores[jj] = scale * dot + (bias.values.empty() ? 0.0 : bias.values[extra_at(bias, b, h, i, j)]);
          best = std::max(best, scores[jj]);
        }
        double* o = out.data() + ((b * s.q_heads + h) * s.q_len + i) * s.value_dim;
        if (best == -std::numeric_limits<double>::infinity()) continue;  // every key excluded: zeros
        double sum = 0.0;
        for (std::int64_t j = 0; j < s.kv_len; ++j)
          if (keep[static_cast<std::size_t>(j)]) sum += std::exp(scores[static_cast<std::size_t>(j)] - best);
        for (std::int64_t j = 0; j < s.kv_len; ++j) {
          if (!keep[static_cast<std::size_t>(j)]) continue;
          const double p = std::exp(scores[static_cast<std::size_t>(j)] - best) / sum;
          const double* v = value.data() + ((b * s.kv_heads + kvh) * s.kv_len + j) * s.value_dim;
          for (std::int64_t d = 0; d < s.value_dim; ++d) o[d] += p * v[d];
        }
      }
    }
  return out;
}

}  // namespace rudnn::reference
