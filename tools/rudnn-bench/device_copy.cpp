#include "device_copy.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dynamic_library.h"

namespace rudnn::bench {
namespace {

// The few driver entries a copy needs, from the libcuda.so.1 the runtime already loaded.
struct Driver {
  CUresult (*init)(unsigned int) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*error_string)(CUresult, const char**) = nullptr;
  std::string unavailable;  // why the driver cannot be used; empty when it can
};

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    DynamicLibrary lib("libcuda.so.1");
    lib.bind(d.init, "cuInit");
    lib.bind(d.device_get, "cuDeviceGet");
    lib.bind(d.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    lib.bind(d.ctx_set_current, "cuCtxSetCurrent");
    lib.bind(d.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2");
    lib.bind(d.stream_synchronize, "cuStreamSynchronize");
    lib.bind(d.error_string, "cuGetErrorString");
    d.unavailable = lib.unavailable();
    if (d.unavailable.empty())
      if (CUresult r = d.init(0); r != CUDA_SUCCESS) d.unavailable = "cuInit failed (" + std::to_string(r) + ")";
    return d;
  }();
  return d;
}

RuntimeError driver_error(const char* call, CUresult r) {
  const char* text = nullptr;
  if (driver().error_string) driver().error_string(r, &text);
  return RuntimeError(ErrorKind::DriverFailure, call, "CUDA_SUCCESS", text ? text : std::to_string(r),
                      "rudnn-bench device copy");
}

// Makes the device's primary context (the one rudnn's runtime uses) current on this thread.
Status<RuntimeError> bind_device(const Device& device) {
  const Driver& d = driver();
  if (!d.unavailable.empty()) return RuntimeError(ErrorKind::NoDevice, "device copy", "the CUDA driver", d.unavailable);
  static std::map<int, CUcontext> contexts;  // retained once per ordinal, for the process
  auto it = contexts.find(device.ordinal());
  if (it == contexts.end()) {
    CUdevice dev = 0;
    if (CUresult r = d.device_get(&dev, device.ordinal()); r != CUDA_SUCCESS) return driver_error("cuDeviceGet", r);
    CUcontext ctx = nullptr;
    if (CUresult r = d.primary_ctx_retain(&ctx, dev); r != CUDA_SUCCESS)
      return driver_error("cuDevicePrimaryCtxRetain", r);
    it = contexts.emplace(device.ordinal(), ctx).first;
  }
  if (CUresult r = d.ctx_set_current(it->second); r != CUDA_SUCCESS) return driver_error("cuCtxSetCurrent", r);
  return {};
}

// One copy queued on the context's legacy default stream (CUDA; rudnn's own streams are
// non-blocking, so callers synchronize around it) or done at once (host).
Status<RuntimeError> enqueue_copy(const Device& device, void* dst, const void* src, std::size_t bytes) {
  if (device.kind() == DeviceKind::Host) {
    std::memcpy(dst, src, bytes);
    return {};
  }
  if (CUresult r = driver().memcpy_dtod_async(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                                              bytes, nullptr);
      r != CUDA_SUCCESS)
    return driver_error("cuMemcpyDtoDAsync", r);
  return {};
}

Status<RuntimeError> finish_copies(const Device& device) {
  if (device.kind() == DeviceKind::Host) return {};
  if (CUresult r = driver().stream_synchronize(nullptr); r != CUDA_SUCCESS)
    return driver_error("cuStreamSynchronize", r);
  return {};
}

}  // namespace

Status<RuntimeError> copy_bytes(const Tensor& dst, std::size_t dst_offset, const Tensor& src, std::size_t src_offset,
                                std::size_t bytes) {
  if (!(dst.device() == src.device()))
    return RuntimeError(ErrorKind::DeviceMismatch, "copy source", dst.device().to_string(), src.device().to_string());
  if (src_offset > src.nbytes() || bytes > src.nbytes() - src_offset || dst_offset > dst.nbytes() ||
      bytes > dst.nbytes() - dst_offset)
    return RuntimeError(
        ErrorKind::InvalidValue, "copy range", "inside both tensors",
        std::to_string(bytes) + " bytes at " + std::to_string(src_offset) + " → " + std::to_string(dst_offset));
  if (bytes == 0) return {};
  for (const Tensor* t : {&src, &dst})
    if (auto s = t->queue().synchronize(); !s.ok()) return s.error();
  const Device& device = dst.device();
  if (device.kind() == DeviceKind::Cuda)
    if (auto s = bind_device(device); !s.ok()) return s.error();
  auto* d = static_cast<std::byte*>(dst.data()) + dst_offset;
  const auto* s = static_cast<const std::byte*>(src.data()) + src_offset;
  if (auto st = enqueue_copy(device, d, s, bytes); !st.ok()) return st.error();
  return finish_copies(device);
}

Result<double, RuntimeError> copy_bandwidth(const Device& device, std::size_t bytes, const Timing& timing) {
  const Shape shape{static_cast<std::int64_t>(bytes)};
  auto src = Tensor::empty(shape, DType::U8, device);
  if (!src.ok()) return src.error();
  auto dst = Tensor::empty(shape, DType::U8, device);
  if (!dst.ok()) return dst.error();
  if (auto s = src->queue().synchronize(); !s.ok()) return s.error();  // the stream-ordered allocations
  if (device.kind() == DeviceKind::Cuda)
    if (auto s = bind_device(device); !s.ok()) return s.error();
  using clock = std::chrono::steady_clock;
  std::vector<double> us;
  for (int r = -1; r < timing.runs; ++r) {  // run -1: one warm copy (first touch, clocks)
    const int iters = r < 0 ? 1 : timing.iters;
    const auto t0 = clock::now();
    for (int k = 0; k < iters; ++k)
      if (auto s = enqueue_copy(device, dst->data(), src->data(), bytes); !s.ok()) return s.error();
    if (auto s = finish_copies(device); !s.ok()) return s.error();
    if (r >= 0) us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count() / iters);
  }
  std::sort(us.begin(), us.end());
  const double median_us = std::max(us[us.size() / 2], 1e-3);
  return 2.0 * static_cast<double>(bytes) / (median_us * 1e-6) / 1e9;
}

}  // namespace rudnn::bench
