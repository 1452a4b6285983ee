#include "contracts/conv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rudnn::contracts {

namespace {

using Err = ConvSetupError;

const char* input_name(const ConvSignature& s) {
  return s.direction == ConvDirection::DataBackward ? "input_shape" : "input";
}
const char* weight_name(const ConvSignature& s) {
  return s.direction == ConvDirection::WeightBackward ? "weight_shape" : "weight";
}

// An option list as given ("[1, 0]"; -1 is a value here, not a dynamic extent).
std::string list_text(const std::vector<std::int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// Axis of the channels and of spatial dim i in an activation [N, C, S...] / [N, S..., C].
std::size_t channel_axis(const ConvSignature& s, std::size_t rank) { return s.channels_last ? rank - 1 : 1; }
std::size_t spatial_axis(const ConvSignature& s, std::size_t i) { return s.channels_last ? 1 + i : 2 + i; }
// In a weight [O, C/G, k...] / [O, k..., C/G].
std::size_t weight_channel_axis(const ConvSignature& s, std::size_t rank) { return s.channels_last ? rank - 1 : 1; }
std::size_t kernel_axis(const ConvSignature& s, std::size_t i) { return s.channels_last ? 1 + i : 2 + i; }

// The option `values` of one kind for `dims` spatial dims (empty = `fallback` everywhere).
std::optional<Err> option_values(const std::vector<std::int64_t>& values, const char* name, std::size_t dims,
                                 std::int64_t lo, std::int64_t hi, std::int64_t fallback,
                                 std::array<std::int64_t, 3>& out) {
  if (!values.empty() && values.size() != dims)
    return fail<Err>(ErrorKind::InvalidValue, name, fmt::format("{} entries (one per spatial dim) or none", dims),
                     list_text(values));
  for (std::size_t i = 0; i < dims; ++i) {
    const std::int64_t v = values.empty() ? fallback : values[i];
    if (v < lo || v > hi)
      return fail<Err>(ErrorKind::InvalidValue, name, fmt::format("every entry in {}..={}", lo, hi), list_text(values));
    out[3 - dims + i] = v;
  }
  return std::nullopt;
}

// The geometry's extents from the shapes (no checks but what indexing needs).
ConvGeometry extents_of(const ConvSignature& s) {
  ConvGeometry g;
  const Shape& x = s.input.shape;
  const Shape& w = s.weight.shape;
  const std::size_t rank = x.size(), dims = rank - 2;
  g.spatial_dims = static_cast<int>(dims);
  g.batch = x[0];
  g.channels = x[channel_axis(s, rank)];
  g.out_channels = w[0];
  for (std::size_t i = 0; i < dims; ++i) {
    g.input[3 - dims + i] = x[spatial_axis(s, i)];
    g.kernel[3 - dims + i] = w[kernel_axis(s, i)];
  }
  return g;
}

std::int64_t out_extent(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t d) {
  if (!known(in)) return kDynamic;
  const std::int64_t span = in + 2 * p - d * (k - 1) - 1;  // every term < 2^27: no overflow
  return span < 0 ? 0 : span / s + 1;
}

}  // namespace

std::optional<ConvSetupError> check_conv(const ConvSignature& sig) {
  const bool forward = sig.direction == ConvDirection::Forward;
  const bool data_backward = sig.direction == ConvDirection::DataBackward;
  // 1. dtypes: one float dtype for every tensor, the first tensor's.
  const Operand& first = data_backward ? *sig.grad_output : sig.input;
  const char* first_name = data_backward ? "grad_output" : "input";
  if (auto e = check_float<Err>(first, first_name)) return e;
  auto same_dtype = [&](const Operand& x, const char* name) -> std::optional<Err> {
    if (auto e = check_float<Err>(x, name)) return e;
    if (x.dtype != first.dtype)
      return fail<Err>(ErrorKind::UnsupportedDType, name,
                       fmt::format("{} (the {} dtype)", dtype_name(first.dtype), first_name),
                       std::string(dtype_name(x.dtype)));
    return std::nullopt;
  };
  if (sig.direction != ConvDirection::WeightBackward)
    if (auto e = same_dtype(sig.weight, "weight")) return e;
  if (!forward && !data_backward)
    if (auto e = same_dtype(*sig.grad_output, "grad_output")) return e;
  if (sig.bias) {
    if (auto e = check_float<Err>(*sig.bias, "bias")) return e;
    if (sig.bias->dtype != DType::F32 && sig.bias->dtype != first.dtype)
      return fail<Err>(ErrorKind::UnsupportedDType, "bias",
                       fmt::format("f32 or {} (the input dtype)", dtype_name(first.dtype)),
                       std::string(dtype_name(sig.bias->dtype)));
  }

  // 2. ranks.
  const Shape& x = sig.input.shape;
  const std::size_t rank = x.size();
  const std::string layout = sig.channels_last ? "[N, spatial..., C]" : "[N, C, spatial...]";
  if (rank < 3 || rank > 5)
    return fail<Err>(ErrorKind::ShapeMismatch, input_name(sig),
                     fmt::format("rank 3, 4 or 5 {} (1 to 3 spatial dims)", layout), shape_to_string(x));
  const Shape& w = sig.weight.shape;
  if (w.size() != rank)
    return fail<Err>(ErrorKind::ShapeMismatch, weight_name(sig),
                     fmt::format("rank {} {} (the rank of {})", rank,
                                 sig.channels_last ? "[O, k..., C/groups]" : "[O, C/groups, k...]", input_name(sig)),
                     shape_to_string(w));

  // 3. extents.
  ConvGeometry g = extents_of(sig);
  const std::size_t dims = rank - 2;
  if (g.channels == 0)
    return fail<Err>(ErrorKind::EmptyDimension, input_name(sig), "channels C > 0", shape_to_string(x));
  for (std::size_t i = 0; i < dims; ++i)
    if (x[spatial_axis(sig, i)] == 0)
      return fail<Err>(ErrorKind::EmptyDimension, input_name(sig), "every spatial extent > 0", shape_to_string(x));
  for (std::size_t axis = 1; axis < rank; ++axis)
    if (known(x[axis]) && x[axis] > kMaxConvExtent)
      return fail<Err>(ErrorKind::Unsupported, input_name(sig),
                       fmt::format("channels and spatial extents <= {}", kMaxConvExtent), shape_to_string(x));
  if (known(g.out_channels) && g.out_channels > kMaxConvExtent)
    return fail<Err>(ErrorKind::Unsupported, weight_name(sig), fmt::format("output channels <= {}", kMaxConvExtent),
                     shape_to_string(w));
  if (g.out_channels == 0)
    return fail<Err>(ErrorKind::EmptyDimension, weight_name(sig), "output channels O > 0", shape_to_string(w));
  for (std::size_t i = 0; i < dims; ++i) {
    const std::int64_t k = w[kernel_axis(sig, i)];
    if (k == 0 || (known(k) && k > kMaxConvKernelExtent))
      return fail<Err>(ErrorKind::Unsupported, weight_name(sig),
                       fmt::format("kernel extents in 1..={}", kMaxConvKernelExtent), shape_to_string(w));
  }

  // 4. groups.
  const ConvParams& p = sig.params;
  if (p.groups < 1 || p.groups > (1 << 24))
    return fail<Err>(ErrorKind::InvalidValue, "groups", "1..=2^24", std::to_string(p.groups));
  if (known(g.channels) && g.channels % p.groups != 0)
    return fail<Err>(ErrorKind::InvalidValue, "groups", fmt::format("a divisor of the input channels {}", g.channels),
                     std::to_string(p.groups));
  if (known(g.out_channels) && g.out_channels % p.groups != 0)
    return fail<Err>(ErrorKind::InvalidValue, "groups",
                     fmt::format("a divisor of the output channels {}", g.out_channels), std::to_string(p.groups));
  const std::int64_t per_group = w[weight_channel_axis(sig, rank)];
  if (known(g.channels) && !same_extent(per_group, g.channels / p.groups))
    return fail<Err>(
        ErrorKind::ShapeMismatch, weight_name(sig),
        fmt::format("{} channels per group (C {} / groups {})", g.channels / p.groups, g.channels, p.groups),
        shape_to_string(w));
  g.groups = p.groups;

  // 5. options.
  if (auto e = option_values(p.stride, "stride", dims, 1, kMaxConvStride, 1, g.stride)) return e;
  if (auto e = option_values(p.padding, "padding", dims, 0, kMaxConvPadding, 0, g.padding)) return e;
  if (auto e = option_values(p.dilation, "dilation", dims, 1, kMaxConvStride, 1, g.dilation)) return e;

  // 6. output extents >= 1.
  for (std::size_t i = 0; i < dims; ++i) {
    const std::size_t d = 3 - dims + i;
    const std::int64_t out = out_extent(g.input[d], g.kernel[d], g.stride[d], g.padding[d], g.dilation[d]);
    if (known(g.kernel[d]) && out == 0)
      return fail<Err>(ErrorKind::ShapeMismatch, input_name(sig),
                       fmt::format("spatial dim {} of at least dilation·(k − 1) + 1 − 2·padding = {} (an output "
                                   "extent >= 1)",
                                   i, g.dilation[d] * (g.kernel[d] - 1) + 1 - 2 * g.padding[d]),
                       shape_to_string(x));
  }

  // 7. bias, grad_output shapes.
  if (sig.bias)
    if (auto e = check_shape<Err>(*sig.bias, "bias", {g.out_channels}, "[O], the weight's output channels")) return e;
  if (sig.grad_output)
    if (auto e =
            check_shape<Err>(*sig.grad_output, "grad_output", conv_output_shape(sig),
                             sig.channels_last ? "[N, out..., O] of the forward" : "[N, O, out...] of the forward"))
      return e;

  // 8. devices.
  if (sig.direction != ConvDirection::WeightBackward)
    if (auto e = check_device<Err>(sig.weight, "weight", first, first_name)) return e;
  if (sig.direction == ConvDirection::WeightBackward)
    if (auto e = check_device<Err>(*sig.grad_output, "grad_output", first, first_name)) return e;
  if (sig.bias)
    if (auto e = check_device<Err>(*sig.bias, "bias", first, first_name)) return e;
  return std::nullopt;
}

ConvGeometry conv_geometry(const ConvSignature& sig) {
  ConvGeometry g = extents_of(sig);
  const std::size_t dims = sig.input.shape.size() - 2;
  g.groups = sig.params.groups;
  (void)option_values(sig.params.stride, "stride", dims, 1, kMaxConvStride, 1, g.stride);
  (void)option_values(sig.params.padding, "padding", dims, 0, kMaxConvPadding, 0, g.padding);
  (void)option_values(sig.params.dilation, "dilation", dims, 1, kMaxConvStride, 1, g.dilation);
  for (int d = 0; d < 3; ++d)
    g.output[d] = out_extent(g.input[d], g.kernel[d], g.stride[d], g.padding[d], g.dilation[d]);
  return g;
}

Shape conv_output_shape(const ConvSignature& sig) {
  const ConvGeometry g = conv_geometry(sig);
  const std::size_t dims = static_cast<std::size_t>(g.spatial_dims);
  Shape out = {g.batch};
  if (!sig.channels_last) out.push_back(g.out_channels);
  for (std::size_t i = 0; i < dims; ++i) out.push_back(g.output[3 - dims + i]);
  if (sig.channels_last) out.push_back(g.out_channels);
  return out;
}

std::vector<std::int64_t> conv_key_words(const ConvSignature& sig, bool bias_grad) {
  std::vector<std::int64_t> w = {static_cast<std::int64_t>(sig.direction), sig.channels_last ? 1 : 0, sig.params.groups,
                                 bias_grad ? 1 : 0, sig.bias ? 1 + static_cast<std::int64_t>(sig.bias->dtype) : 0};
  auto list = [&w](const std::vector<std::int64_t>& v, std::size_t from) {
    w.push_back(static_cast<std::int64_t>(v.size() - from));
    w.insert(w.end(), v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
  };
  list(sig.params.stride, 0);
  list(sig.params.padding, 0);
  list(sig.params.dilation, 0);
  list(sig.input.shape, 1);
  list(sig.weight.shape, 0);
  return w;
}

std::optional<ConvSignature> conv_signature_from_key(const std::vector<std::int64_t>& words, DType dtype,
                                                     std::int64_t batch, bool* bias_grad) {
  std::size_t next = 0;
  auto take = [&](std::int64_t& v) {
    if (next >= words.size()) return false;
    v = words[next++];
    return true;
  };
  auto list = [&](std::vector<std::int64_t>& v) {
    std::int64_t n = 0;
    if (!take(n) || n < 0 || n > 8) return false;
    v.resize(static_cast<std::size_t>(n));
    for (auto& x : v)
      if (!take(x)) return false;
    return true;
  };
  std::int64_t direction = 0, last = 0, grad = 0, bias = 0;
  ConvSignature sig;
  if (!take(direction) || direction < 0 || direction > 2 || !take(last) || !take(sig.params.groups) || !take(grad) ||
      !take(bias))
    return std::nullopt;
  sig.direction = static_cast<ConvDirection>(direction);
  sig.channels_last = last != 0;
  Shape input_rest;
  if (!list(sig.params.stride) || !list(sig.params.padding) || !list(sig.params.dilation) || !list(input_rest) ||
      !list(sig.weight.shape) || next != words.size())
    return std::nullopt;
  sig.input.shape = {batch};
  sig.input.shape.insert(sig.input.shape.end(), input_rest.begin(), input_rest.end());
  sig.input.dtype = sig.weight.dtype = dtype;
  if (bias > 0)
    sig.bias = Operand{{sig.weight.shape.empty() ? 0 : sig.weight.shape[0]}, static_cast<DType>(bias - 1), 0};
  if (sig.direction != ConvDirection::Forward) {
    if (sig.input.shape.size() < 3 || sig.weight.shape.size() != sig.input.shape.size()) return std::nullopt;
    sig.grad_output = Operand{conv_output_shape(sig), dtype, 0};
  }
  if (bias_grad) *bias_grad = grad != 0;
  return sig;
}

std::string describe_call(const ConvSignature& sig) {
  auto one = [](const char* name, const Operand& o, bool with_dtype = true) {
    return fmt::format("{} {}{}", name, shape_to_string(o.shape),
                       with_dtype ? " " + std::string(dtype_name(o.dtype)) : std::string());
  };
  const bool fwd = sig.direction == ConvDirection::Forward, dgrad = sig.direction == ConvDirection::DataBackward;
  std::string s = fwd ? "forward" : dgrad ? "data backward" : "weight backward";
  s += sig.channels_last ? " (channels-last): " : " (channels-first): ";
  if (sig.grad_output) s += one("grad_output", *sig.grad_output) + ", ";
  s += one(input_name(sig), sig.input, !dgrad) + ", " + one(weight_name(sig), sig.weight, dgrad || fwd);
  if (sig.bias) s += ", " + one("bias", *sig.bias);
  const auto& p = sig.params;
  s += fmt::format(", stride {}, padding {}, dilation {}, groups {}", list_text(p.stride), list_text(p.padding),
                   list_text(p.dilation), p.groups);
  return s;
}

}  // namespace rudnn::contracts
