// Tensors, host data and readback.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "checked_math.h"
#include "queue_impl.h"
#include "rudnn/tensor.h"

namespace rudnn {

using runtime::Buffer;

namespace {

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// The byte size of a tensor of `shape`, or the error: every extent non-negative and the byte count
// representable (an element count that wraps would allocate a tiny buffer for a huge shape).
Result<std::size_t, RuntimeError> byte_size(const Shape& shape, DType dtype) {
  for (auto d : shape)
    if (d < 0) return RuntimeError(ErrorKind::ShapeMismatch, "shape", "non-negative extents", shape_to_string(shape));
  auto bytes = checked_byte_count(shape, dtype);
  // The contiguous strides (suffix products) must fit too: [0, 2^40, 2^40] has no elements but a
  // stride of 2^80, whatever order the extents come in.
  std::optional<std::int64_t> stride = 1;
  for (std::size_t i = shape.size(); stride && i-- > 1;) stride = checked_mul(*stride, shape[i]);
  if (!stride) bytes = std::nullopt;
  if (!bytes)
    return RuntimeError(ErrorKind::InvalidValue, "shape", "an element count whose size in bytes fits in 64 bits",
                        shape_to_string(shape) + " of " + std::string(dtype_name(dtype)));
  return static_cast<std::size_t>(*bytes);
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Buffer> buffer, Shape shape, DType dtype, Queue queue)
    : buffer_(std::move(buffer)), shape_(std::move(shape)), dtype_(dtype), queue_(std::move(queue)) {
  strides_ = contiguous_strides(shape_);
}

Tensor::Tensor(std::shared_ptr<Buffer> buffer, Shape shape, Shape strides, DType dtype, Queue queue)
    : buffer_(std::move(buffer)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      dtype_(dtype),
      queue_(std::move(queue)) {}

namespace {
// (Σ (extent − 1)·stride + 1) · element size: the bytes a strided tensor reaches, or nothing when
// that does not fit in 63 bits.
std::optional<std::int64_t> span_of(const Shape& shape, const Shape& strides, DType dtype) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    auto step = checked_mul(shape[i] - 1, strides[i]);
    if (!step || *step >= std::numeric_limits<std::int64_t>::max() - last) return std::nullopt;  // last + 1 fits
    last += *step;
  }
  return checked_mul(last + 1, static_cast<std::int64_t>(dtype_size(dtype)));
}
}  // namespace

Result<Tensor, RuntimeError> Tensor::view(void* data, const Shape& shape, const Shape& strides, DType dtype,
                                          const Queue& queue) {
  auto bytes = byte_size(shape, dtype);
  if (!bytes.ok()) return bytes.error();
  const Shape s = strides.empty() ? contiguous_strides(shape) : strides;
  if (s.size() != shape.size())
    return RuntimeError(ErrorKind::ShapeMismatch, "strides", fmt::format("{} strides (one per dim)", shape.size()),
                        shape_to_string(strides));
  for (std::int64_t stride : s)
    if (stride < 0)
      return RuntimeError(ErrorKind::InvalidValue, "strides", "non-negative strides", shape_to_string(strides));
  const auto span = span_of(shape, s, dtype);
  if (!span) return RuntimeError(ErrorKind::InvalidValue, "strides", "a span that fits in 63 bits", shape_to_string(s));
  if (!data && *span > 0)
    return RuntimeError(ErrorKind::InvalidValue, "data", "a pointer to the view's memory", "null");
  // The kernels load and store 16-byte vectors wherever a row allows (and rudnn's own storage is
  // 256-byte aligned), so a view starts on a 16-byte boundary.
  if (reinterpret_cast<std::uintptr_t>(data) % kViewAlignment != 0)
    return RuntimeError(ErrorKind::InvalidValue, "data", fmt::format("a {}-byte aligned address", kViewAlignment),
                        fmt::format("{}", data));
  auto buffer = std::make_shared<Buffer>(runtime::QueueImpl::unwrap(queue), data, static_cast<std::size_t>(*span),
                                         /*owned=*/false);
  return Tensor(std::move(buffer), shape, s, dtype, queue);
}

std::size_t Tensor::span_bytes() const {
  return static_cast<std::size_t>(span_of(shape_, strides_, dtype_).value_or(0));
}

Result<Tensor, RuntimeError> Tensor::empty(const Shape& shape, DType dtype, const Queue& queue) {
  auto bytes = byte_size(shape, dtype);
  if (!bytes.ok()) return bytes.error();
  auto ptr = queue.device().backend().allocate(*bytes, queue.impl().stream());
  if (!ptr.ok()) {
    const RuntimeError& e = ptr.error();
    if (e.kind() != ErrorKind::OutOfMemory) return e;
    return RuntimeError(ErrorKind::OutOfMemory,
                        "tensor " + shape_to_string(shape) + " of " + std::string(dtype_name(dtype)), e.expected(),
                        e.actual(), e.detail());
  }
  return Tensor(std::make_shared<Buffer>(runtime::QueueImpl::unwrap(queue), ptr.value(), *bytes), shape, dtype, queue);
}

Result<Tensor, RuntimeError> Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  return empty(shape, dtype, Queue::default_queue(device));
}

Result<Tensor, RuntimeError> Tensor::upload(const HostData& data, const Queue& queue) {
  if (auto e = runtime::check_not_capturing(queue, "an upload from the host (Tensor::upload)")) return *e;
  auto size = byte_size(data.shape, data.dtype);
  if (!size.ok()) return size.error();
  const std::size_t expected = *size;
  if (data.bytes.size() != expected)
    return RuntimeError(ErrorKind::ShapeMismatch, "data",
                        std::to_string(expected) + " bytes for " + shape_to_string(data.shape),
                        std::to_string(data.bytes.size()) + " bytes");
  auto t = empty(data.shape, data.dtype, queue);
  if (!t.ok()) return t.error();
  if (expected) {
    auto s = queue.device().backend().copy_to_device(queue.impl().stream(), t->data(), data.bytes.data(), expected);
    if (!s.ok()) return s.error();
    // The host bytes belong to the caller and may die right after: wait for the copy.
    auto w = queue.synchronize();
    if (!w.ok()) return w.error();
  }
  return t;
}

Result<Tensor, RuntimeError> Tensor::upload(const HostData& data, const Device& device) {
  return upload(data, Queue::default_queue(device));
}

std::optional<std::int64_t> row_stride(const Shape& shape, const Shape& strides) {
  if (shape.empty() || strides.size() != shape.size()) return std::nullopt;
  const std::size_t last = shape.size() - 1;
  const std::int64_t h = shape[last];
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return h;  // no element to step to
  if (h != 1 && strides[last] != 1) return std::nullopt;
  // Walk the row dims from the innermost: the first one stepped over sets the row stride, each
  // outer one must step over whole runs of the inner ones.
  std::optional<std::int64_t> row;
  std::int64_t next = 0;  // the stride an outer dim must have to collapse with the ones inside it
  for (std::size_t i = last; i-- > 0;) {
    if (shape[i] == 1) continue;
    if (!row) {
      if (strides[i] < h) return std::nullopt;
      row = strides[i];
    } else if (strides[i] != next) {
      return std::nullopt;
    }
    auto step = checked_mul(strides[i], shape[i]);
    if (!step) return std::nullopt;
    next = *step;
  }
  return row.value_or(h);
}

bool Tensor::is_contiguous() const {
  // A dim of extent 1 is never stepped over: its stride does not matter (views from frameworks carry any).
  const Shape dense = contiguous_strides(shape_);
  for (std::size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1 && strides_[i] != dense[i]) return false;
  return true;
}

void* Tensor::data() const { return buffer_ ? buffer_->data() : nullptr; }

Status<RuntimeError> Tensor::poison() const {
  if (nbytes() == 0) return {};
  if (!is_contiguous())  // its gaps may be someone else's bytes
    return RuntimeError(ErrorKind::InvalidValue, "tensor", "a contiguous tensor to poison", shape_to_string(strides_));
  return device().backend().fill_bytes(queue_.impl().stream(), data(), 0xff, nbytes());
}

Result<HostData, RuntimeError> to_host(const Tensor& tensor) {
  // Before the copy: a copy to pageable memory in a capture would invalidate it.
  if (auto e = runtime::check_not_capturing(tensor.queue(), "a readback to the host (to_host)")) return *e;
  HostData out;
  out.shape = tensor.shape();
  out.dtype = tensor.dtype();
  try {
    out.bytes.resize(tensor.nbytes());
  } catch (const std::exception&) {  // std::bad_alloc or length_error: the host cannot hold it
    return RuntimeError(ErrorKind::OutOfMemory, "to_host", fmt::format("{} bytes of host memory", tensor.nbytes()),
                        "allocation failure");
  }
  auto& q = tensor.queue();
  if (!out.bytes.empty() && tensor.is_contiguous()) {
    auto s = q.device().backend().copy_to_host(q.impl().stream(), out.bytes.data(), tensor.data(), out.bytes.size());
    if (!s.ok()) return s.error();
  }
  std::vector<std::byte> span;  // a strided view: its whole span, then gathered
  if (!out.bytes.empty() && !tensor.is_contiguous()) {
    span.resize(tensor.span_bytes());
    auto s = q.device().backend().copy_to_host(q.impl().stream(), span.data(), tensor.data(), span.size());
    if (!s.ok()) return s.error();
  }
  auto w = q.synchronize();
  if (!w.ok()) return w.error();
  if (!span.empty()) {
    const std::size_t size = dtype_size(tensor.dtype()), rank = tensor.shape().size();
    std::vector<std::int64_t> index(rank, 0);
    for (std::size_t e = 0; e * size < out.bytes.size(); ++e) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < rank; ++d) offset += index[d] * tensor.strides()[d];
      std::memcpy(out.bytes.data() + e * size, span.data() + static_cast<std::size_t>(offset) * size, size);
      for (std::size_t d = rank; d-- > 0;) {  // the next index, row-major
        if (++index[d] < tensor.shape()[d]) break;
        index[d] = 0;
      }
    }
  }
  return out;
}

// --- host data conversions ---------------------------------------------------------------------

std::vector<double> HostData::to_f64() const {
  // The values the bytes hold (a HostData whose shape could not be allocated holds none).
  const auto count = checked_element_count(shape);
  const std::size_t n = std::min(count ? static_cast<std::size_t>(*count) : 0, bytes.size() / dtype_size(dtype));
  std::vector<double> v(n);
  const std::byte* p = bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::F32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        v[i] = f;
        break;
      }
      case DType::F16: {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        v[i] = half_bits_to_float(h);
        break;
      }
      case DType::BF16: {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        v[i] = bf16_bits_to_float(h);
        break;
      }
      case DType::U32: {
        std::uint32_t u;
        std::memcpy(&u, p + 4 * i, 4);
        v[i] = u;
        break;
      }
      case DType::I32: {
        std::int32_t s;
        std::memcpy(&s, p + 4 * i, 4);
        v[i] = s;
        break;
      }
      case DType::I64: {
        std::int64_t s;
        std::memcpy(&s, p + 8 * i, 8);
        v[i] = static_cast<double>(s);
        break;
      }
      case DType::FP8E4M3: v[i] = fp8e4m3_bits_to_float(static_cast<std::uint8_t>(p[i])); break;
      case DType::U8: v[i] = static_cast<double>(static_cast<std::uint8_t>(p[i])); break;
    }
  }
  return v;
}

HostData HostData::from_f64(const Shape& shape, DType dtype, std::span<const double> values) {
  HostData d;
  d.shape = shape;
  d.dtype = dtype;
  // No Result here (a plain builder): a shape that overflows or cannot be allocated gives data with
  // no bytes, which Tensor::upload then rejects with a typed error naming the shape and the bytes.
  const auto total = checked_byte_count(shape, dtype);
  if (!total) return d;
  try {
    d.bytes.resize(static_cast<std::size_t>(*total));
  } catch (const std::exception&) {
    return d;
  }
  const std::size_t n = static_cast<std::size_t>(*total) / dtype_size(dtype);
  std::byte* p = d.bytes.data();
  for (std::size_t i = 0; i < n && i < values.size(); ++i) {
    const double x = values[i];
    switch (dtype) {
      case DType::F32: {
        float f = static_cast<float>(x);
        std::memcpy(p + 4 * i, &f, 4);
        break;
      }
      case DType::F16: {
        auto h = float_to_half_bits(static_cast<float>(x));
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case DType::BF16: {
        auto h = float_to_bf16_bits(static_cast<float>(x));
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case DType::U32: {
        auto u = static_cast<std::uint32_t>(x);
        std::memcpy(p + 4 * i, &u, 4);
        break;
      }
      case DType::I32: {
        auto s = static_cast<std::int32_t>(x);
        std::memcpy(p + 4 * i, &s, 4);
        break;
      }
      case DType::I64: {
        auto s = static_cast<std::int64_t>(x);
        std::memcpy(p + 8 * i, &s, 8);
        break;
      }
      case DType::FP8E4M3: p[i] = static_cast<std::byte>(float_to_fp8e4m3_bits(static_cast<float>(x))); break;
      case DType::U8: p[i] = static_cast<std::byte>(static_cast<std::uint8_t>(x)); break;
    }
  }
  return d;
}

}  // namespace rudnn
