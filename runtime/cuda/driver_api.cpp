#include "cuda/driver_api.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace rudnn::runtime::cuda {

namespace {

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string reason;
};

template <class F>
bool bind(void* lib, F& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!slot) missing += std::string(missing.empty() ? "" : ", ") + name;
  return slot != nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.reason = fmt::format("libcuda.so.1 could not be opened ({})", e ? e : "unknown");
    return l;
  }
  std::string missing;
  DriverApi& a = l.api;
  bind(lib, a.cuInit, "cuInit", missing);
  bind(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
  bind(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
  bind(lib, a.cuDeviceGet, "cuDeviceGet", missing);
  bind(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
  bind(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  bind(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  bind(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  bind(lib, a.cuMemAlloc, "cuMemAlloc_v2", missing);
  bind(lib, a.cuMemFree, "cuMemFree_v2", missing);
  bind(lib, a.cuMemAllocAsync, "cuMemAllocAsync", missing);
  bind(lib, a.cuMemFreeAsync, "cuMemFreeAsync", missing);
  bind(lib, a.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", missing);
  bind(lib, a.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", missing);
  bind(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  bind(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  bind(lib, a.cuMemsetD8Async, "cuMemsetD8Async", missing);
  bind(lib, a.cuStreamCreate, "cuStreamCreate", missing);
  bind(lib, a.cuStreamDestroy, "cuStreamDestroy_v2", missing);
  bind(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
  bind(lib, a.cuStreamIsCapturing, "cuStreamIsCapturing", missing);
  bind(lib, a.cuModuleLoadData, "cuModuleLoadData", missing);
  bind(lib, a.cuModuleUnload, "cuModuleUnload", missing);
  bind(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
  bind(lib, a.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
  bind(lib, a.cuFuncGetAttribute, "cuFuncGetAttribute", missing);
  bind(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
  bind(lib, a.cuGetErrorString, "cuGetErrorString", missing);
  // Events only time autotuning: a driver without them still runs kernels (events() says why not).
  std::string missing_events;
  bind(lib, a.cuEventCreate, "cuEventCreate", missing_events);
  bind(lib, a.cuEventRecord, "cuEventRecord", missing_events);
  bind(lib, a.cuEventSynchronize, "cuEventSynchronize", missing_events);
  bind(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing_events);
  // cuda.h maps cuEventElapsedTime to the _v2 entry (CUDA 12.8+); older drivers have only v1,
  // whose signature is the same.
  std::string missing_v2;
  if (!bind(lib, a.cuEventElapsedTime, "cuEventElapsedTime_v2", missing_v2))
    a.cuEventElapsedTime = reinterpret_cast<decltype(a.cuEventElapsedTime)>(dlsym(lib, "cuEventElapsedTime"));
  if (!a.cuEventElapsedTime) missing_events += ", cuEventElapsedTime";
  l.api.has_events = missing_events.empty();
  if (!missing.empty()) {
    l.reason = "libcuda.so.1 lacks " + missing;
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
