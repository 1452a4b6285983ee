/* The C ABI between a kernel compiled for the host emulation device and the emulator inside the
 * runtime (DESIGN §4).
 *
 * Why a table of function pointers and not plain symbols: kernel .so files are built with
 * -fvisibility=hidden and opened with dlopen(RTLD_LOCAL), and they must not depend on any symbol of
 * librudnn.so (whose symbols are hidden too). The loader calls the module's `rudnn_emu_bind(api)` once
 * (defined by RUDNN_EMU_MODULE() in prelude/host.h) and every emulated intrinsic goes through `api`.
 *
 * Why plain C: the table crosses a shared-library boundary between objects that may be built by
 * different compilers or standard-library versions; only C types and calling conventions are stable.
 *
 * Versioning: `abi_version` is bumped whenever a slot changes meaning or order. New slots are only
 * ever appended, and `struct_size` lets a newer module detect an older runtime. A module reports the
 * version it was compiled against through `rudnn_emu_module_abi_version()`; the loader refuses a
 * mismatch before binding.
 *
 * Every slot that can detect a kernel bug takes the call site (file, line) so that the fault names
 * it. Slots that fault never return to the caller: the emulator abandons the calling fiber.
 */
#ifndef RUDNN_PRELUDE_EMU_ABI_H
#define RUDNN_PRELUDE_EMU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUDNN_EMU_ABI_VERSION 2u

typedef struct rudnn_emu_dim3 {
  unsigned int x, y, z;
} rudnn_emu_dim3;

/* The calling emulated thread's geometry and its block's dynamic shared memory. Stable for the
 * whole life of the thread, so the prelude may read it as often as it likes. */
typedef struct rudnn_emu_thread_info {
  rudnn_emu_dim3 thread_idx;
  rudnn_emu_dim3 block_idx;
  rudnn_emu_dim3 block_dim;
  rudnn_emu_dim3 grid_dim;
  void* dynamic_shared; /* 16-byte aligned; poisoned with 0xFF bytes at block start */
  size_t dynamic_shared_bytes;
} rudnn_emu_thread_info;

/* __syncthreads variants: plain, _count, _and, _or. */
enum rudnn_emu_barrier_op {
  RUDNN_EMU_BARRIER_PLAIN = 0,
  RUDNN_EMU_BARRIER_COUNT = 1,
  RUDNN_EMU_BARRIER_AND = 2,
  RUDNN_EMU_BARRIER_OR = 3
};

enum rudnn_emu_shfl_mode {
  RUDNN_EMU_SHFL_IDX = 0,
  RUDNN_EMU_SHFL_UP = 1,
  RUDNN_EMU_SHFL_DOWN = 2,
  RUDNN_EMU_SHFL_XOR = 3
};

enum rudnn_emu_vote_mode { RUDNN_EMU_VOTE_BALLOT = 0, RUDNN_EMU_VOTE_ANY = 1, RUDNN_EMU_VOTE_ALL = 2 };

/* __reduce_*_sync (sm_80): add/min/max on int or unsigned, and/or/xor on unsigned. */
enum rudnn_emu_reduce_op {
  RUDNN_EMU_REDUCE_ADD = 0,
  RUDNN_EMU_REDUCE_MIN = 1,
  RUDNN_EMU_REDUCE_MAX = 2,
  RUDNN_EMU_REDUCE_AND = 3,
  RUDNN_EMU_REDUCE_OR = 4,
  RUDNN_EMU_REDUCE_XOR = 5
};

enum rudnn_emu_mma_type {
  RUDNN_EMU_MMA_F16 = 0, /* A/B are IEEE binary16 */
  RUDNN_EMU_MMA_BF16 = 1 /* A/B are bfloat16 */
};

/* The shared-window address of the first byte of a block's dynamic shared memory on the emulator
 * (prelude shared_address(), and the addresses in wgmma descriptors). Not a swizzle pattern's
 * 1024-byte boundary, as a GPU's window need not give one: kernels align their swizzled tiles
 * themselves (gemm/wgmma_engine.cuh), and the emulator runs that code. */
#define RUDNN_EMU_SHARED_WINDOW_BASE 1040u

/* wgmma flags: scale-d (D = A·B + D rather than A·B), imm-scale-a/b = -1, imm-trans-a/b
 * (the operand is MN-major in shared memory rather than K-major). */
enum rudnn_emu_wgmma_flags {
  RUDNN_EMU_WGMMA_ACCUMULATE = 1,
  RUDNN_EMU_WGMMA_NEGATE_A = 2,
  RUDNN_EMU_WGMMA_NEGATE_B = 4,
  RUDNN_EMU_WGMMA_TRANS_A = 8,
  RUDNN_EMU_WGMMA_TRANS_B = 16
};

typedef struct rudnn_emu_api {
  unsigned int abi_version; /* RUDNN_EMU_ABI_VERSION of the runtime */
  unsigned int struct_size; /* sizeof(rudnn_emu_api) of the runtime */

  /* geometry + dynamic shared memory of the calling thread */
  const rudnn_emu_thread_info* (*thread_info)(void);

  /* Block barrier. `op` is a rudnn_emu_barrier_op; returns the count / and / or over `predicate`
   * of all threads of the block (0 for PLAIN). Every thread must arrive at the same call site. */
  int (*syncthreads)(int op, int predicate, const char* file, int line);

  /* Warp barrier over the lanes in `mask`; the caller must be in `mask`. */
  void (*syncwarp)(unsigned int mask, const char* file, int line);

  /* Warp shuffle of a `size`-byte value (4 or 8) held in the low bytes of `value`. `lane_arg` is
   * the source lane (IDX), delta (UP/DOWN) or lane mask (XOR). Exact CUDA/PTX semantics. */
  uint64_t (*shfl)(int mode, unsigned int mask, uint64_t value, unsigned int size, int lane_arg, int width,
                   const char* file, int line);

  /* __ballot_sync / __any_sync / __all_sync over the lanes in `mask`. */
  unsigned int (*vote)(int mode, unsigned int mask, int predicate, const char* file, int line);

  /* __threadfence: blocks may run on several OS threads. */
  void (*threadfence)(void);

  /* Reports a fault with `message` at the call site and abandons the launch. Never returns. */
  void (*trap)(const char* message, const char* file, int line);

  /* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32: warp-collective (all 32
   * lanes). `type` is a rudnn_emu_mma_type; a[4], b[2] are the packed b32 fragments. */
  void (*mma_m16n8k16)(int type, float* d, const uint32_t* a, const uint32_t* b, const float* c, const char* file,
                       int line);

  /* ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16: warp-collective (all 32 lanes).
   * `row` is this lane's row address (ignored for lanes >= 8*count); `regs` receives `count`
   * registers. */
  void (*ldmatrix)(int count, int trans, uint32_t* regs, const void* row, const char* file, int line);

  /* cp.async.{ca,cg}.shared.global: copy `src_size` bytes and zero-fill up to `cp_size` (4, 8, 16).
   * Deferred until a wait_group retires it; the destination is poisoned meanwhile. */
  void (*cp_async)(void* dst, const void* src, unsigned int cp_size, unsigned int src_size, const char* file, int line);
  void (*cp_async_commit)(const char* file, int line);
  /* Wait until at most `pending` committed groups of this thread are outstanding. */
  void (*cp_async_wait)(int pending, const char* file, int line);

  /* Warp reduction over the lanes in `mask` (`op` is a rudnn_emu_reduce_op; `is_signed` selects
   * int rather than unsigned comparison for MIN/MAX). Every lane of the mask gets the result. */
  uint32_t (*reduce)(int op, int is_signed, unsigned int mask, uint32_t value, const char* file, int line);

  /* Hopper warpgroup MMA (wgmma, sm_90a). A warpgroup is four consecutive warps whose first warp's
   * index is a multiple of 4; all 128 threads issue the same wgmma. The emulator runs each warp's
   * share (its 16 rows of the 64) when the warp's 32 lanes have joined, and defers the arithmetic to
   * the wgmma_wait that retires its group, reading shared memory and the A registers then.
   *
   * wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16}.{f16,bf16}: `type` is a
   * rudnn_emu_mma_type, n a multiple of 8 in [8, 256]; `d` this lane's n/2 accumulators; `a_regs`
   * null for A in shared memory (`a_desc`), else this lane's 4 b32 A registers; `flags` are
   * rudnn_emu_wgmma_flags. */
  void (*wgmma)(int type, int n, float* d, const uint32_t* a_regs, uint64_t a_desc, uint64_t b_desc, int flags,
                const char* file, int line);
  /* wgmma.fence.sync.aligned, wgmma.commit_group.sync.aligned, wgmma.wait_group.sync.aligned N.
   * `stack_pointer` is the waiting code's own (null: unknown): a retired wgmma whose accumulators or
   * A registers lie in the lane's stack below it belonged to a frame that returned before the wait,
   * and faults. */
  void (*wgmma_fence)(const char* file, int line);
  void (*wgmma_commit)(const char* file, int line);
  void (*wgmma_wait)(int pending, const void* stack_pointer, const char* file, int line);
  /* fence.proxy.async.shared::cta: this thread's shared-memory writes so far (its landed cp.async
   * copies) become visible to the async proxy (wgmma). A wgmma that reads a byte whose cp.async's
   * thread has not fenced since the copy landed faults. */
  void (*fence_proxy_async)(const char* file, int line);
} rudnn_emu_api;

/* Exported by every kernel module (RUDNN_EMU_MODULE() in prelude/host.h). */
typedef void (*rudnn_emu_bind_fn)(const rudnn_emu_api* api);
typedef unsigned int (*rudnn_emu_module_abi_version_fn)(void);
#define RUDNN_EMU_BIND_SYMBOL "rudnn_emu_bind"
#define RUDNN_EMU_MODULE_ABI_VERSION_SYMBOL "rudnn_emu_module_abi_version"

#ifdef __cplusplus
}
#endif

#endif /* RUDNN_PRELUDE_EMU_ABI_H */
