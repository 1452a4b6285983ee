#pragma once
// NVRTC prelude: the vocabulary of rudnn/prelude.cuh on a real GPU. NVRTC compiles our templates with
// no include path other than the embedded headers, so nothing here includes a host header; CUDA
// builtins (threadIdx, __syncthreads, __shfl_xor_sync, expf, atomics, ...) are provided by NVRTC
// itself. prelude/host.h implements the same names for the host emulation device.
//
// Wrapper signatures (both preludes; namespace rudnn; u32 = unsigned int). Only these reach
// tensor-core and async-copy instructions; inline PTX anywhere else could not run on the host.
//   void mma_m16n8k16_f16_f32 (float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4]);
//   void mma_m16n8k16_bf16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4]);
//        d = a·b + c; fragments as in the PTX ISA m16n8k16 tables; d may alias c.
//   void ldmatrix_x1(u32 (&r)[1], const void* row);    ldmatrix_x1_trans(u32 (&r)[1], const void* row);
//   void ldmatrix_x2(u32 (&r)[2], const void* row);    ldmatrix_x2_trans(u32 (&r)[2], const void* row);
//   void ldmatrix_x4(u32 (&r)[4], const void* row);    ldmatrix_x4_trans(u32 (&r)[4], const void* row);
//        `row`: this lane's 16-byte-aligned row in shared memory (lanes 0-7 / 0-15 / 0-31 matter).
//   template <int Bytes> void cp_async_ca(void* smem_dst, const void* global_src, u32 src_bytes = Bytes);
//        Bytes ∈ {4, 8, 16}; bytes past src_bytes are zero-filled.
//   void cp_async_cg16(void* smem_dst, const void* global_src, u32 src_bytes = 16);
//   void cp_async_commit();                   // cp.async.commit_group
//   template <int N> void cp_async_wait();    // cp.async.wait_group N
//   void cp_async_wait_all();                 // cp.async.wait_all (= commit_group + wait_group 0)
//   void trap(const char* message);           // abandons the kernel (the message is for the host)
//   u32 shared_address(const void* p);        // the shared-window address of a shared pointer
// Hopper warpgroup MMA (sm_90a only here; the emulator runs it everywhere). A warpgroup is 4
// consecutive warps, the first's index a multiple of 4; all 128 threads issue each call alike.
//   template <int N, bool TransA = false, bool TransB = false>
//   void wgmma_{f16,bf16}_ss(float (&d)[N/2], u64 a_desc, u64 b_desc, bool accumulate);
//   template <int N, bool TransB = false>
//   void wgmma_{f16,bf16}_rs(float (&d)[N/2], const u32 (&a)[4], u64 b_desc, bool accumulate);
//        D (64 x N) = A (64 x 16) · B (16 x N) (+ D when accumulate); N ∈ {32, 64, 128, 256}; d as the
//        PTX ISA's m64nNk16 D fragment (tile/wgmma.cuh); A, B by shared-memory descriptors
//        (K-major, or MN-major with Trans), or A in registers as mma.m16n8k16's A fragment.
//   void wgmma_fence(); void wgmma_commit(); template <int N> void wgmma_wait();
//   template <int K> void wgmma_fence_operand(float (&d)[K]);   // compiler ordering only
//   void fence_proxy_async_shared();   // after shared-memory writes that a wgmma will read
// Other vocabulary: RUDNN_DEVICE, RUDNN_KERNEL, RUDNN_LAUNCH_BOUNDS(n),
// RUDNN_LAUNCH_BOUNDS_MIN(n, min_blocks), RUDNN_RESTRICT, RUDNN_UNROLL, RUDNN_ROLLED,
// rudnn::i32/u32/i64/u64, rudnn::dynamic_shared<T>(), rudnn::is_nan/is_inf (float, double).

#define RUDNN_DEVICE __device__ __forceinline__
#define RUDNN_KERNEL extern "C" __global__
#define RUDNN_LAUNCH_BOUNDS(n) __launch_bounds__(n)
// Also asks ptxas to fit `min_blocks` blocks per SM (caps registers per thread).
#define RUDNN_LAUNCH_BOUNDS_MIN(n, min_blocks) __launch_bounds__(n, min_blocks)
#define RUDNN_RESTRICT __restrict__
// Full unrolling of a loop with a compile-time trip count (register-resident arrays need it).
#define RUDNN_UNROLL _Pragma("unroll")
// Keeps a loop rolled where unrolling it would only multiply live registers (its body is already
// unrolled over register arrays, or ptxas would keep several iterations' values live and spill).
#define RUDNN_ROLLED _Pragma("unroll 1")

namespace rudnn {

using i32 = int;
using u32 = unsigned int;
using u8 = unsigned char;
// long long rather than long: the host prelude uses the same spelling so overloads agree.
using i64 = long long;
using u64 = unsigned long long;
static_assert(sizeof(i32) == 4 && sizeof(u32) == 4 && sizeof(i64) == 8 && sizeof(u64) == 8,
              "rudnn: unexpected integer widths");

// The block's dynamic shared memory. One extern declaration shared by every instantiation; the
// 16-byte alignment lets templates place vectors and ldmatrix rows at its start.
template <class T>
RUDNN_DEVICE T* dynamic_shared() {
  extern __shared__ __align__(16) unsigned char rudnn_dynamic_shared_bytes[];
  return reinterpret_cast<T*>(rudnn_dynamic_shared_bytes);
}

// Bit tests rather than isnan(): they stay correct even if a caller adds --use_fast_math.
RUDNN_DEVICE bool is_nan(float x) { return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u; }
RUDNN_DEVICE bool is_inf(float x) { return (__float_as_uint(x) & 0x7fffffffu) == 0x7f800000u; }
RUDNN_DEVICE bool is_nan(double x) {
  return (static_cast<u64>(__double_as_longlong(x)) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
RUDNN_DEVICE bool is_inf(double x) {
  return (static_cast<u64>(__double_as_longlong(x)) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull;
}

RUDNN_DEVICE void trap(const char* /*message*/) { __trap(); }

namespace cuda_detail {
// PTX shared-state-space address of a generic pointer into shared memory.
RUDNN_DEVICE u32 shared_address(const void* p) { return static_cast<u32>(__cvta_generic_to_shared(p)); }
}  // namespace cuda_detail

// ---------------------------------------------------------------------------------------------------
// Tensor cores: mma.sync m16n8k16, FP32 accumulate.
RUDNN_DEVICE void mma_m16n8k16_f16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
RUDNN_DEVICE void mma_m16n8k16_bf16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// ---------------------------------------------------------------------------------------------------
// ldmatrix. The "memory" clobber keeps the compiler from moving shared-memory stores of this
// thread across the load (the barrier before it orders the other threads' stores).
RUDNN_DEVICE void ldmatrix_x1(u32 (&r)[1], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}
RUDNN_DEVICE void ldmatrix_x2(u32 (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}
RUDNN_DEVICE void ldmatrix_x4(u32 (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}
RUDNN_DEVICE void ldmatrix_x1_trans(u32 (&r)[1], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}
RUDNN_DEVICE void ldmatrix_x2_trans(u32 (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}
RUDNN_DEVICE void ldmatrix_x4_trans(u32 (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(cuda_detail::shared_address(row))
               : "memory");
}

// ---------------------------------------------------------------------------------------------------
// cp.async (sm_80+). The src-size operand gives the zero-fill of partial tails for free.
template <int Bytes>
RUDNN_DEVICE void cp_async_ca(void* smem_dst, const void* global_src, u32 src_bytes = Bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(cuda_detail::shared_address(smem_dst)),
               "l"(__cvta_generic_to_global(global_src)), "n"(Bytes), "r"(src_bytes)
               : "memory");
}
RUDNN_DEVICE void cp_async_cg16(void* smem_dst, const void* global_src, u32 src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(cuda_detail::shared_address(smem_dst)),
               "l"(__cvta_generic_to_global(global_src)), "r"(src_bytes)
               : "memory");
}
RUDNN_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
RUDNN_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
RUDNN_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// The shared-window address of a pointer into shared memory (what wgmma descriptors hold).
RUDNN_DEVICE u32 shared_address(const void* p) { return cuda_detail::shared_address(p); }

}  // namespace rudnn

// ---------------------------------------------------------------------------------------------------
// Hopper warpgroup MMA: wgmma.mma_async m64nNk16, f32 accumulators (sm_90a only: the PTX target must
// carry the 'a' features, which NVRTC announces with __CUDA_ARCH_FEAT_SM90_ALL). Using one of these
// in a kernel compiled for another target is a compile error naming sm_90a.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define RUDNN_HAS_WGMMA 1
#include "rudnn/prelude/wgmma_cuda.cuh"
#else
#define RUDNN_HAS_WGMMA 0
#endif

namespace rudnn {
namespace cuda_detail {
template <int N>
inline constexpr bool wgmma_n = N == 32 || N == 64 || N == 128 || N == 256;

template <bool BF16, int N, bool TransA, bool TransB>
RUDNN_DEVICE void wgmma_ss(float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  static_assert(wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
#if RUDNN_HAS_WGMMA
  if constexpr (N == 32) {
    wgmma_ss_32<BF16, TransA, TransB>(d, a_desc, b_desc, accumulate);
  } else if constexpr (N == 64) {
    wgmma_ss_64<BF16, TransA, TransB>(d, a_desc, b_desc, accumulate);
  } else if constexpr (N == 128) {
    wgmma_ss_128<BF16, TransA, TransB>(d, a_desc, b_desc, accumulate);
  } else {
    wgmma_ss_256<BF16, TransA, TransB>(d, a_desc, b_desc, accumulate);
  }
#else
  static_assert(N < 0, "rudnn: wgmma needs the sm_90a target");
#endif
}
template <bool BF16, int N, bool TransB>
RUDNN_DEVICE void wgmma_rs(float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate) {
  static_assert(wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
#if RUDNN_HAS_WGMMA
  if constexpr (N == 32) {
    wgmma_rs_32<BF16, TransB>(d, a, b_desc, accumulate);
  } else if constexpr (N == 64) {
    wgmma_rs_64<BF16, TransB>(d, a, b_desc, accumulate);
  } else if constexpr (N == 128) {
    wgmma_rs_128<BF16, TransB>(d, a, b_desc, accumulate);
  } else {
    wgmma_rs_256<BF16, TransB>(d, a, b_desc, accumulate);
  }
#else
  static_assert(N < 0, "rudnn: wgmma needs the sm_90a target");
#endif
}
}  // namespace cuda_detail

template <int N, bool TransA = false, bool TransB = false>
RUDNN_DEVICE void wgmma_f16_ss(float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  cuda_detail::wgmma_ss<false, N, TransA, TransB>(d, a_desc, b_desc, accumulate);
}
template <int N, bool TransA = false, bool TransB = false>
RUDNN_DEVICE void wgmma_bf16_ss(float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate) {
  cuda_detail::wgmma_ss<true, N, TransA, TransB>(d, a_desc, b_desc, accumulate);
}
template <int N, bool TransB = false>
RUDNN_DEVICE void wgmma_f16_rs(float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate) {
  cuda_detail::wgmma_rs<false, N, TransB>(d, a, b_desc, accumulate);
}
template <int N, bool TransB = false>
RUDNN_DEVICE void wgmma_bf16_rs(float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate) {
  cuda_detail::wgmma_rs<true, N, TransB>(d, a, b_desc, accumulate);
}
RUDNN_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
RUDNN_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
RUDNN_DEVICE void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "rudnn: wgmma.wait_group takes 0..7");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Emits nothing: a new definition of each accumulator here keeps the compiler from moving their
// uses across the wgmma instructions it cannot see into (after a wait, before a fence).
template <int K>
RUDNN_DEVICE void wgmma_fence_operand(float (&d)[K]) {
  RUDNN_UNROLL
  for (int i = 0; i < K; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Orders this thread's generic-proxy shared-memory writes (st.shared, cp.async) before the async
// proxy's reads (wgmma); a block barrier must follow before another warp's wgmma reads them.
RUDNN_DEVICE void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

}  // namespace rudnn
