#pragma once
// The convolution's output shape, the one rule of the kernel and (through rudnn._C) the fake kernel.
#include <cstdint>
#include <optional>
#include <vector>

namespace rudnn::python {

using Ints = std::vector<std::int64_t>;

// out = (in + 2·padding − dilation·(k − 1) − 1) // stride + 1 per spatial dim; empty options are the
// defaults (stride 1, padding 0, dilation 1). nullopt where the ranks or an extent < 1 make no shape
// (a batch of 0 is fine); the library then names the argument.
inline std::optional<Ints> conv_output_shape(const Ints& input, const Ints& weight, const Ints& stride,
                                             const Ints& padding, const Ints& dilation, bool channels_last) {
  if (input.size() < 3 || weight.size() != input.size()) return std::nullopt;
  const std::size_t spatial = input.size() - 2;
  auto option = [&](const Ints& values, std::size_t i, std::int64_t fallback) -> std::optional<std::int64_t> {
    if (values.empty()) return fallback;
    if (values.size() != spatial) return std::nullopt;
    return values[i];
  };
  const std::size_t first = channels_last ? 1 : 2;
  Ints out;
  for (std::size_t i = 0; i < spatial; ++i) {
    auto s = option(stride, i, 1), p = option(padding, i, 0), d = option(dilation, i, 1);
    if (!s || !p || !d || *s < 1) return std::nullopt;
    // Checked: options far past the library's bounds (which it names) must not wrap into a shape.
    std::int64_t twice_p, reach, span, sum, extent;
    if (__builtin_mul_overflow(*p, 2, &twice_p) || __builtin_mul_overflow(*d, weight[first + i] - 1, &reach) ||
        __builtin_add_overflow(reach, 1, &span) || __builtin_add_overflow(input[first + i], twice_p, &sum) ||
        __builtin_sub_overflow(sum, span, &extent))
      return std::nullopt;
    if (extent < 0) return std::nullopt;
    out.push_back(extent / *s + 1);
  }
  Ints shape{input[0]};
  if (!channels_last) shape.push_back(weight[0]);
  shape.insert(shape.end(), out.begin(), out.end());
  if (channels_last) shape.push_back(weight[0]);
  for (std::size_t i = 1; i < shape.size(); ++i)
    if (shape[i] < 1) return std::nullopt;
  return shape;
}

// Whether an output of `shape` is worth allocating before the library has checked the call: no
// negative extent and at most 2^40 elements. Otherwise the binding allocates a placeholder, and the
// library names the argument that makes the shape impossible (padding past its bound, a negative
// input_shape entry) instead of torch's allocator failing first.
inline bool plausible(const Ints& shape) {
  std::int64_t elements = 1;
  for (std::int64_t extent : shape)
    if (extent < 0 || __builtin_mul_overflow(elements, extent, &elements) || elements > (std::int64_t{1} << 40))
      return false;
  return true;
}

}  // namespace rudnn::python
