#pragma once
#include <atomic>
#include <memory>

#include "device_backend.h"
#include "rudnn/device.h"

namespace rudnn::runtime {

// One ordered queue: a device and the backend's stream handle.
class QueueImpl {
 public:
  QueueImpl(Device device, void* stream);
  ~QueueImpl();
  QueueImpl(const QueueImpl&) = delete;
  QueueImpl& operator=(const QueueImpl&) = delete;

  const Device& device() const { return device_; }
  void* stream() const { return stream_; }
  std::uint64_t id() const { return id_; }
  static Queue wrap(std::shared_ptr<QueueImpl> impl) { return Queue(std::move(impl)); }
  static const std::shared_ptr<QueueImpl>& unwrap(const Queue& q) { return q.impl_; }

 private:
  Device device_;
  void* stream_;
  std::uint64_t id_;
};

// Device storage owned by tensors.
class Buffer {
 public:
  Buffer(std::shared_ptr<QueueImpl> queue, void* ptr, std::size_t bytes)
      : queue_(std::move(queue)), ptr_(ptr), bytes_(bytes) {}
  ~Buffer() { queue_->device().backend().release(ptr_, queue_->stream()); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<QueueImpl> queue_;  // the queue it was allocated on outlives it
  void* ptr_;
  std::size_t bytes_;
};

}  // namespace rudnn::runtime
