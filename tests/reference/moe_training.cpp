#include "reference/moe_training.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rudnn::reference {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool legal_row(const std::vector<std::int64_t>& indices, std::int64_t t, std::int64_t experts, std::int64_t top_k) {
  for (std::int64_t j = 0; j < top_k; ++j) {
    const std::int64_t i = indices[static_cast<std::size_t>(t * top_k + j)];
    if (i < 0 || i >= experts) return false;
  }
  return true;
}

// The scores of one row: softmax over all experts, or each expert's sigmoid.
std::vector<double> scores(const double* x, std::int64_t experts, bool sigmoid) {
  std::vector<double> p(static_cast<std::size_t>(experts));
  if (sigmoid) {
    for (std::int64_t e = 0; e < experts; ++e)
      p[static_cast<std::size_t>(e)] = 1.0 / (1.0 + std::exp(-x[static_cast<std::size_t>(e)]));
    return p;
  }
  const double mx = *std::max_element(x, x + experts);
  double sum = 0;
  for (std::int64_t e = 0; e < experts; ++e) sum += p[static_cast<std::size_t>(e)] = std::exp(x[e] - mx);
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

std::vector<double> router_weights(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                   std::int64_t rows, std::int64_t experts, std::int64_t top_k,
                                   const RouterSpec& spec) {
  std::vector<double> w(static_cast<std::size_t>(rows * top_k), kNaN);
  for (std::int64_t t = 0; t < rows; ++t) {
    if (!legal_row(indices, t, experts, top_k)) continue;
    const auto p = scores(logits.data() + t * experts, experts, spec.sigmoid);
    double* out = w.data() + t * top_k;
    double sum = 0;
    for (std::int64_t j = 0; j < top_k; ++j)
      sum += out[j] = p[static_cast<std::size_t>(indices[static_cast<std::size_t>(t * top_k + j)])];
    for (std::int64_t j = 0; j < top_k; ++j) out[j] = (spec.renormalize ? out[j] / sum : out[j]) * spec.scale;
  }
  return w;
}

std::vector<double> router_backward(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                    const std::vector<double>& grad_weights, std::int64_t rows, std::int64_t experts,
                                    std::int64_t top_k, const RouterSpec& spec) {
  std::vector<double> dx(static_cast<std::size_t>(rows * experts), kNaN);
  for (std::int64_t t = 0; t < rows; ++t) {
    if (!legal_row(indices, t, experts, top_k)) continue;
    const auto p = scores(logits.data() + t * experts, experts, spec.sigmoid);
    const std::int64_t* idx = indices.data() + t * top_k;
    const double* g = grad_weights.data() + t * top_k;
    // u_j and S = Σ u_j.
    std::vector<double> u(static_cast<std::size_t>(top_k));
    double sum = 0, gu = 0;
    for (std::int64_t j = 0; j < top_k; ++j) {
      u[static_cast<std::size_t>(j)] = p[static_cast<std::size_t>(idx[j])];
      sum += u[static_cast<std::size_t>(j)];
      gu += g[j] * u[static_cast<std::size_t>(j)];
    }
    // G_j = ∂L/∂u_j: s·g_j, or s·(g_j / S − Σ g u / S²) when renormalizing.
    std::vector<double> gsum(static_cast<std::size_t>(experts), 0.0);  // Σ_{j: i_j = e} G_j
    double gp = 0;                                                     // Σ_j G_j u_j
    for (std::int64_t j = 0; j < top_k; ++j) {
      const double gj = spec.renormalize ? spec.scale * (g[j] / sum - gu / (sum * sum)) : spec.scale * g[j];
      gsum[static_cast<std::size_t>(idx[j])] += gj;
      gp += gj * u[static_cast<std::size_t>(j)];
    }
    double* out = dx.data() + t * experts;
    for (std::int64_t e = 0; e < experts; ++e) {
      const double pe = p[static_cast<std::size_t>(e)], ge = gsum[static_cast<std::size_t>(e)];
      // Softmax: ∂p_a/∂x_b = p_a (δ_ab − p_b). Sigmoid: ∂σ_a/∂x_b = δ_ab σ_a (1 − σ_a).
      out[e] = spec.sigmoid ? ge * pe * (1 - pe) : pe * ge - pe * gp;
    }
  }
  return dx;
}

std::vector<double> router_backward_fd(const std::vector<double>& logits, const std::vector<std::int64_t>& indices,
                                       const std::vector<double>& grad_weights, std::int64_t rows, std::int64_t experts,
                                       std::int64_t top_k, const RouterSpec& spec, double step) {
  std::vector<double> dx(static_cast<std::size_t>(rows * experts), kNaN);
  for (std::int64_t t = 0; t < rows; ++t) {
    if (!legal_row(indices, t, experts, top_k)) continue;
    std::vector<double> x(logits.begin() + t * experts, logits.begin() + (t + 1) * experts);
    const std::vector<std::int64_t> idx(indices.begin() + t * top_k, indices.begin() + (t + 1) * top_k);
    auto loss = [&](const std::vector<double>& xs) {
      const auto w = router_weights(xs, idx, 1, experts, top_k, spec);
      double l = 0;
      for (std::int64_t j = 0; j < top_k; ++j)
        l += grad_weights[static_cast<std::size_t>(t * top_k + j)] * w[static_cast<std::size_t>(j)];
      return l;
    };
    for (std::int64_t e = 0; e < experts; ++e) {
      const double keep = x[static_cast<std::size_t>(e)];
      x[static_cast<std::size_t>(e)] = keep + step;
      const double up = loss(x);
      x[static_cast<std::size_t>(e)] = keep - step;
      const double down = loss(x);
      x[static_cast<std::size_t>(e)] = keep;
      dx[static_cast<std::size_t>(t * experts + e)] = (up - down) / (2 * step);
    }
  }
  return dx;
}

std::vector<double> combine(const std::vector<double>& expert_output, const std::vector<std::uint32_t>& slots,
                            const std::vector<double>& weights, std::int64_t rows, std::int64_t top_k,
                            std::int64_t hidden) {
  std::vector<double> out(static_cast<std::size_t>(rows * hidden), 0.0);
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t j = 0; j < top_k; ++j) {
      const auto a = static_cast<std::size_t>(t * top_k + j);
      const double* y = expert_output.data() + static_cast<std::int64_t>(slots[a]) * hidden;
      for (std::int64_t h = 0; h < hidden; ++h) out[static_cast<std::size_t>(t * hidden + h)] += weights[a] * y[h];
    }
  return out;
}

CombineGrads combine_backward(const std::vector<double>& expert_output, const std::vector<double>& grad_output,
                              const std::vector<std::uint32_t>& slots, const std::vector<double>& weights,
                              std::int64_t rows, std::int64_t top_k, std::int64_t hidden) {
  CombineGrads r;
  r.dexpert.assign(static_cast<std::size_t>(rows * top_k * hidden), 0.0);
  r.dweights.assign(static_cast<std::size_t>(rows * top_k), 0.0);
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t j = 0; j < top_k; ++j) {
      const auto a = static_cast<std::size_t>(t * top_k + j);
      const std::int64_t slot = slots[a];
      const double* y = expert_output.data() + slot * hidden;
      const double* g = grad_output.data() + t * hidden;
      double dw = 0;
      for (std::int64_t h = 0; h < hidden; ++h) {
        r.dexpert[static_cast<std::size_t>(slot * hidden + h)] = weights[a] * g[h];
        dw += g[h] * y[h];
      }
      r.dweights[a] = dw;
    }
  return r;
}

std::vector<double> dispatch_backward(const std::vector<double>& drows, const std::vector<std::uint32_t>& slots,
                                      std::int64_t rows, std::int64_t top_k, std::int64_t hidden) {
  std::vector<double> out(static_cast<std::size_t>(rows * hidden), 0.0);
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t j = 0; j < top_k; ++j) {
      const double* d =
          drows.data() + static_cast<std::int64_t>(slots[static_cast<std::size_t>(t * top_k + j)]) * hidden;
      for (std::int64_t h = 0; h < hidden; ++h) out[static_cast<std::size_t>(t * hidden + h)] += d[h];
    }
  return out;
}

}  // namespace rudnn::reference
