// The search-space registry and shape anchoring. Each family's space lives in its own file
// (autotune/spaces/<family>.cpp) and registers itself with a SearchSpaceRegistration.
#include "rudnn/autotune/search_space.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <mutex>

#include <fmt/format.h>

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
  // The families' own spaces (SearchSpaceRegistration, at load time), kept sorted by family name so
  // that nothing depends on the order the linker ran their registrations in.
  std::vector<std::shared_ptr<const SearchSpace>> builtins;
  std::vector<std::shared_ptr<const SearchSpace>> spaces;  // register_search_space: later entries win
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

SearchSpaceRegistration::SearchSpaceRegistration(std::shared_ptr<const SearchSpace> (*space)()) {
  std::shared_ptr<const SearchSpace> s = space();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto at = std::upper_bound(r.builtins.begin(), r.builtins.end(), s->family(),
                             [](std::string_view family, const auto& b) { return family < b->family(); });
  r.builtins.insert(at, std::move(s));
}

std::shared_ptr<const SearchSpace> search_space_for(std::string_view op_name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto it = r.spaces.rbegin(); it != r.spaces.rend(); ++it)
    if ((*it)->covers(op_name)) return *it;
  for (const auto& space : r.builtins)
    if (space->covers(op_name)) return space;
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
  std::erase_if(r.builtins, [&](const auto& s) { return s.get() == space; });
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
