// The inputs of the paged attention benchmarks (paged_inputs.h).
#include "paged_inputs.h"

#include <algorithm>
#include <numeric>

#include "device_copy.h"

namespace rudnn::bench {

Result<Cycled, RuntimeError> cycled_tensor(const Shape& shape, DType dtype, const Device& device, std::int64_t period,
                                           std::mt19937_64& rng) {
  auto count = checked_byte_count(shape, dtype);
  if (!count)
    return RuntimeError(ErrorKind::InvalidValue, "tensor " + shape_to_string(shape), "a size that fits in 64 bits",
                        "an overflowing one");
  const std::int64_t n = element_count(shape), m = std::min(n, period);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> draws(sz(m));
  for (auto& v : draws) v = g(rng);
  HostData pool_data = HostData::from_f64({m}, dtype, draws);
  if (m == n) {
    pool_data.shape = shape;
    auto t = Tensor::upload(pool_data, device);
    if (!t.ok()) return t.error();
    return Cycled{std::move(t.value()), pool_data.to_f64()};
  }
  auto pool = Tensor::upload(pool_data, device);
  if (!pool.ok()) return pool.error();
  auto t = Tensor::empty(shape, dtype, device);
  if (!t.ok()) return t.error();
  const std::size_t total = t->nbytes(), period_bytes = pool->nbytes();
  if (auto s = copy_bytes(*t, 0, *pool, 0, period_bytes); !s.ok()) return s.error();
  // Element filled + j = element j = pool[j mod m] = pool[(filled + j) mod m]: filled stays a multiple of m.
  for (std::size_t filled = period_bytes; filled < total;) {
    const std::size_t n_bytes = std::min(filled, total - filled);
    if (auto s = copy_bytes(*t, filled, *t, 0, n_bytes); !s.ok()) return s.error();
    filled += n_bytes;
  }
  return Cycled{std::move(t.value()), pool_data.to_f64()};
}

Result<Drawn, RuntimeError> drawn_tensor(const Shape& shape, DType dtype, const Device& device, std::mt19937_64& rng) {
  std::normal_distribution<double> g(0, 1);
  std::vector<double> v(sz(element_count(shape)));
  for (auto& x : v) x = g(rng);
  HostData data = HostData::from_f64(shape, dtype, v);
  auto t = Tensor::upload(data, device);
  if (!t.ok()) return t.error();
  return Drawn{std::move(t.value()), data.to_f64()};
}

Layout make_layout(std::int64_t page_size, const std::vector<std::int64_t>& lengths,
                   const std::vector<std::int64_t>& rows, std::mt19937_64& rng) {
  Layout l;
  l.page_size = page_size;
  for (std::int64_t len : lengths) l.pages += ceil_div(len, page_size);
  std::vector<std::int32_t> ids(sz(l.pages));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::size_t next = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const std::int64_t n = ceil_div(lengths[s], page_size);
    l.tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next),
                          ids.begin() + static_cast<std::ptrdiff_t>(next + sz(n)));
    next += sz(n);
    l.lengths.push_back(lengths[s]);
    for (std::int64_t p = lengths[s] - rows[s]; p < lengths[s]; ++p) {
      l.sequence_ids.push_back(static_cast<std::int64_t>(s));
      l.positions.push_back(p);
    }
  }
  return l;
}

Result<DevicePlan, PagedAttentionError> device_plan(const Layout& l, const Tensor& q) {
  auto host = HostPlan::create(l.page_size, l.pages, l.tables, l.lengths, l.sequence_ids, l.positions);
  if (!host.ok()) return host.error();
  return DevicePlan::upload(*host, q);
}

}  // namespace rudnn::bench
