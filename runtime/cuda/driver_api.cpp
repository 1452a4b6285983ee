#include "cuda/driver_api.h"

#include <fmt/format.h>

#include "dynamic_library.h"

namespace rudnn::runtime::cuda {

namespace {

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string reason;
};

Loaded load() {
  Loaded l;
  DynamicLibrary lib("libcuda.so.1");
  DriverApi& a = l.api;
  lib.bind(a.cuInit, "cuInit");
  lib.bind(a.cuDriverGetVersion, "cuDriverGetVersion");
  lib.bind(a.cuDeviceGetCount, "cuDeviceGetCount");
  lib.bind(a.cuDeviceGet, "cuDeviceGet");
  lib.bind(a.cuDeviceGetName, "cuDeviceGetName");
  lib.bind(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  lib.bind(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  lib.bind(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  lib.bind(a.cuMemAlloc, "cuMemAlloc_v2");
  lib.bind(a.cuMemFree, "cuMemFree_v2");
  lib.bind(a.cuMemAllocAsync, "cuMemAllocAsync");
  lib.bind(a.cuMemFreeAsync, "cuMemFreeAsync");
  lib.bind(a.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
  lib.bind(a.cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
  lib.bind(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  lib.bind(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  lib.bind(a.cuMemsetD8Async, "cuMemsetD8Async");
  lib.bind(a.cuMemHostAlloc, "cuMemHostAlloc");
  lib.bind(a.cuMemFreeHost, "cuMemFreeHost");
  lib.bind(a.cuStreamCreate, "cuStreamCreate");
  lib.bind(a.cuStreamDestroy, "cuStreamDestroy_v2");
  lib.bind(a.cuStreamSynchronize, "cuStreamSynchronize");
  lib.bind(a.cuStreamIsCapturing, "cuStreamIsCapturing");
  lib.bind(a.cuModuleLoadData, "cuModuleLoadData");
  lib.bind(a.cuModuleUnload, "cuModuleUnload");
  lib.bind(a.cuModuleGetFunction, "cuModuleGetFunction");
  lib.bind(a.cuFuncSetAttribute, "cuFuncSetAttribute");
  lib.bind(a.cuFuncGetAttribute, "cuFuncGetAttribute");
  lib.bind(a.cuLaunchKernel, "cuLaunchKernel");
  lib.bind(a.cuGetErrorString, "cuGetErrorString");
  // Events only time autotuning: a driver without them still runs kernels (has_events says so).
  // cuda.h maps cuEventElapsedTime to the _v2 entry (CUDA 12.8+); older drivers have only v1,
  // whose signature is the same.
  bool events = lib.bind_optional(a.cuEventCreate, "cuEventCreate");
  events = lib.bind_optional(a.cuEventRecord, "cuEventRecord") && events;
  events = lib.bind_optional(a.cuEventSynchronize, "cuEventSynchronize") && events;
  (void)lib.bind_optional(a.cuEventQuery, "cuEventQuery");
  events = lib.bind_optional(a.cuEventDestroy, "cuEventDestroy_v2") && events;
  events = (lib.bind_optional(a.cuEventElapsedTime, "cuEventElapsedTime_v2") ||
            lib.bind_optional(a.cuEventElapsedTime, "cuEventElapsedTime")) &&
           events;
  l.api.has_events = events;
  if (std::string why = lib.unavailable(); !why.empty()) {
    l.reason = why;
    return l;
  }
  if (CUresult r = a.cuInit(0); r != CUDA_SUCCESS) {
    const char* s = nullptr;
    a.cuGetErrorString(r, &s);
    l.reason = fmt::format("cuInit failed: {}", s ? s : std::to_string(r));
    return l;
  }
  l.ok = true;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const DriverApi* driver() { return loaded().ok ? &loaded().api : nullptr; }
const std::string& driver_unavailable_reason() { return loaded().reason; }

std::string error_string(CUresult r) {
  const char* s = nullptr;
  if (auto* d = driver()) d->cuGetErrorString(r, &s);
  return s ? fmt::format("{} ({})", s, static_cast<int>(r)) : fmt::format("CUresult {}", static_cast<int>(r));
}

}  // namespace rudnn::runtime::cuda
