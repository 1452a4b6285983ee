#include "reference/moe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace rudnn::reference {

namespace {

// The selection order: larger key first, a NaN key ahead of every number (only grouped routing's
// +inf + −inf group score is NaN), ties to the smaller index (stable sort).
bool ahead(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
  return a > b;
}

// Indices of the k best by `key` in the order above, among `allowed`.
std::vector<std::int64_t> top_indices(const std::vector<double>& key, const std::vector<bool>& allowed,
                                      std::int64_t k) {
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(key.size()); ++i)
    if (allowed[static_cast<std::size_t>(i)]) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) {
    return ahead(key[static_cast<std::size_t>(a)], key[static_cast<std::size_t>(b)]);
  });
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

void poisoned_row(Routing& r, std::int64_t top_k, std::int64_t experts) {
  for (std::int64_t j = 0; j < top_k; ++j) {
    r.indices.push_back(static_cast<std::uint32_t>(j));
    r.weights.push_back(std::numeric_limits<double>::quiet_NaN());
  }
  r.keys.insert(r.keys.end(), static_cast<std::size_t>(experts), std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

Routing route_softmax_topk(const std::vector<double>& logits, std::int64_t rows, std::int64_t experts,
                           std::int64_t top_k, bool renormalize) {
  Routing r;
  for (std::int64_t t = 0; t < rows; ++t) {
    std::vector<double> x(logits.begin() + t * experts, logits.begin() + (t + 1) * experts);
    bool bad = true;  // all −inf
    for (double v : x) {
      if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) {
        bad = true;
        break;
      }
      if (v != -std::numeric_limits<double>::infinity()) bad = false;
    }
    if (bad) {
      poisoned_row(r, top_k, experts);
      continue;
    }
    const double mx = *std::max_element(x.begin(), x.end());
    double sum = 0.0;
    for (double v : x) sum += std::exp(v - mx);
    // SPEC §3: the FP32 probabilities are ranked, so rank the FP64 ones rounded to FP32.
    std::vector<double> p(x.size()), p32(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      p[i] = std::exp(x[i] - mx) / sum;
      p32[i] = static_cast<float>(p[i]);
    }
    auto picked = top_indices(p32, std::vector<bool>(x.size(), true), top_k);
    double sel = 0.0;
    for (auto i : picked) sel += p[static_cast<std::size_t>(i)];
    for (auto i : picked) {
      r.indices.push_back(static_cast<std::uint32_t>(i));
      r.weights.push_back(renormalize ? p[static_cast<std::size_t>(i)] / sel : p[static_cast<std::size_t>(i)]);
    }
    r.keys.insert(r.keys.end(), p.begin(), p.end());
  }
  return r;
}

Routing route_sigmoid_grouped(const std::vector<double>& logits, const std::vector<float>& bias, std::int64_t rows,
                              std::int64_t experts, std::int64_t top_k, std::int64_t groups,
                              std::int64_t selected_groups, bool group_top_two, bool renormalize, double scale) {
  Routing r;
  const std::int64_t per_group = experts / groups;
  for (std::int64_t t = 0; t < rows; ++t) {
    std::vector<double> s(static_cast<std::size_t>(experts)), c(s.size());
    bool bad = false;
    for (std::int64_t e = 0; e < experts; ++e) {
      const double x = logits[static_cast<std::size_t>(t * experts + e)];
      s[static_cast<std::size_t>(e)] = 1.0 / (1.0 + std::exp(-x));
      // FP32 selection score, as SPEC §4 defines it.
      const float s32 = 1.0f / (1.0f + std::exp(-static_cast<float>(x)));
      const float c32 = bias.empty() ? s32 : s32 + bias[static_cast<std::size_t>(e)];
      c[static_cast<std::size_t>(e)] = c32;
      if (std::isnan(s32) || std::isnan(c32)) bad = true;
    }
    if (bad) {
      poisoned_row(r, top_k, experts);
      continue;
    }
    std::vector<double> gscore(static_cast<std::size_t>(groups));
    for (std::int64_t g = 0; g < groups; ++g) {
      std::vector<float> v(c.begin() + g * per_group, c.begin() + (g + 1) * per_group);
      std::sort(v.begin(), v.end(), std::greater<>());
      // The FP32 sum, like the kernel's group score (NaN for +inf + −inf: ranked first).
      gscore[static_cast<std::size_t>(g)] = group_top_two ? static_cast<double>(v[0] + v[1]) : v[0];
    }
    auto kept = top_indices(gscore, std::vector<bool>(gscore.size(), true), selected_groups);
    std::vector<bool> allowed(static_cast<std::size_t>(experts), false);
    for (auto g : kept)
      for (std::int64_t e = g * per_group; e < (g + 1) * per_group; ++e) allowed[static_cast<std::size_t>(e)] = true;
    auto picked = top_indices(c, allowed, top_k);
    double sum = 0.0;
    for (auto i : picked) sum += s[static_cast<std::size_t>(i)];
    for (auto i : picked) {
      r.indices.push_back(static_cast<std::uint32_t>(i));
      r.weights.push_back((renormalize ? s[static_cast<std::size_t>(i)] / sum : s[static_cast<std::size_t>(i)]) *
                          scale);
    }
    r.keys.insert(r.keys.end(), c.begin(), c.end());
  }
  return r;
}

std::string routing_mismatch(const Routing& want, std::int64_t experts, std::int64_t top_k,
                             const std::vector<std::uint32_t>& indices, const std::vector<double>& weights,
                             const RoutingTolerance& tol) {
  auto at = [](std::size_t slot, std::int64_t k) {
    return "row " + std::to_string(slot / static_cast<std::size_t>(k)) + " slot " +
           std::to_string(slot % static_cast<std::size_t>(k)) + ": ";
  };
  const std::size_t n = want.indices.size();
  if (top_k <= 0 || want.weights.size() != n || n % static_cast<std::size_t>(top_k) != 0)
    return "oracle routing is malformed";
  if (indices.size() != n || weights.size() != n)
    return "sizes: expected " + std::to_string(n) + " indices and weights, got " + std::to_string(indices.size()) +
           " and " + std::to_string(weights.size());
  const std::size_t rows = n / static_cast<std::size_t>(top_k);
  const bool with_keys = want.keys.size() == rows * static_cast<std::size_t>(experts);
  const bool exact = tol.key_rel == 0 && tol.key_abs == 0;
  if (!exact && !with_keys) return "a key tolerance needs the oracle's keys";
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t row = k / static_cast<std::size_t>(top_k), first = row * static_cast<std::size_t>(top_k);
    const std::uint32_t got = indices[k], exp = want.indices[k];
    if (got >= static_cast<std::uint64_t>(experts))
      return at(k, top_k) + "index " + std::to_string(got) + " is not below E = " + std::to_string(experts);
    for (std::size_t j = first; j < k; ++j)
      if (indices[j] == got) return at(k, top_k) + "index " + std::to_string(got) + " selected twice";
    const bool poisoned = std::isnan(want.weights[k]);
    if (got != exp) {
      bool near_tie = false;
      if (!exact && !poisoned) {
        const double a = want.keys[row * static_cast<std::size_t>(experts) + got];
        const double b = want.keys[row * static_cast<std::size_t>(experts) + exp];
        near_tie = a == b || std::fabs(a - b) <= tol.key_rel * std::max(std::fabs(a), std::fabs(b)) + tol.key_abs;
      }
      if (!near_tie) return at(k, top_k) + "index: expected " + std::to_string(exp) + ", got " + std::to_string(got);
    }
    const double w = weights[k], e = want.weights[k];
    if (poisoned) {
      if (!std::isnan(w)) return at(k, top_k) + "weight: expected NaN (poisoned row), got " + std::to_string(w);
    } else if (!(std::fabs(w - e) <= tol.weight * (std::fabs(e) + tol.floor))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "weight: expected %.9g (±%.3g), got %.9g", e,
                    tol.weight * (std::fabs(e) + tol.floor), w);
      return at(k, top_k) + buf;
    }
  }
  return "";
}

namespace {

double silu(double z) { return z / (1.0 + std::exp(-z)); }

// The expert that owns compact row r.
std::int64_t owner(const std::vector<std::uint32_t>& offsets, std::int64_t r) {
  auto it = std::upper_bound(offsets.begin(), offsets.end(), static_cast<std::uint32_t>(r));
  return static_cast<std::int64_t>(it - offsets.begin()) - 1;
}

double dot(const double* a, const double* b, std::int64_t n) {
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

std::vector<double> swiglu_act(const std::vector<double>& rows, const std::vector<std::uint32_t>& offsets,
                               const std::vector<double>& gate, const std::vector<double>& up, std::int64_t hidden,
                               std::int64_t inter) {
  const std::int64_t n = static_cast<std::int64_t>(rows.size()) / std::max<std::int64_t>(hidden, 1);
  std::vector<double> act(static_cast<std::size_t>(n * inter));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t e = owner(offsets, r);
    const double* x = rows.data() + r * hidden;
    for (std::int64_t i = 0; i < inter; ++i) {
      const double g = dot(gate.data() + (e * inter + i) * hidden, x, hidden);
      const double u = dot(up.data() + (e * inter + i) * hidden, x, hidden);
      act[static_cast<std::size_t>(r * inter + i)] = silu(g) * u;
    }
  }
  return act;
}

std::vector<double> expert_down(const std::vector<double>& act, const std::vector<std::uint32_t>& offsets,
                                const std::vector<double>& down, std::int64_t hidden, std::int64_t inter) {
  const std::int64_t n = static_cast<std::int64_t>(act.size()) / std::max<std::int64_t>(inter, 1);
  std::vector<double> out(static_cast<std::size_t>(n * hidden));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t e = owner(offsets, r);
    for (std::int64_t h = 0; h < hidden; ++h)
      out[static_cast<std::size_t>(r * hidden + h)] =
          dot(down.data() + (e * hidden + h) * inter, act.data() + r * inter, inter);
  }
  return out;
}

std::vector<double> moe_forward(const std::vector<double>& input, const Routing& routing, std::int64_t top_k,
                                const std::vector<double>& gate, const std::vector<double>& up,
                                const std::vector<double>& down, std::int64_t experts, std::int64_t hidden,
                                std::int64_t inter) {
  const std::int64_t tokens = static_cast<std::int64_t>(input.size()) / std::max<std::int64_t>(hidden, 1);
  std::vector<double> out(input.size(), 0.0);
  // One token through one expert: rows = [x], offsets put it in expert e.
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t j = 0; j < top_k; ++j) {
      const auto k = static_cast<std::size_t>(t * top_k + j);
      const std::int64_t e = routing.indices[k];
      std::vector<std::uint32_t> offsets(static_cast<std::size_t>(experts + 1), 0);
      for (std::int64_t f = e + 1; f <= experts; ++f) offsets[static_cast<std::size_t>(f)] = 1;
      std::vector<double> x(input.begin() + t * hidden, input.begin() + (t + 1) * hidden);
      auto y = expert_down(swiglu_act(x, offsets, gate, up, hidden, inter), offsets, down, hidden, inter);
      for (std::int64_t h = 0; h < hidden; ++h)
        out[static_cast<std::size_t>(t * hidden + h)] += routing.weights[k] * y[static_cast<std::size_t>(h)];
    }
  return out;
}

}  // namespace rudnn::reference
