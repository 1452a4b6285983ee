#include "reference/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rudnn::reference {

namespace {

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// One query row against `keys` dense keys: out[0..value_dim) = Σ softmax(scores)_j · values[j].
// `score(j)` is the scaled score of key j; `value(j)` its value row.
template <class Score, class Value>
void attend_row(std::int64_t keys, std::int64_t value_dim, Score score, Value value, double* out) {
  std::fill(out, out + value_dim, 0.0);
  if (keys <= 0) return;  // no key visible: zeros
  std::vector<double> s(idx(keys));
  double best = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < keys; ++j) {
    s[idx(j)] = score(j);
    best = std::max(best, s[idx(j)]);
  }
  double sum = 0.0;
  for (std::int64_t j = 0; j < keys; ++j) {
    s[idx(j)] = std::exp(s[idx(j)] - best);
    sum += s[idx(j)];
  }
  for (std::int64_t j = 0; j < keys; ++j) {
    const double p = s[idx(j)] / sum;
    const double* v = value(j);
    for (std::int64_t e = 0; e < value_dim; ++e) out[e] += p * v[e];
  }
}

// The backward of one query row against `keys` dense keys, for its output gradient `grad`
// [value_dim]: P = softmax(scores) (row max subtracted), dP_j = grad · value(j),
// dS_j = P_j · (dP_j − Σ_i P_i · dP_i); calls `accumulate(j, P_j, dS_j)` once per key (dS is the
// gradient of the loss w.r.t. the scaled score, so the caller applies `scale` to q/k terms).
template <class Score, class Value, class Accumulate>
void attend_row_backward(std::int64_t keys, std::int64_t value_dim, Score score, Value value, const double* grad,
                         Accumulate accumulate) {
  if (keys <= 0) return;  // no key visible: the row's output is a constant zero
  std::vector<double> p(idx(keys)), dp(idx(keys));
  double best = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < keys; ++j) {
    p[idx(j)] = score(j);
    best = std::max(best, p[idx(j)]);
  }
  double sum = 0.0;
  for (std::int64_t j = 0; j < keys; ++j) {
    p[idx(j)] = std::exp(p[idx(j)] - best);
    sum += p[idx(j)];
  }
  double row = 0.0;  // Σ_j P_j · dP_j
  for (std::int64_t j = 0; j < keys; ++j) {
    p[idx(j)] /= sum;
    const double* v = value(j);
    double dot = 0.0;
    for (std::int64_t e = 0; e < value_dim; ++e) dot += grad[e] * v[e];
    dp[idx(j)] = dot;
    row += p[idx(j)] * dot;
  }
  for (std::int64_t j = 0; j < keys; ++j) accumulate(j, p[idx(j)], p[idx(j)] * (dp[idx(j)] - row));
}

// The number of keys query row r sees.
std::int64_t visible_keys(const PagedSchedule& schedule, std::int64_t r, bool causal) {
  const std::int64_t s = schedule.sequence_ids[idx(r)];
  const std::int64_t length = schedule.lengths[idx(s)];
  const std::int64_t p = schedule.positions[idx(r)];
  return causal ? std::min(length, p + 1) : length;
}

}  // namespace

std::int64_t paged_cache_row(const PagedSchedule& schedule, std::int64_t sequence, std::int64_t position) {
  const auto& table = schedule.tables[idx(sequence)];
  return table[idx(position / schedule.page_size)] * schedule.page_size + position % schedule.page_size;
}

std::vector<double> gather_pages(const std::vector<double>& cache, const PagedSchedule& schedule, std::int64_t sequence,
                                 std::int64_t heads, std::int64_t dim) {
  const std::int64_t length = schedule.lengths[idx(sequence)];
  const std::int64_t row_size = heads * dim;
  std::vector<double> dense(idx(length * row_size));
  for (std::int64_t j = 0; j < length; ++j) {
    const std::int64_t row = paged_cache_row(schedule, sequence, j);
    std::copy(cache.begin() + row * row_size, cache.begin() + (row + 1) * row_size, dense.begin() + j * row_size);
  }
  return dense;
}

std::vector<double> paged_attention(const std::vector<double>& query, const std::vector<double>& key_cache,
                                    const std::vector<double>& value_cache, const PagedSchedule& schedule,
                                    const PagedAttentionShape& shape, double scale, bool causal) {
  const std::int64_t queries = static_cast<std::int64_t>(schedule.sequence_ids.size());
  const std::int64_t group = shape.q_heads / shape.kv_heads;
  const std::int64_t d = shape.head_dim, dv = shape.value_dim;
  std::vector<double> out(idx(queries * shape.q_heads * dv), 0.0);
  // Gather each sequence once.
  const std::int64_t sequences = static_cast<std::int64_t>(schedule.lengths.size());
  std::vector<std::vector<double>> keys(idx(sequences)), values(idx(sequences));
  for (std::int64_t s = 0; s < sequences; ++s) {
    keys[idx(s)] = gather_pages(key_cache, schedule, s, shape.kv_heads, d);
    values[idx(s)] = gather_pages(value_cache, schedule, s, shape.kv_heads, dv);
  }
  for (std::int64_t r = 0; r < queries; ++r) {
    const std::int64_t s = schedule.sequence_ids[idx(r)];
    const std::int64_t n = visible_keys(schedule, r, causal);
    const auto& k = keys[idx(s)];
    const auto& v = values[idx(s)];
    for (std::int64_t h = 0; h < shape.q_heads; ++h) {
      const std::int64_t kvh = h / group;
      const double* q = query.data() + (r * shape.q_heads + h) * d;
      attend_row(
          n, dv,
          [&](std::int64_t j) {
            const double* kj = k.data() + (j * shape.kv_heads + kvh) * d;
            double dot = 0.0;
            for (std::int64_t e = 0; e < d; ++e) dot += q[e] * kj[e];
            return scale * dot;
          },
          [&](std::int64_t j) { return v.data() + (j * shape.kv_heads + kvh) * dv; },
          out.data() + (r * shape.q_heads + h) * dv);
    }
  }
  return out;
}

PagedAttentionGrads paged_attention_backward(const std::vector<double>& query, const std::vector<double>& key_cache,
                                             const std::vector<double>& value_cache,
                                             const std::vector<double>& grad_out, const PagedSchedule& schedule,
                                             const PagedAttentionShape& shape, double scale, bool causal) {
  const std::int64_t queries = static_cast<std::int64_t>(schedule.sequence_ids.size());
  const std::int64_t group = shape.q_heads / shape.kv_heads;
  const std::int64_t hkv = shape.kv_heads, d = shape.head_dim, dv = shape.value_dim;
  PagedAttentionGrads g;
  g.dq.assign(query.size(), 0.0);
  g.dk.assign(key_cache.size(), 0.0);
  g.dv.assign(value_cache.size(), 0.0);
  for (std::int64_t r = 0; r < queries; ++r) {
    const std::int64_t s = schedule.sequence_ids[idx(r)];
    const std::int64_t n = visible_keys(schedule, r, causal);
    // Physical slot of each visible key (read from and accumulated into directly).
    std::vector<std::int64_t> slot(idx(std::max<std::int64_t>(n, 0)));
    for (std::int64_t j = 0; j < n; ++j) slot[idx(j)] = paged_cache_row(schedule, s, j);
    for (std::int64_t h = 0; h < shape.q_heads; ++h) {
      const std::int64_t kvh = h / group;
      const std::int64_t qrow = r * shape.q_heads + h;
      const double* q = query.data() + qrow * d;
      const double* go = grad_out.data() + qrow * dv;
      double* dq = g.dq.data() + qrow * d;
      auto key = [&](std::int64_t j) { return key_cache.data() + (slot[idx(j)] * hkv + kvh) * d; };
      attend_row_backward(
          n, dv,
          [&](std::int64_t j) {
            const double* kj = key(j);
            double dot = 0.0;
            for (std::int64_t e = 0; e < d; ++e) dot += q[e] * kj[e];
            return scale * dot;
          },
          [&](std::int64_t j) { return value_cache.data() + (slot[idx(j)] * hkv + kvh) * dv; }, go,
          [&](std::int64_t j, double p, double ds) {
            const double* kj = key(j);
            double* dk = g.dk.data() + (slot[idx(j)] * hkv + kvh) * d;
            double* dvj = g.dv.data() + (slot[idx(j)] * hkv + kvh) * dv;
            for (std::int64_t e = 0; e < d; ++e) {
              dq[e] += scale * ds * kj[e];  // dq = scale · Σ_j dS_j · k_j
              dk[e] += scale * ds * q[e];   // dk_j += scale · dS_j · q
            }
            for (std::int64_t e = 0; e < dv; ++e) dvj[e] += p * go[e];  // dv_j += P_j · grad_out
          });
    }
  }
  return g;
}

std::vector<double> paged_mla(const std::vector<double>& query, const std::vector<double>& query_rope,
                              const std::vector<double>& latent, const std::vector<double>& key_rope,
                              const PagedSchedule& schedule, std::int64_t heads, std::int64_t latent_dim,
                              std::int64_t rope_dim, double scale, bool causal) {
  const std::int64_t queries = static_cast<std::int64_t>(schedule.sequence_ids.size());
  const std::int64_t R = latent_dim, P = rope_dim;
  std::vector<double> out(idx(queries * heads * R), 0.0);
  const std::int64_t sequences = static_cast<std::int64_t>(schedule.lengths.size());
  std::vector<std::vector<double>> lat(idx(sequences)), rope(idx(sequences));
  for (std::int64_t s = 0; s < sequences; ++s) {
    lat[idx(s)] = gather_pages(latent, schedule, s, 1, R);
    rope[idx(s)] = gather_pages(key_rope, schedule, s, 1, P);
  }
  for (std::int64_t r = 0; r < queries; ++r) {
    const std::int64_t s = schedule.sequence_ids[idx(r)];
    const std::int64_t n = visible_keys(schedule, r, causal);
    const auto& c = lat[idx(s)];
    const auto& kp = rope[idx(s)];
    for (std::int64_t h = 0; h < heads; ++h) {
      const double* q = query.data() + (r * heads + h) * R;
      const double* qp = query_rope.data() + (r * heads + h) * P;
      attend_row(
          n, R,
          [&](std::int64_t j) {
            double dot = 0.0;
            for (std::int64_t e = 0; e < R; ++e) dot += q[e] * c[idx(j * R + e)];
            for (std::int64_t e = 0; e < P; ++e) dot += qp[e] * kp[idx(j * P + e)];
            return scale * dot;
          },
          [&](std::int64_t j) { return c.data() + j * R; }, out.data() + (r * heads + h) * R);
    }
  }
  return out;
}

PagedMlaGrads paged_mla_backward(const std::vector<double>& query, const std::vector<double>& query_rope,
                                 const std::vector<double>& latent, const std::vector<double>& key_rope,
                                 const std::vector<double>& grad_out, const PagedSchedule& schedule, std::int64_t heads,
                                 std::int64_t latent_dim, std::int64_t rope_dim, double scale, bool causal) {
  const std::int64_t queries = static_cast<std::int64_t>(schedule.sequence_ids.size());
  const std::int64_t R = latent_dim, P = rope_dim;
  PagedMlaGrads g;
  g.dq.assign(query.size(), 0.0);
  g.dq_rope.assign(query_rope.size(), 0.0);
  g.dlatent.assign(latent.size(), 0.0);
  g.dk_rope.assign(key_rope.size(), 0.0);
  for (std::int64_t r = 0; r < queries; ++r) {
    const std::int64_t s = schedule.sequence_ids[idx(r)];
    const std::int64_t n = visible_keys(schedule, r, causal);
    std::vector<std::int64_t> slot(idx(std::max<std::int64_t>(n, 0)));
    for (std::int64_t j = 0; j < n; ++j) slot[idx(j)] = paged_cache_row(schedule, s, j);
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t qrow = r * heads + h;
      const double* q = query.data() + qrow * R;
      const double* qp = query_rope.data() + qrow * P;
      const double* go = grad_out.data() + qrow * R;
      double* dq = g.dq.data() + qrow * R;
      double* dqp = g.dq_rope.data() + qrow * P;
      attend_row_backward(
          n, R,
          [&](std::int64_t j) {
            const double* c = latent.data() + slot[idx(j)] * R;
            const double* kp = key_rope.data() + slot[idx(j)] * P;
            double dot = 0.0;
            for (std::int64_t e = 0; e < R; ++e) dot += q[e] * c[e];
            for (std::int64_t e = 0; e < P; ++e) dot += qp[e] * kp[e];
            return scale * dot;
          },
          [&](std::int64_t j) { return latent.data() + slot[idx(j)] * R; }, go,
          [&](std::int64_t j, double p, double ds) {
            const double* c = latent.data() + slot[idx(j)] * R;
            const double* kp = key_rope.data() + slot[idx(j)] * P;
            double* dc = g.dlatent.data() + slot[idx(j)] * R;
            double* dkp = g.dk_rope.data() + slot[idx(j)] * P;
            for (std::int64_t e = 0; e < R; ++e) {
              dq[e] += scale * ds * c[e];              // dQ[:, :R]
              dc[e] += scale * ds * q[e] + p * go[e];  // dK[:, :R] + dV
            }
            for (std::int64_t e = 0; e < P; ++e) {
              dqp[e] += scale * ds * kp[e];  // dQ[:, R:]
              dkp[e] += scale * ds * qp[e];  // dK[:, R:]
            }
          });
    }
  }
  return g;
}

void paged_append(const std::vector<double>& key, const std::vector<double>& value, std::vector<double>& key_cache,
                  std::vector<double>& value_cache, const PagedSchedule& schedule, std::int64_t kv_heads,
                  std::int64_t head_dim, std::int64_t value_dim) {
  const std::int64_t queries = static_cast<std::int64_t>(schedule.sequence_ids.size());
  const std::int64_t ks = kv_heads * head_dim, vs = kv_heads * value_dim;
  for (std::int64_t r = 0; r < queries; ++r) {
    const std::int64_t row = paged_cache_row(schedule, schedule.sequence_ids[idx(r)], schedule.positions[idx(r)]);
    std::copy(key.begin() + r * ks, key.begin() + (r + 1) * ks, key_cache.begin() + row * ks);
    std::copy(value.begin() + r * vs, value.begin() + (r + 1) * vs, value_cache.begin() + row * vs);
  }
}

}  // namespace rudnn::reference
