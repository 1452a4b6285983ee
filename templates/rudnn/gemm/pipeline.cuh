#pragma once
// The cp.async software pipeline of a tensor-core (or plain) GEMM's K loop, independent of how the
// operand tiles are laid out or where their rows come from: kStages shared-memory stages, D = kStages
// − 1 − kLag K blocks in flight while the warps consume the oldest one.
//   prologue  load K blocks 0 .. D−1, one commit group each (empty groups past the end keep the count
//             uniform, so wait_group<D−1> always means "block kb has landed")
//   step kb   wait_group<D−1>; __syncthreads (block kb visible to all; every warp is done with block
//             kb−1−kLag, whose stage is refilled next); prefetch block kb + D; commit; compute on
//             block kb
// then drain() (the reads of the last kLag blocks end) and one more barrier after the loop, since the
// next tile's prologue overwrites stages that slower warps may still be reading. Loaders may also fill
// a stage with plain shared stores (element gathers): the stage is written after the barrier that
// frees it and read after the barrier of a later step, so plain stores are ordered exactly like the
// copies.
//
// load(stage, kb) issues this thread's copies of K block kb into stage `stage` (no commit);
// compute(stage) runs the products on stage `stage`. Used by gemm/nt_mainloop.cuh (MoE experts),
// gemm/block_engine.cuh (implicit-GEMM convolution, MoE experts backward) and gemm/wgmma_engine.cuh.
// kAsyncProxyReads: the stages are read by wgmma (the async proxy), so each thread fences its copies
// and stores into the async proxy (fence.proxy.async) between its wait and the barrier.
// kLag: compute may return while its asynchronous reads of its stage go on, for at most kLag more
// steps (wgmma kept in flight: compute ends with wgmma.wait_group<kLag>). Its stage is refilled only
// kLag steps later than with kLag = 0, so it is one block fewer in flight per lagging step; drain()
// waits for the reads still going when the loop ends.
#include "rudnn/prelude.cuh"

namespace rudnn::gemm {

template <int kStages, bool kAsyncProxyReads = false, int kLag = 0>
struct CpAsyncPipeline {
  static_assert(kLag >= 0 && kStages >= 2 + kLag, "CpAsyncPipeline: at least one block in flight besides the lag");
  static constexpr int kDistance = kStages - 1 - kLag;  // blocks prefetched ahead of the one computed

  // k_blocks < 2^31 (K blocks are counted in 32 bits: 64-bit loop control costs the K loop a handful
  // of instructions per block). The convolution's guards keep its K below 2^30 (ConvConfig.cpp); its
  // weight backward's K is batch × output pixels per split, which reaches 2^31 blocks only with
  // 2^36 pixels, i.e. ≥ 128 GiB each of x and dy: beyond every GPU's memory (docs/input-limits.md).
  template <class Load, class Compute, class Drain>
  RUDNN_DEVICE static void run(i64 k_blocks, const Load& load, const Compute& compute, const Drain& drain) {
    const int blocks = static_cast<int>(k_blocks);
    RUDNN_UNROLL
    for (int s = 0; s < kDistance; ++s) {
      if (s < blocks) load(s, s);
      cp_async_commit();
    }
    int read_stage = 0, write_stage = kDistance;
    for (int kb = 0; kb < blocks; ++kb) {
      cp_async_wait<kDistance - 1>();
      if constexpr (kAsyncProxyReads) fence_proxy_async_shared();
      __syncthreads();
      if (kb + kDistance < blocks) load(write_stage, kb + kDistance);
      cp_async_commit();
      compute(read_stage);
      read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
      write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
    }
    drain();
    __syncthreads();
  }
  template <class Load, class Compute>
  RUDNN_DEVICE static void run(i64 k_blocks, const Load& load, const Compute& compute) {
    static_assert(kLag == 0, "CpAsyncPipeline: a lagging compute needs its drain");
    run(k_blocks, load, compute, [] {});
  }
};

}  // namespace rudnn::gemm
