#include "rudnn/Dialect/Rudnn/IR/NormConfig.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rudnn::dialect::norm_config {

std::vector<std::int64_t> legalVectorWidths(DType dtype, std::int64_t h) {
  const std::int64_t elemBytes = static_cast<std::int64_t>(dtype_size(dtype));
  std::vector<std::int64_t> widths;
  if (h < 0 || elemBytes == 0) return {1};
  // 16-, 8-, 4-byte vectors (and narrower, down to one element) whose width divides h.
  for (std::int64_t w = std::max<std::int64_t>(1, 16 / elemBytes); w >= 1; w /= 2)
    if (h % w == 0) widths.push_back(w);
  return widths;
}

std::optional<std::string> checkRowConfig(const RowConfig& c, DType dtype, std::int64_t h) {
  auto in = [](const auto& choices, std::int64_t v) {
    return std::find(choices.begin(), choices.end(), v) != choices.end();
  };
  if (!in(kThreadsPerRowChoices, c.threadsPerRow))
    return fmt::format("threads_per_row must be one of 32, 64, ..., 1024, got {}", c.threadsPerRow);
  if (!in(kRowsPerBlockChoices, c.rowsPerBlock))
    return fmt::format("rows_per_block must be 1, 2 or 4, got {}", c.rowsPerBlock);
  if (c.threadsPerRow * c.rowsPerBlock > kMaxThreadsPerBlock)
    return fmt::format("threads_per_row * rows_per_block must be <= {}, got {}", kMaxThreadsPerBlock,
                       c.threadsPerRow * c.rowsPerBlock);
  std::vector<std::int64_t> widths = legalVectorWidths(dtype, h);
  if (!in(widths, c.vectorWidth))
    return fmt::format("vector_width {} is not legal for {} with last dim {} (legal: {})", c.vectorWidth,
                       dtype_name(dtype), h < 0 ? std::string("?") : std::to_string(h), fmt::join(widths, ", "));
  return std::nullopt;
}

}  // namespace rudnn::dialect::norm_config
