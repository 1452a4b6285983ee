#pragma once
// Tensors: device storage + shape + strides + dtype + queue. Tensors made by rudnn are contiguous
// (row-major); the storage is shared between copies of a Tensor handle.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rudnn/device.h"
#include "rudnn/dtype.h"
#include "rudnn/error.h"

namespace rudnn {

using Shape = std::vector<std::int64_t>;
RUDNN_API std::string shape_to_string(const Shape& shape);  // "[2, 3]"
// The product of the extents. Only for shapes already validated (a Tensor's, a HostData's from
// from_f64/read): an unvalidated shape goes through checked_element_count.
RUDNN_API std::int64_t element_count(const Shape& shape);
// The product of the extents, or nullopt when an extent is negative or the product (or its size in
// bytes) does not fit in int64: the one check every size formed from user input goes through.
RUDNN_API std::optional<std::int64_t> checked_element_count(const Shape& shape);
RUDNN_API std::optional<std::int64_t> checked_byte_count(const Shape& shape, DType dtype);

// The elements from one row to the next when (shape, strides) lay out rows of contiguous last-dim
// elements: the last dim has stride 1 and every other dim collapses into one row index with a
// single row stride ≥ the last extent (extent-1 dims do not count). The last extent when contiguous
// (or when nothing is stepped over); nullopt for any other layout, or rank 0. This is the layout of
// an engine's row-strided activations (SPEC §13), e.g. the q columns of a fused [tokens, 3·h] buffer.
RUDNN_API std::optional<std::int64_t> row_stride(const Shape& shape, const Shape& strides);

namespace runtime {
class Buffer;
}

// Host data with shape and dtype: what `to_host` returns and what `Tensor::upload` takes.
struct RUDNN_API HostData {
  Shape shape;
  DType dtype = DType::F32;
  std::vector<std::byte> bytes;

  std::int64_t numel() const { return element_count(shape); }
  // Values converted to double (any dtype); for tests, tools and readback.
  std::vector<double> to_f64() const;
  // Builds data of `dtype` from doubles, rounding as the dtype does.
  static HostData from_f64(const Shape& shape, DType dtype, std::span<const double> values);
};

class RUDNN_API Tensor {
 public:
  static constexpr std::size_t kViewAlignment = 16;
  // Uninitialized storage of shape/dtype on `queue`'s device, owned by the tensor.
  static Result<Tensor, RuntimeError> empty(const Shape& shape, DType dtype, const Queue& queue);
  static Result<Tensor, RuntimeError> empty(const Shape& shape, DType dtype, const Device& device);
  // A view of caller-owned memory (SPEC §13): `data` on `queue`'s device (a device pointer on a GPU,
  // a host pointer on the host device), never freed by rudnn; the caller keeps it alive while the
  // view and the work queued on it live. `strides` in elements (empty: contiguous); a strided view
  // goes where an op takes strides, elsewhere it is rejected naming the argument and its strides.
  // `data` must be kViewAlignment-byte aligned (the kernels' vector loads and stores).
  static Result<Tensor, RuntimeError> view(void* data, const Shape& shape, const Shape& strides, DType dtype,
                                           const Queue& queue);
  // Copies host data to a new tensor (ordered on `queue`).
  static Result<Tensor, RuntimeError> upload(const HostData& data, const Queue& queue);
  static Result<Tensor, RuntimeError> upload(const HostData& data, const Device& device);

  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  std::int64_t rank() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t dim(std::int64_t i) const { return shape_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const { return element_count(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  const Queue& queue() const { return queue_; }
  const Device& device() const { return queue_.device(); }
  bool is_contiguous() const;
  // rudnn::row_stride of this tensor: rows with one stride, or nullopt.
  std::optional<std::int64_t> row_stride() const { return rudnn::row_stride(shape_, strides_); }
  // The bytes from the first to one past the last element (nbytes() when contiguous; 0 when empty).
  std::size_t span_bytes() const;
  // Device address of the first element (a host pointer on the host device).
  void* data() const;
  // Whether another Tensor handle shares this storage (copy-on-write decisions, e.g. paged append).
  bool storage_shared() const { return buffer_.use_count() > 1; }
  // Fills the storage with a NaN/garbage pattern (tests: "every element written").
  Status<RuntimeError> poison() const;

 private:
  Tensor(std::shared_ptr<runtime::Buffer> buffer, Shape shape, DType dtype, Queue queue);
  Tensor(std::shared_ptr<runtime::Buffer> buffer, Shape shape, Shape strides, DType dtype, Queue queue);
  std::shared_ptr<runtime::Buffer> buffer_;
  Shape shape_, strides_;
  DType dtype_;
  Queue queue_;
};

// Waits for the tensor's queue and returns its contents (the guide's into_data_sync).
RUDNN_API Result<HostData, RuntimeError> to_host(const Tensor& tensor);

}  // namespace rudnn
