#pragma once
// Search spaces: for each op family, the kernel configs autotune may time for a signature, and the
// part of the autotune cache key that the family's configs depend on. Families plug in by
// registering a SearchSpace; each built-in family's space is in autotune/spaces/<family>.cpp
// (declared in rudnn/autotune/spaces/<family>.h).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
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

// A family's own space registers itself once, from its own file (autotune/spaces/<family>.cpp),
// with a static
//   const SearchSpaceRegistration kRegistered(&foo_search_space);
// No shared list names the families. Registered spaces are kept sorted by family name (nothing
// depends on link order); one registered later with register_search_space wins over them.
struct SearchSpaceRegistration {
  explicit SearchSpaceRegistration(std::shared_ptr<const SearchSpace> (*space)());
};

// A space written as two functions: the families whose key is a few extents and option words.
class FunctionSpace final : public SearchSpace {
 public:
  using KeyOf = std::optional<TuningKey> (*)(const compiler::ConfigQuery& query);
  using Candidates = std::vector<compiler::KernelConfig> (*)(const TuningKey& key);
  FunctionSpace(std::string_view family, std::vector<std::string_view> ops, KeyOf key_of, Candidates candidates)
      : family_(family), ops_(std::move(ops)), key_of_(key_of), candidates_(candidates) {}
  std::string_view family() const override { return family_; }
  bool covers(std::string_view op) const override { return std::find(ops_.begin(), ops_.end(), op) != ops_.end(); }
  std::optional<TuningKey> key(const compiler::ConfigQuery& query) const override {
    if (!covers(query.op_name) || query.shapes.size() != query.dtypes.size()) return std::nullopt;
    return key_of_(query);
  }
  std::vector<compiler::KernelConfig> candidates(const TuningKey& key) const override {
    return covers(key.op) ? candidates_(key) : std::vector<compiler::KernelConfig>{};
  }

 private:
  std::string_view family_;
  std::vector<std::string_view> ops_;
  KeyOf key_of_;
  Candidates candidates_;
};

// Whether every extent is static (> 0): for the key functions of a FunctionSpace.
inline bool all_static(std::initializer_list<std::int64_t> extents) {
  return std::all_of(extents.begin(), extents.end(), [](std::int64_t e) { return e > 0; });
}

// "threads_per_row=128,rows_per_block=1" ↔ KernelConfig (the cache's text form). Nothing for text
// that is not a comma-separated list of name=integer.
std::optional<compiler::KernelConfig> parse_config(std::string_view text);

}  // namespace rudnn::autotune
