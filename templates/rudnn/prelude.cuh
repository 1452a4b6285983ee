#pragma once
// The one header every template includes first. It gives kernels the same vocabulary on both
// targets:
//   - NVRTC (__CUDACC_RTC__): prelude/cuda.cuh — CUDA builtins, no host headers at all.
//   - host emulation device:  prelude/host.h  — the same names implemented by calls into the
//     emulator (fibers, counted barriers, warp rendezvous; see DESIGN §4).
//
// Vocabulary both preludes provide (templates use nothing else from CUDA):
//   types      rudnn::u8, i32, u32, i64, u64 (fixed width, no <cstdint> under NVRTC)
//   qualifiers RUDNN_DEVICE (device function, force-inlined), RUDNN_KERNEL (extern "C" kernel
//              entry), RUDNN_LAUNCH_BOUNDS(n), RUDNN_LAUNCH_BOUNDS_MIN(n, min_blocks), RUDNN_RESTRICT
//   geometry   threadIdx, blockIdx, blockDim, gridDim (x/y/z, unsigned), warpSize
//   sync       __syncthreads(), __syncwarp(mask), __threadfence()
//   warp       __shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync
//              (T = int, unsigned, float, long long, unsigned long long, double; width default 32),
//              __ballot_sync, __any_sync, __all_sync
//   atomics    atomicAdd (int, unsigned, unsigned long long, float), atomicMax/atomicMin (int,
//              unsigned), atomicCAS (int, unsigned, unsigned long long), atomicExch
//   math       expf, exp2f, logf, sqrtf, rsqrtf, fmaxf, fminf, fabsf, __expf, __fdividef,
//              isnan/isinf as rudnn::is_nan / rudnn::is_inf
//   shared     rudnn::dynamic_shared<T>(): the block's dynamic shared memory, 16-byte aligned.
//              Templates take all shared memory from there (the host has no static __shared__).
//   wrappers   tensor-core and async-copy instructions go through named wrappers
//              (rudnn::mma_*, rudnn::ldmatrix_*, rudnn::cp_async_*) that each prelude implements;
//              inline PTX outside a prelude is not allowed (the host could not run it).
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#include "rudnn/prelude/cuda.cuh"
#else
#include "rudnn/prelude/host.h"
#endif
