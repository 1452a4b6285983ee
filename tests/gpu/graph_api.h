#pragma once
// The Driver API entries the GPU tests' CUDA graph captures need (begin / end capture, instantiate,
// replay) and a stream of the test's own (an engine's stream for Queue::wrap), opened from
// libcuda.so.1 with dlopen (DynamicLibrary): the tests do not link the driver, as librudnn.so does not.
#include <fmt/format.h>

#include <cstddef>
#include <string>

#include "dynamic_library.h"

namespace rudnn::testing {

// The Driver API entries the capture needs, from libcuda.so.1 (the test does not link the driver,
// as librudnn.so does not). CUresult 0 is CUDA_SUCCESS.
struct GraphApi {
  using Stream = void*;
  using Graph = void*;
  using GraphExec = void*;
  int (*begin_capture)(Stream, int mode);  // cuStreamBeginCapture_v2
  int (*end_capture)(Stream, Graph*);
  int (*instantiate)(GraphExec*, Graph, unsigned long long flags);  // cuGraphInstantiateWithFlags
  int (*launch)(GraphExec, Stream);
  int (*exec_destroy)(GraphExec);
  int (*graph_destroy)(Graph);
  int (*synchronize)(Stream);
  int (*stream_create)(Stream*, unsigned flags);                                              // cuStreamCreate
  int (*stream_destroy)(Stream);                                                              // cuStreamDestroy_v2
  int (*copy_to_device)(unsigned long long dst, const void* src, std::size_t bytes, Stream);  // cuMemcpyHtoDAsync_v2
  int (*error_string)(int, const char**);

  static constexpr int kCaptureModeGlobal = 0;                // CU_STREAM_CAPTURE_MODE_GLOBAL
  static constexpr unsigned long long kAutoFreeOnLaunch = 1;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH

  std::string describe(int r) const {
    const char* s = nullptr;
    if (error_string) error_string(r, &s);
    return fmt::format("CUresult {} ({})", r, s ? s : "?");
  }
};

// nullptr (with `why`) when libcuda.so.1 or an entry is missing.
inline const GraphApi* graph_api(std::string& why) {
  static std::string reason;
  static const GraphApi* api = []() -> const GraphApi* {
    DynamicLibrary lib("libcuda.so.1");
    static GraphApi a{};
    lib.bind(a.begin_capture, "cuStreamBeginCapture_v2");
    lib.bind(a.end_capture, "cuStreamEndCapture");
    lib.bind(a.instantiate, "cuGraphInstantiateWithFlags");
    lib.bind(a.launch, "cuGraphLaunch");
    lib.bind(a.exec_destroy, "cuGraphExecDestroy");
    lib.bind(a.graph_destroy, "cuGraphDestroy");
    lib.bind(a.synchronize, "cuStreamSynchronize");
    lib.bind(a.stream_create, "cuStreamCreate");
    lib.bind(a.stream_destroy, "cuStreamDestroy_v2");
    lib.bind(a.copy_to_device, "cuMemcpyHtoDAsync_v2");
    lib.bind(a.error_string, "cuGetErrorString");
    reason = lib.unavailable();
    return reason.empty() ? &a : nullptr;
  }();
  why = reason;
  return api;
}

}  // namespace rudnn::testing
