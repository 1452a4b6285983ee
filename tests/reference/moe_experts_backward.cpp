#include "reference/moe_experts_backward.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace rudnn::reference {

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// One row x [H] through expert e: y [H] (and the intermediates backward needs).
struct RowForward {
  std::vector<double> a, b, s, hh, y;  // [I], [I], [I] σ(a), [I] silu(a)·b, [H]
};

RowForward row_forward(const double* x, std::int64_t e, const std::vector<double>& gate, const std::vector<double>& up,
                       const std::vector<double>& down, std::int64_t hidden, std::int64_t inter) {
  RowForward f;
  f.a.assign(at(inter), 0.0);
  f.b.assign(at(inter), 0.0);
  f.s.assign(at(inter), 0.0);
  f.hh.assign(at(inter), 0.0);
  f.y.assign(at(hidden), 0.0);
  for (std::int64_t i = 0; i < inter; ++i) {
    const double* g = gate.data() + (e * inter + i) * hidden;
    const double* u = up.data() + (e * inter + i) * hidden;
    double a = 0, b = 0;
    for (std::int64_t h = 0; h < hidden; ++h) {
      a += g[h] * x[h];
      b += u[h] * x[h];
    }
    f.a[at(i)] = a;
    f.b[at(i)] = b;
    f.s[at(i)] = sigmoid(a);
    f.hh[at(i)] = a * f.s[at(i)] * b;
  }
  for (std::int64_t h = 0; h < hidden; ++h) {
    const double* d = down.data() + (e * hidden + h) * inter;
    double y = 0;
    for (std::int64_t i = 0; i < inter; ++i) y += d[i] * f.hh[at(i)];
    f.y[at(h)] = y;
  }
  return f;
}

// The backward of one row x of expert e for its output gradient dy [H]: writes dx [H], adds the
// row's terms to dgate, dup, ddown.
void row_backward(const double* x, const double* dy, std::int64_t e, const std::vector<double>& gate,
                  const std::vector<double>& up, const std::vector<double>& down, std::int64_t hidden,
                  std::int64_t inter, double* dx, std::vector<double>& dgate, std::vector<double>& dup,
                  std::vector<double>& ddown) {
  const RowForward f = row_forward(x, e, gate, up, down, hidden, inter);
  std::fill(dx, dx + hidden, 0.0);
  for (std::int64_t i = 0; i < inter; ++i) {
    double dhh = 0;
    for (std::int64_t h = 0; h < hidden; ++h) dhh += dy[h] * down[at((e * hidden + h) * inter + i)];
    const double a = f.a[at(i)], b = f.b[at(i)], s = f.s[at(i)];
    const double da = dhh * b * (s * (1.0 + a * (1.0 - s)));
    const double db = dhh * a * s;
    for (std::int64_t h = 0; h < hidden; ++h) {
      const std::size_t w = at((e * inter + i) * hidden + h);
      dx[h] += da * gate[w] + db * up[w];
      dgate[w] += da * x[h];
      dup[w] += db * x[h];
    }
  }
  for (std::int64_t h = 0; h < hidden; ++h)
    for (std::int64_t i = 0; i < inter; ++i) ddown[at((e * hidden + h) * inter + i)] += dy[h] * f.hh[at(i)];
}

// u_j of the selected experts of token t (before renormalization and scale) and, for softmax, the
// probabilities over all experts.
void router_scores(const MoeChain& c, std::int64_t t, std::vector<double>& p, std::vector<double>& u) {
  const double* x = c.logits.data() + t * c.experts;
  p.assign(at(c.experts), 0.0);
  if (!c.router.sigmoid) {
    double m = x[0];
    for (std::int64_t e = 1; e < c.experts; ++e) m = std::max(m, x[e]);
    double sum = 0;
    for (std::int64_t e = 0; e < c.experts; ++e) sum += (p[at(e)] = std::exp(x[e] - m));
    for (double& v : p) v /= sum;
  } else {
    for (std::int64_t e = 0; e < c.experts; ++e) p[at(e)] = sigmoid(x[e]);
  }
  u.assign(at(c.top_k), 0.0);
  for (std::int64_t j = 0; j < c.top_k; ++j) u[at(j)] = p[c.indices[at(t * c.top_k + j)]];
}

}  // namespace

ExpertsGrads swiglu_experts_backward(const std::vector<double>& rows, const std::vector<double>& dy,
                                     const std::vector<std::uint32_t>& offsets, const std::vector<double>& gate,
                                     const std::vector<double>& up, const std::vector<double>& down,
                                     std::int64_t hidden, std::int64_t inter) {
  const std::int64_t experts = static_cast<std::int64_t>(offsets.size()) - 1;
  ExpertsGrads g;
  g.dinput.assign(rows.size(), 0.0);
  g.dgate.assign(at(experts * inter * hidden), 0.0);
  g.dup.assign(at(experts * inter * hidden), 0.0);
  g.ddown.assign(at(experts * hidden * inter), 0.0);
  for (std::int64_t e = 0; e < experts; ++e)
    for (std::int64_t r = offsets[at(e)]; r < static_cast<std::int64_t>(offsets[at(e + 1)]); ++r)
      row_backward(rows.data() + r * hidden, dy.data() + r * hidden, e, gate, up, down, hidden, inter,
                   g.dinput.data() + r * hidden, g.dgate, g.dup, g.ddown);
  return g;
}

std::vector<double> moe_chain_weights(const MoeChain& c) {
  std::vector<double> w(at(c.tokens * c.top_k));
  std::vector<double> p, u;
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    router_scores(c, t, p, u);
    double sum = 0;
    for (double v : u) sum += v;
    for (std::int64_t j = 0; j < c.top_k; ++j)
      w[at(t * c.top_k + j)] = c.router.scale * (c.router.renormalize ? u[at(j)] / sum : u[at(j)]);
  }
  return w;
}

std::vector<double> moe_chain_output(const MoeChain& c) {
  const std::vector<double> w = moe_chain_weights(c);
  std::vector<double> out(at(c.tokens * c.hidden), 0.0);
  for (std::int64_t t = 0; t < c.tokens; ++t)
    for (std::int64_t j = 0; j < c.top_k; ++j) {
      const std::int64_t e = c.indices[at(t * c.top_k + j)];
      const RowForward f = row_forward(c.input.data() + t * c.hidden, e, c.gate, c.up, c.down, c.hidden, c.inter);
      for (std::int64_t h = 0; h < c.hidden; ++h) out[at(t * c.hidden + h)] += w[at(t * c.top_k + j)] * f.y[at(h)];
    }
  return out;
}

double moe_chain_loss(const MoeChain& c) {
  double loss = 0;
  for (double v : moe_chain_output(c)) loss += v * v;
  return loss;
}

ChainGrads moe_chain_backward(const MoeChain& c) {
  const std::int64_t T = c.tokens, E = c.experts, K = c.top_k, H = c.hidden, I = c.inter;
  const std::vector<double> w = moe_chain_weights(c);
  ChainGrads g;
  g.output = moe_chain_output(c);
  g.dlogits.assign(at(T * E), 0.0);
  g.dinput.assign(at(T * H), 0.0);
  g.dgate.assign(at(E * I * H), 0.0);
  g.dup.assign(at(E * I * H), 0.0);
  g.ddown.assign(at(E * H * I), 0.0);
  g.dweights.assign(at(T * K), 0.0);
  std::vector<double> dy(at(H)), dx(at(H)), p, u;
  for (std::int64_t t = 0; t < T; ++t) {
    const double* x = c.input.data() + t * H;
    const double* gout = g.output.data() + t * H;  // ∂loss/∂out = 2·out, applied below
    for (std::int64_t j = 0; j < K; ++j) {
      const std::int64_t e = c.indices[at(t * K + j)];
      const RowForward f = row_forward(x, e, c.gate, c.up, c.down, H, I);
      double dw = 0;
      for (std::int64_t h = 0; h < H; ++h) {
        dw += 2.0 * gout[h] * f.y[at(h)];
        dy[at(h)] = w[at(t * K + j)] * 2.0 * gout[h];
      }
      g.dweights[at(t * K + j)] = dw;
      row_backward(x, dy.data(), e, c.gate, c.up, c.down, H, I, dx.data(), g.dgate, g.dup, g.ddown);
      for (std::int64_t h = 0; h < H; ++h) g.dinput[at(t * H + h)] += dx[at(h)];
    }
    // The router: w_j = scale · u_j / S (S = Σ u) or scale · u_j; then u through softmax or σ.
    router_scores(c, t, p, u);
    double sum = 0, gu_dot = 0;
    for (std::int64_t j = 0; j < K; ++j) {
      sum += u[at(j)];
      gu_dot += g.dweights[at(t * K + j)] * u[at(j)];
    }
    std::vector<double> du(at(K));
    for (std::int64_t j = 0; j < K; ++j) {
      const double gj = g.dweights[at(t * K + j)];
      du[at(j)] = c.router.scale * (c.router.renormalize ? gj / sum - gu_dot / (sum * sum) : gj);
    }
    double* dl = g.dlogits.data() + t * E;
    if (!c.router.sigmoid) {
      // ∂p_m/∂x_k = p_m (δ_mk − p_k).
      double dot = 0;
      for (std::int64_t j = 0; j < K; ++j) {
        const std::uint32_t m = c.indices[at(t * K + j)];
        dl[m] += du[at(j)] * p[m];
        dot += du[at(j)] * p[m];
      }
      for (std::int64_t k = 0; k < E; ++k) dl[k] -= p[at(k)] * dot;
    } else {
      for (std::int64_t j = 0; j < K; ++j) {
        const std::uint32_t m = c.indices[at(t * K + j)];
        dl[m] += du[at(j)] * p[m] * (1.0 - p[m]);
      }
    }
  }
  return g;
}

}  // namespace rudnn::reference
