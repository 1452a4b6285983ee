#pragma once
// The kernel configuration space of the normalization family (template row_norm.cuh's RowPolicy),
// shared by the op verifiers, rudnn-select-kernel-config and the variant registry.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rudnn/dtype.h"
#include "rudnn/shared_memory.h"

namespace rudnn::dialect::norm_config {

inline constexpr const char* kThreadsPerRow = "threads_per_row";
inline constexpr const char* kRowsPerBlock = "rows_per_block";
inline constexpr const char* kVectorWidth = "vector_width";
// The order KernelConfig lists them in.
inline constexpr std::array<const char*, 3> kKeys = {kThreadsPerRow, kRowsPerBlock, kVectorWidth};

inline constexpr std::array<std::int64_t, 6> kThreadsPerRowChoices = {32, 64, 128, 256, 512, 1024};
inline constexpr std::array<std::int64_t, 3> kRowsPerBlockChoices = {1, 2, 4};
inline constexpr std::int64_t kMaxThreadsPerBlock = 1024;

// Vector widths (elements) whose loads are at most 16 bytes and divide h, largest first.
// A dynamic h (< 0) allows only 1.
std::vector<std::int64_t> legalVectorWidths(DType dtype, std::int64_t h);

struct RowConfig {
  std::int64_t threadsPerRow = 0, rowsPerBlock = 0, vectorWidth = 0;
};

// Why `c` cannot instantiate the template for (dtype, h), or nothing if it can.
std::optional<std::string> checkRowConfig(const RowConfig& c, DType dtype, std::int64_t h);

// Dynamic shared memory the template needs: rows_per_block * max(1, threads_per_row/32) * 2 floats.
inline std::int64_t sharedBytes(const RowConfig& c) { return shared_memory::row_norm(c.rowsPerBlock, c.threadsPerRow); }

}  // namespace rudnn::dialect::norm_config
