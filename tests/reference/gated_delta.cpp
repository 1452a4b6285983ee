#include "reference/gated_delta.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace rudnn::reference {
namespace {

void check_size(const std::vector<double>& x, std::int64_t n, const char* name) {
  if (static_cast<std::int64_t>(x.size()) != n)
    throw std::invalid_argument(std::string("reference gated_delta: ") + name + " has " + std::to_string(x.size()) +
                                " elements, expected " + std::to_string(n));
}

}  // namespace

GatedDeltaResult gated_delta(const std::vector<double>& query, const std::vector<double>& key,
                             const std::vector<double>& value, const std::vector<double>& beta,
                             const std::vector<double>& log_decay, const std::vector<double>& initial_state,
                             const GatedDeltaShape& s, double query_scale) {
  const std::int64_t bh_count = s.batch * s.heads, T = s.seq, K = s.key_dim, V = s.value_dim;
  if (s.batch < 0 || s.heads < 0 || T < 0 || K <= 0 || V <= 0)
    throw std::invalid_argument("reference gated_delta: bad shape");
  check_size(query, bh_count * T * K, "query");
  check_size(key, bh_count * T * K, "key");
  check_size(value, bh_count * T * V, "value");
  check_size(beta, bh_count * T, "beta");
  check_size(log_decay, bh_count * T, "log_decay");
  if (!initial_state.empty()) check_size(initial_state, bh_count * K * V, "initial_state");

  GatedDeltaResult r;
  r.output.assign(static_cast<std::size_t>(bh_count * T * V), 0.0);
  r.final_state.assign(static_cast<std::size_t>(bh_count * K * V), 0.0);
  std::vector<double> u(static_cast<std::size_t>(V));
  for (std::int64_t bh = 0; bh < bh_count; ++bh) {
    double* S = r.final_state.data() + bh * K * V;  // S[k * V + v]
    if (!initial_state.empty())
      for (std::int64_t i = 0; i < K * V; ++i) S[i] = initial_state[static_cast<std::size_t>(bh * K * V + i)];
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t row = bh * T + t;
      const double* q = query.data() + row * K;
      const double* k = key.data() + row * K;
      const double* v = value.data() + row * V;
      const double decay = std::exp(log_decay[static_cast<std::size_t>(row)]);
      const double b = beta[static_cast<std::size_t>(row)];
      for (std::int64_t i = 0; i < K * V; ++i) S[i] *= decay;
      for (std::int64_t c = 0; c < V; ++c) {
        double sk = 0.0;
        for (std::int64_t i = 0; i < K; ++i) sk += S[i * V + c] * k[i];
        u[static_cast<std::size_t>(c)] = b * (v[c] - sk);
      }
      for (std::int64_t i = 0; i < K; ++i)
        for (std::int64_t c = 0; c < V; ++c) S[i * V + c] += k[i] * u[static_cast<std::size_t>(c)];
      double* o = r.output.data() + row * V;
      for (std::int64_t c = 0; c < V; ++c) {
        double acc = 0.0;
        for (std::int64_t i = 0; i < K; ++i) acc += S[i * V + c] * (query_scale * q[i]);
        o[c] = acc;
      }
    }
  }
  return r;
}

}  // namespace rudnn::reference
