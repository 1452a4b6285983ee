#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "device_backend.h"
#include "rudnn/device.h"

namespace rudnn::runtime {

// One ordered queue: a device and the backend's stream handle, owned (destroyed with the queue) or
// wrapped (the caller's stream: Queue::wrap).
class QueueImpl {
 public:
  QueueImpl(Device device, void* stream, bool owns_stream = true);
  ~QueueImpl();
  QueueImpl(const QueueImpl&) = delete;
  QueueImpl& operator=(const QueueImpl&) = delete;

  const Device& device() const { return device_; }
  void* stream() const { return stream_; }
  std::uint64_t id() const { return id_; }
  bool owns_stream() const { return owns_stream_; }
  // Whether the stream is being captured into a graph: the backend's answer, or the simulated
  // capture a test switched on (the host device has no real one).
  Result<bool, RuntimeError> capturing() const;
  void simulate_capture(bool on) { simulated_capture_ = on; }
  static Queue wrap(std::shared_ptr<QueueImpl> impl) { return Queue(std::move(impl)); }
  static const std::shared_ptr<QueueImpl>& unwrap(const Queue& q) { return q.impl_; }

 private:
  Device device_;
  void* stream_;
  std::uint64_t id_;
  bool owns_stream_;
  std::atomic<bool> simulated_capture_{false};
};

// CaptureViolation naming `what` (a cold plan, a host synchronization, ...) when `queue`'s stream is
// being captured: the call would break the capture, so it fails before touching the stream.
std::optional<RuntimeError> check_not_capturing(const Queue& queue, const std::string& what);

// Device storage of tensors: owned (released with the last tensor), or the caller's (Tensor::view:
// never released by rudnn).
class Buffer {
 public:
  Buffer(std::shared_ptr<QueueImpl> queue, void* ptr, std::size_t bytes, bool owned = true)
      : queue_(std::move(queue)), ptr_(ptr), bytes_(bytes), owned_(owned) {}
  ~Buffer() {
    if (owned_) queue_->device().backend().release(ptr_, queue_->stream());
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<QueueImpl> queue_;  // the queue it was allocated on outlives it
  void* ptr_;
  std::size_t bytes_;
  bool owned_;
};

}  // namespace rudnn::runtime
