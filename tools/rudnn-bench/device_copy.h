#pragma once
// Plain device-to-device byte copies outside rudnn's ops: the CUDA driver's cuMemcpyDtoDAsync
// (libcuda.so.1 opened with dlopen, as the runtime opens it) on a CUDA device, memcpy on the host
// emulation device. Two uses: the reference copy bandwidth a memory-bound benchmark reports its
// GB/s against (measured in the same run, on the same device), and filling GB-sized inputs at copy
// speed by replicating an uploaded pool (no host buffer of the whole tensor).
#include <cstddef>

#include "bench_common.h"
#include "rudnn/tensor.h"

namespace rudnn::bench {

// Copies `bytes` bytes from src (at byte `src_offset`) to dst (at `dst_offset`); both tensors on one
// device, ranges inside their storage and not overlapping. Waits for both tensors' queues first and
// for the copy to finish before returning (the copy runs outside rudnn's queues).
Status<RuntimeError> copy_bytes(const Tensor& dst, std::size_t dst_offset, const Tensor& src, std::size_t src_offset,
                                std::size_t bytes);

// The device's copy rate in GB/s, bytes read + written (2 · bytes per copy): the median of
// `timing.runs` runs of `timing.iters` copies of a `bytes`-byte buffer (after one warm copy), each
// run closed by a synchronization: the method time_call uses for the ops.
Result<double, RuntimeError> copy_bandwidth(const Device& device, std::size_t bytes, const Timing& timing);

}  // namespace rudnn::bench
