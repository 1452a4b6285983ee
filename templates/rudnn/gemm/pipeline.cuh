#pragma once
// The cp.async software pipeline of a tensor-core (or plain) GEMM's K loop, independent of how the
// operand tiles are laid out or where their rows come from: kStages shared-memory stages, kStages − 1
// K blocks in flight while the warps consume the oldest one.
//   prologue  load K blocks 0 .. kStages−2, one commit group each (empty groups past the end keep the
//             count uniform, so wait_group<kStages−2> always means "block kb has landed")
//   step kb   wait_group<kStages−2>; __syncthreads (block kb visible to all; every warp is done with
//             block kb−1, whose stage is refilled next); prefetch block kb + kStages − 1; commit;
//             compute on block kb
// and one more barrier after the loop, since the next tile's prologue overwrites stages that slower
// warps may still be reading. Loaders may also fill a stage with plain shared stores (element
// gathers): the stage is written after the barrier that frees it and read after the barrier of a
// later step, so plain stores are ordered exactly like the copies.
//
// load(stage, kb) issues this thread's copies of K block kb into stage `stage` (no commit);
// compute(stage) runs the products on stage `stage`. Used by gemm/nt_mainloop.cuh (MoE experts),
// gemm/block_engine.cuh (implicit-GEMM convolution, MoE experts backward) and gemm/wgmma_engine.cuh.
// kAsyncProxyReads: the stages are read by wgmma (the async proxy), so each thread fences its copies
// and stores into the async proxy (fence.proxy.async) between its wait and the barrier; compute must
// then have retired its wgmma before it returns (the next step refills the stage it read).
#include "rudnn/prelude.cuh"

namespace rudnn::gemm {

template <int kStages, bool kAsyncProxyReads = false>
struct CpAsyncPipeline {
  static_assert(kStages >= 2, "CpAsyncPipeline: at least two stages");

  // k_blocks < 2^31 (K blocks are counted in 32 bits: 64-bit loop control costs the K loop a handful
  // of instructions per block). The convolution's guards keep its K below 2^30 (ConvConfig.cpp); its
  // weight backward's K is batch × output pixels per split, which reaches 2^31 blocks only with
  // 2^36 pixels, i.e. ≥ 128 GiB each of x and dy: beyond every GPU's memory (docs/input-limits.md).
  template <class Load, class Compute>
  RUDNN_DEVICE static void run(i64 k_blocks, const Load& load, const Compute& compute) {
    const int blocks = static_cast<int>(k_blocks);
    RUDNN_UNROLL
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < blocks) load(s, s);
      cp_async_commit();
    }
    int read_stage = 0, write_stage = kStages - 1;
    for (int kb = 0; kb < blocks; ++kb) {
      cp_async_wait<kStages - 2>();
      if constexpr (kAsyncProxyReads) fence_proxy_async_shared();
      __syncthreads();
      if (kb + kStages - 1 < blocks) load(write_stage, kb + kStages - 1);
      cp_async_commit();
      compute(read_stage);
      read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
      write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
    }
    __syncthreads();
  }
};

}  // namespace rudnn::gemm
