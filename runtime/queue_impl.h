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

 private:
  Device device_;
  void* stream_;
  std::uint64_t id_;
};

// Device storage owned by tensors.
class Buffer {
 public:
  Buffer(DeviceBackend& backend, void* ptr, std::size_t bytes) : backend_(backend), ptr_(ptr), bytes_(bytes) {}
  ~Buffer() { backend_.release(ptr_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  DeviceBackend& backend_;
  void* ptr_;
  std::size_t bytes_;
};

}  // namespace rudnn::runtime
