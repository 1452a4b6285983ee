#pragma once
// Host prelude: the vocabulary of rudnn/prelude.cuh implemented for the host emulation device
// (DESIGN §4). A kernel translation unit compiled by the host C++ compiler includes this through
// prelude.cuh, expands RUDNN_EMU_MODULE() once, and is loaded with dlopen(RTLD_LOCAL); the runtime then
// calls its `rudnn_emu_bind(api)`.
//
// Every intrinsic that involves other threads or the emulator's bookkeeping goes through the ABI
// table (prelude/emu_abi.h), never through a symbol of the runtime library: kernel modules are built
// with -fvisibility=hidden and librudnn.so exports nothing they could link against.
// Pure per-thread operations (math, atomics on plain memory) are implemented right here.
//
// Intrinsics that can catch a kernel bug take the caller's file/line as defaulted
// __builtin_FILE()/__builtin_LINE() arguments, so emulator faults name the template line.
#include <math.h>
#include <string.h>

#include <type_traits>

#include "rudnn/prelude/emu_abi.h"

// ---------------------------------------------------------------------------------------------------
// Qualifiers
#define RUDNN_DEVICE inline
#define RUDNN_KERNEL extern "C" __attribute__((visibility("default")))
#define RUDNN_LAUNCH_BOUNDS(n)
#define RUDNN_LAUNCH_BOUNDS_MIN(n, min_blocks)
#define RUDNN_RESTRICT __restrict__
// Unrolling only changes speed, and on the host compile time of generated kernels matters more.
#define RUDNN_UNROLL
#define RUDNN_ROLLED

// Templates take shared memory only from rudnn::dynamic_shared<T>(): the emulator has one arena per
// block and static `__shared__` variables would be one per process (shared by every block running
// in parallel). Using it is therefore a compile error with a message that says what to do instead.
// (_Pragma needs one unbroken string literal, hence the long line.)
// clang-format off
#define __shared__ _Pragma("GCC error \"__shared__ is not available on the rudnn host emulation device: templates must take shared memory from rudnn::dynamic_shared<T>()\"")
// clang-format on

namespace rudnn {

using i32 = int;
using u32 = unsigned int;
using u8 = unsigned char;
using i64 = long long;  // long long (not int64_t's `long`) so that both preludes agree on overloads
using u64 = unsigned long long;
static_assert(sizeof(i64) == 8 && sizeof(i32) == 4);

namespace emu_detail {

// The ABI table of the runtime that loaded this module. Hidden so that every kernel module (and a
// test executable) has its own copy and nothing is interposed across dlopen'ed modules.
__attribute__((visibility("hidden"))) inline const rudnn_emu_api* api = nullptr;

inline const rudnn_emu_thread_info& thread_info() { return *api->thread_info(); }

template <class T>
inline constexpr bool is_shfl_type =
    std::is_same_v<T, int> || std::is_same_v<T, unsigned int> || std::is_same_v<T, float> ||
    std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long> || std::is_same_v<T, double> ||
    std::is_same_v<T, long> || std::is_same_v<T, unsigned long>;

template <class T>
inline u64 to_bits(T v) {
  u64 bits = 0;
  memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
inline T from_bits(u64 bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
inline T shfl(int mode, unsigned mask, T v, int arg, int width, const char* file, int line) {
  static_assert(is_shfl_type<T>,
                "rudnn host prelude: shuffles take int, unsigned, float, long long, unsigned long "
                "long or double");
  return from_bits<T>(api->shfl(mode, mask, to_bits(v), sizeof(T), arg, width, file, line));
}

}  // namespace emu_detail

// The block's dynamic shared memory (16-byte aligned, poisoned with 0xFF bytes at block start).
template <class T>
inline T* dynamic_shared() {
  return static_cast<T*>(emu_detail::thread_info().dynamic_shared);
}

// Bit tests rather than isnan(): they stay correct even if a kernel is built with -ffast-math.
inline bool is_nan(float x) { return (emu_detail::to_bits(x) & 0x7fffffffu) > 0x7f800000u; }
inline bool is_inf(float x) { return (emu_detail::to_bits(x) & 0x7fffffffu) == 0x7f800000u; }
inline bool is_nan(double x) { return (emu_detail::to_bits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
inline bool is_inf(double x) { return (emu_detail::to_bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }

// Reports a fault naming the call site and abandons the launch.
[[noreturn]] inline void trap(const char* message, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->trap(message, file, line);
  __builtin_unreachable();
}

// ---------------------------------------------------------------------------------------------------
// Tensor-core and async-copy wrappers (the only way templates reach these instructions).

// mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: d = a * b + c (fragments per the PTX ISA).
inline void mma_m16n8k16_f16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->mma_m16n8k16(RUDNN_EMU_MMA_F16, d, a, b, c, file, line);
}
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
inline void mma_m16n8k16_bf16_f32(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2], const float (&c)[4],
                                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->mma_m16n8k16(RUDNN_EMU_MMA_BF16, d, a, b, c, file, line);
}

// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16; `row` is this lane's 16-byte row.
inline void ldmatrix_x1(u32 (&r)[1], const void* row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(1, 0, r, row, file, line);
}
inline void ldmatrix_x2(u32 (&r)[2], const void* row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(2, 0, r, row, file, line);
}
inline void ldmatrix_x4(u32 (&r)[4], const void* row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(4, 0, r, row, file, line);
}
inline void ldmatrix_x1_trans(u32 (&r)[1], const void* row, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(1, 1, r, row, file, line);
}
inline void ldmatrix_x2_trans(u32 (&r)[2], const void* row, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(2, 1, r, row, file, line);
}
inline void ldmatrix_x4_trans(u32 (&r)[4], const void* row, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  emu_detail::api->ldmatrix(4, 1, r, row, file, line);
}

// cp.async.ca.shared.global (Bytes = 4, 8, 16): copies src_bytes and zero-fills the rest.
template <int Bytes>
inline void cp_async_ca(void* smem_dst, const void* global_src, u32 src_bytes = Bytes,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  emu_detail::api->cp_async(smem_dst, global_src, Bytes, src_bytes, file, line);
}
// cp.async.cg.shared.global, 16 bytes.
inline void cp_async_cg16(void* smem_dst, const void* global_src, u32 src_bytes = 16,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->cp_async(smem_dst, global_src, 16, src_bytes, file, line);
}
inline void cp_async_commit(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->cp_async_commit(file, line);
}
// cp.async.wait_group N
template <int N>
inline void cp_async_wait(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->cp_async_wait(N, file, line);
}
// cp.async.wait_all (= commit_group; wait_group 0)
inline void cp_async_wait_all(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->cp_async_commit(file, line);
  emu_detail::api->cp_async_wait(0, file, line);
}

// ---------------------------------------------------------------------------------------------------
// Hopper warpgroup MMA (sm_90a on a GPU; prelude/cuda.cuh states the contract). The emulator runs
// each warp's 16 rows when its lanes have joined and defers the arithmetic to the wait_group that
// retires the group, reading the operands then.

// The shared-window address of a pointer into the block's dynamic shared memory: the arena's first
// byte is window address RUDNN_EMU_SHARED_WINDOW_BASE (emu_abi.h), deliberately not 1024-aligned,
// so the code that aligns swizzled tiles runs here as it must wherever a GPU's window is not aligned.
inline u32 shared_address(const void* p) {
  return RUDNN_EMU_SHARED_WINDOW_BASE +
         static_cast<u32>(static_cast<const unsigned char*>(p) -
                          static_cast<const unsigned char*>(emu_detail::thread_info().dynamic_shared));
}

#define RUDNN_HAS_WGMMA 1

namespace emu_detail {
template <int N>
inline constexpr bool wgmma_n = N == 32 || N == 64 || N == 128 || N == 256;
constexpr int wgmma_flags(bool accumulate, bool trans_a, bool trans_b) {
  return (accumulate ? RUDNN_EMU_WGMMA_ACCUMULATE : 0) | (trans_a ? RUDNN_EMU_WGMMA_TRANS_A : 0) |
         (trans_b ? RUDNN_EMU_WGMMA_TRANS_B : 0);
}
// The stack pointer of the function this is inlined into (always: a call would report its own
// frame, below the caller's locals), for the wait's scope check; null where the target has no
// spelling for it here (the check is then skipped).
[[gnu::always_inline]] inline const void* stack_pointer() {
  const void* sp = nullptr;
#if defined(__x86_64__)
  asm volatile("mov %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
  asm volatile("mov %0, sp" : "=r"(sp));
#endif
  return sp;
}
}  // namespace emu_detail

template <int N, bool TransA = false, bool TransB = false>
inline void wgmma_f16_ss(float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(emu_detail::wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
  emu_detail::api->wgmma(RUDNN_EMU_MMA_F16, N, d, nullptr, a_desc, b_desc,
                         emu_detail::wgmma_flags(accumulate, TransA, TransB), file, line);
}
template <int N, bool TransA = false, bool TransB = false>
inline void wgmma_bf16_ss(float (&d)[N / 2], u64 a_desc, u64 b_desc, bool accumulate,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(emu_detail::wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
  emu_detail::api->wgmma(RUDNN_EMU_MMA_BF16, N, d, nullptr, a_desc, b_desc,
                         emu_detail::wgmma_flags(accumulate, TransA, TransB), file, line);
}
template <int N, bool TransB = false>
inline void wgmma_f16_rs(float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(emu_detail::wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
  emu_detail::api->wgmma(RUDNN_EMU_MMA_F16, N, d, a, 0, b_desc, emu_detail::wgmma_flags(accumulate, false, TransB),
                         file, line);
}
template <int N, bool TransB = false>
inline void wgmma_bf16_rs(float (&d)[N / 2], const u32 (&a)[4], u64 b_desc, bool accumulate,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(emu_detail::wgmma_n<N>, "rudnn: wgmma N is 32, 64, 128 or 256");
  emu_detail::api->wgmma(RUDNN_EMU_MMA_BF16, N, d, a, 0, b_desc, emu_detail::wgmma_flags(accumulate, false, TransB),
                         file, line);
}
inline void wgmma_fence(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->wgmma_fence(file, line);
}
inline void wgmma_commit(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->wgmma_commit(file, line);
}
// Always inlined, so that the stack pointer it passes is its caller's: the emulator faults where a
// retired wgmma's registers lie below it (their frame returned before the wait).
template <int N>
[[gnu::always_inline]] inline void wgmma_wait(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(N >= 0 && N <= 7, "rudnn: wgmma.wait_group takes 0..7");
  emu_detail::api->wgmma_wait(N, emu_detail::stack_pointer(), file, line);
}
// A compiler-only ordering on a GPU; nothing to do here (the emulator reads operands at the wait).
template <int K>
inline void wgmma_fence_operand(float (&)[K]) {}
inline void fence_proxy_async_shared(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu_detail::api->fence_proxy_async(file, line);
}

}  // namespace rudnn

// ---------------------------------------------------------------------------------------------------
// Geometry: read from the current fiber through the ABI (each expands to an lvalue of a struct
// with unsigned x, y, z).
#define threadIdx (::rudnn::emu_detail::thread_info().thread_idx)
#define blockIdx (::rudnn::emu_detail::thread_info().block_idx)
#define blockDim (::rudnn::emu_detail::thread_info().block_dim)
#define gridDim (::rudnn::emu_detail::thread_info().grid_dim)
__attribute__((visibility("hidden"))) inline constexpr int warpSize = 32;

// ---------------------------------------------------------------------------------------------------
// Synchronization
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::rudnn::emu_detail::api->syncthreads(RUDNN_EMU_BARRIER_PLAIN, 0, file, line);
}
inline int __syncthreads_count(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::api->syncthreads(RUDNN_EMU_BARRIER_COUNT, predicate, file, line);
}
inline int __syncthreads_and(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::api->syncthreads(RUDNN_EMU_BARRIER_AND, predicate, file, line);
}
inline int __syncthreads_or(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::api->syncthreads(RUDNN_EMU_BARRIER_OR, predicate, file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::rudnn::emu_detail::api->syncwarp(mask, file, line);
}
inline void __threadfence() { ::rudnn::emu_detail::api->threadfence(); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
[[noreturn]] inline void __trap(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::rudnn::emu_detail::api->trap("__trap()", file, line);
  __builtin_unreachable();
}

// ---------------------------------------------------------------------------------------------------
// Warp collectives (exact CUDA semantics; see EMULATOR-FACTS.md)
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::shfl(RUDNN_EMU_SHFL_IDX, mask, var, src_lane, width, file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::shfl(RUDNN_EMU_SHFL_UP, mask, var, static_cast<int>(delta), width, file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::shfl(RUDNN_EMU_SHFL_DOWN, mask, var, static_cast<int>(delta), width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::shfl(RUDNN_EMU_SHFL_XOR, mask, var, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return ::rudnn::emu_detail::api->vote(RUDNN_EMU_VOTE_BALLOT, mask, predicate, file, line);
}
inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(::rudnn::emu_detail::api->vote(RUDNN_EMU_VOTE_ANY, mask, predicate, file, line));
}
inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(::rudnn::emu_detail::api->vote(RUDNN_EMU_VOTE_ALL, mask, predicate, file, line));
}

// Warp reductions (sm_80): every lane of `mask` receives the result over the lanes of `mask`.
#define RUDNN_EMU_WARP_REDUCE(name, op, T, is_signed)                                                       \
  inline T name(unsigned mask, T value, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { \
    return static_cast<T>(                                                                                  \
        ::rudnn::emu_detail::api->reduce(op, is_signed, mask, static_cast<unsigned>(value), file, line));   \
  }
RUDNN_EMU_WARP_REDUCE(__reduce_add_sync, RUDNN_EMU_REDUCE_ADD, int, 1)
RUDNN_EMU_WARP_REDUCE(__reduce_add_sync, RUDNN_EMU_REDUCE_ADD, unsigned, 0)
RUDNN_EMU_WARP_REDUCE(__reduce_min_sync, RUDNN_EMU_REDUCE_MIN, int, 1)
RUDNN_EMU_WARP_REDUCE(__reduce_min_sync, RUDNN_EMU_REDUCE_MIN, unsigned, 0)
RUDNN_EMU_WARP_REDUCE(__reduce_max_sync, RUDNN_EMU_REDUCE_MAX, int, 1)
RUDNN_EMU_WARP_REDUCE(__reduce_max_sync, RUDNN_EMU_REDUCE_MAX, unsigned, 0)
RUDNN_EMU_WARP_REDUCE(__reduce_and_sync, RUDNN_EMU_REDUCE_AND, unsigned, 0)
RUDNN_EMU_WARP_REDUCE(__reduce_or_sync, RUDNN_EMU_REDUCE_OR, unsigned, 0)
RUDNN_EMU_WARP_REDUCE(__reduce_xor_sync, RUDNN_EMU_REDUCE_XOR, unsigned, 0)
#undef RUDNN_EMU_WARP_REDUCE

// ---------------------------------------------------------------------------------------------------
// Atomics: real atomic instructions, because blocks may run in parallel on several OS threads.
// Read-modify-write atomics return the old value, as in CUDA.
namespace rudnn::emu_detail {
template <class T, class F>
inline T atomic_update(T* address, F f) {
  T old;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  T desired;
  do {
    desired = f(old);
  } while (!__atomic_compare_exchange(address, &old, &desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return old;
}
}  // namespace rudnn::emu_detail

inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicAdd(unsigned* a, unsigned v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);
}
inline float atomicAdd(float* a, float v) {
  return ::rudnn::emu_detail::atomic_update(a, [v](float o) { return o + v; });
}
inline double atomicAdd(double* a, double v) {
  return ::rudnn::emu_detail::atomic_update(a, [v](double o) { return o + v; });
}
inline int atomicSub(int* a, int v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicSub(unsigned* a, unsigned v) { return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); }
#define RUDNN_EMU_ATOMIC_MINMAX(T)                                                    \
  inline T atomicMax(T* a, T v) {                                                     \
    return ::rudnn::emu_detail::atomic_update(a, [v](T o) { return o < v ? v : o; }); \
  }                                                                                   \
  inline T atomicMin(T* a, T v) {                                                     \
    return ::rudnn::emu_detail::atomic_update(a, [v](T o) { return v < o ? v : o; }); \
  }
RUDNN_EMU_ATOMIC_MINMAX(int)
RUDNN_EMU_ATOMIC_MINMAX(unsigned)
RUDNN_EMU_ATOMIC_MINMAX(long long)
RUDNN_EMU_ATOMIC_MINMAX(unsigned long long)
#undef RUDNN_EMU_ATOMIC_MINMAX
#define RUDNN_EMU_ATOMIC_BITS(T)                                                            \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }        \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); }      \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); }    \
  inline T atomicCAS(T* a, T compare, T v) {                                                \
    __atomic_compare_exchange_n(a, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return compare;                                                                         \
  }
RUDNN_EMU_ATOMIC_BITS(int)
RUDNN_EMU_ATOMIC_BITS(unsigned)
RUDNN_EMU_ATOMIC_BITS(unsigned long long)
#undef RUDNN_EMU_ATOMIC_BITS
inline float atomicExch(float* a, float v) {
  float old;
  __atomic_exchange(a, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}

// ---------------------------------------------------------------------------------------------------
// Math (expf, exp2f, logf, sqrtf, fmaxf, fminf, fabsf come from <math.h>; CUDA's fmaxf/fminf have
// the same NaN rule as C: a NaN operand yields the other operand).
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// ---------------------------------------------------------------------------------------------------
// Expanded once per kernel module: the entry point the runtime calls after dlopen to hand over its
// ABI table, and the ABI version the module was compiled against (checked before binding).
#define RUDNN_EMU_MODULE()                                                                            \
  extern "C" __attribute__((visibility("default"))) void rudnn_emu_bind(const rudnn_emu_api* api) {   \
    ::rudnn::emu_detail::api = api;                                                                   \
  }                                                                                                   \
  extern "C" __attribute__((visibility("default"))) unsigned int rudnn_emu_module_abi_version(void) { \
    return RUDNN_EMU_ABI_VERSION;                                                                     \
  }                                                                                                   \
  static_assert(true, "")
