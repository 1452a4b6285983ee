// Tensors, host data and readback.
#include <cmath>
#include <cstring>

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

std::optional<RuntimeError> check_shape(const Shape& shape) {
  for (auto d : shape)
    if (d < 0) return RuntimeError(ErrorKind::ShapeMismatch, "shape", "non-negative extents", shape_to_string(shape));
  return std::nullopt;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Buffer> buffer, Shape shape, DType dtype, Queue queue)
    : buffer_(std::move(buffer)), shape_(std::move(shape)), dtype_(dtype), queue_(std::move(queue)) {
  strides_ = contiguous_strides(shape_);
}

Result<Tensor, RuntimeError> Tensor::empty(const Shape& shape, DType dtype, const Queue& queue) {
  if (auto e = check_shape(shape)) return *e;
  const std::size_t bytes = static_cast<std::size_t>(element_count(shape)) * dtype_size(dtype);
  auto ptr = queue.device().backend().allocate(bytes, queue.impl().stream());
  if (!ptr.ok()) return ptr.error();
  return Tensor(std::make_shared<Buffer>(runtime::QueueImpl::unwrap(queue), ptr.value(), bytes), shape, dtype, queue);
}

Result<Tensor, RuntimeError> Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  return empty(shape, dtype, Queue::default_queue(device));
}

Result<Tensor, RuntimeError> Tensor::upload(const HostData& data, const Queue& queue) {
  const std::size_t expected = static_cast<std::size_t>(element_count(data.shape)) * dtype_size(data.dtype);
  if (auto e = check_shape(data.shape)) return *e;
  if (data.bytes.size() != expected)
    return RuntimeError(ErrorKind::ShapeMismatch, "data", std::to_string(expected) + " bytes for " +
                        shape_to_string(data.shape), std::to_string(data.bytes.size()) + " bytes");
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

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

void* Tensor::data() const { return buffer_ ? buffer_->data() : nullptr; }

Status<RuntimeError> Tensor::poison() const {
  if (nbytes() == 0) return {};
  return device().backend().fill_bytes(queue_.impl().stream(), data(), 0xff, nbytes());
}

Result<HostData, RuntimeError> to_host(const Tensor& tensor) {
  HostData out;
  out.shape = tensor.shape();
  out.dtype = tensor.dtype();
  out.bytes.resize(tensor.nbytes());
  if (!out.bytes.empty()) {
    auto& q = tensor.queue();
    auto s = q.device().backend().copy_to_host(q.impl().stream(), out.bytes.data(), tensor.data(), out.bytes.size());
    if (!s.ok()) return s.error();
  }
  auto w = tensor.queue().synchronize();
  if (!w.ok()) return w.error();
  return out;
}

// --- host data conversions ---------------------------------------------------------------------

std::vector<double> HostData::to_f64() const {
  const std::size_t n = static_cast<std::size_t>(numel());
  std::vector<double> v(n);
  const std::byte* p = bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::F32: { float f; std::memcpy(&f, p + 4 * i, 4); v[i] = f; break; }
      case DType::F16: { std::uint16_t h; std::memcpy(&h, p + 2 * i, 2); v[i] = half_bits_to_float(h); break; }
      case DType::BF16: { std::uint16_t h; std::memcpy(&h, p + 2 * i, 2); v[i] = bf16_bits_to_float(h); break; }
      case DType::U32: { std::uint32_t u; std::memcpy(&u, p + 4 * i, 4); v[i] = u; break; }
      case DType::I32: { std::int32_t s; std::memcpy(&s, p + 4 * i, 4); v[i] = s; break; }
      case DType::I64: { std::int64_t s; std::memcpy(&s, p + 8 * i, 8); v[i] = static_cast<double>(s); break; }
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
  const std::size_t n = static_cast<std::size_t>(element_count(shape));
  d.bytes.resize(n * dtype_size(dtype));
  std::byte* p = d.bytes.data();
  for (std::size_t i = 0; i < n && i < values.size(); ++i) {
    const double x = values[i];
    switch (dtype) {
      case DType::F32: { float f = static_cast<float>(x); std::memcpy(p + 4 * i, &f, 4); break; }
      case DType::F16: { auto h = float_to_half_bits(static_cast<float>(x)); std::memcpy(p + 2 * i, &h, 2); break; }
      case DType::BF16: { auto h = float_to_bf16_bits(static_cast<float>(x)); std::memcpy(p + 2 * i, &h, 2); break; }
      case DType::U32: { auto u = static_cast<std::uint32_t>(x); std::memcpy(p + 4 * i, &u, 4); break; }
      case DType::I32: { auto s = static_cast<std::int32_t>(x); std::memcpy(p + 4 * i, &s, 4); break; }
      case DType::I64: { auto s = static_cast<std::int64_t>(x); std::memcpy(p + 8 * i, &s, 8); break; }
      case DType::FP8E4M3: p[i] = static_cast<std::byte>(float_to_fp8e4m3_bits(static_cast<float>(x))); break;
      case DType::U8: p[i] = static_cast<std::byte>(static_cast<std::uint8_t>(x)); break;
    }
  }
  return d;
}

}  // namespace rudnn
