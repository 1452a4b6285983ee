#pragma once
// Host data built by the tools from user input (random inputs, .npy files), checked: the size is
// formed with overflow checks and allocated without letting std::bad_alloc escape, and every value
// is stored into the argument's dtype exactly or rejected. This is the boundary between a reader of
// values (tools/common/npy.cpp, rudnn-run's random inputs) and the bytes an argument gets.
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <string>

#include "rudnn/tensor.h"

namespace rudnn::tools {

// The values an integer dtype holds, [lo, hi]; nullopt for a float dtype.
struct IntRange {
  std::int64_t lo;
  std::uint64_t hi;
};
std::optional<IntRange> int_range(DType dtype);

// Zero-filled host data of `shape` and `dtype` for `argument`. InvalidValue when the element count
// or the byte count does not fit in 64 bits (it would wrap into a tiny buffer); OutOfMemory, naming
// the argument and the bytes, when the host cannot allocate it.
Result<HostData, RuntimeError> allocate_host(const std::string& argument, const Shape& shape, DType dtype);

// Stores `value` as element `index` of `data` in data.dtype. A float dtype rounds as
// HostData::from_f64 does. An integer dtype (ui8, ui32, i32, i64) takes only an integral value
// inside its range: NaN, 1.7, -1 for ui32, 2^32 + 3 for ui32 or 2^63 for i64 are an InvalidValue
// naming `argument`, the dtype's range, the value and its index (nothing wraps, nothing truncates).
// Integer sources pass their own type, so an i64 of 2^63 - 1 is stored exactly (not via double).
Status<RuntimeError> store(HostData& data, std::size_t index, double value, const std::string& argument);
Status<RuntimeError> store(HostData& data, std::size_t index, std::int64_t value, const std::string& argument);
Status<RuntimeError> store(HostData& data, std::size_t index, std::uint64_t value, const std::string& argument);

// Random host data for `argument`: uniform reals in [lo, hi) for a float dtype (default [-1, 1));
// for an integer dtype uniform integers k with lo <= k < hi (default [0, 2): 0 or 1, valid as a
// mask, an index or a count), each inside the dtype or an InvalidValue naming "--random-range
// <argument>". The one random-input helper of rudnn-run and rudnn-autotune.
Result<HostData, RuntimeError> random_host_data(const std::string& argument, const Shape& shape, DType dtype,
                                                std::optional<std::pair<double, double>> range, std::mt19937_64& rng);

}  // namespace rudnn::tools
