// Standalone timing of the implicit-GEMM conv kernels (old vs new templates): compiled twice with
// -I pointing at either template tree. Not part of the build.
#include "rudnn/conv/implicit_gemm.cuh"
#include <cstdio>
#include <cuda_runtime.h>
using namespace rudnn;
using T = rudnn::bf16;
using P = conv::IgemmPolicy<128, 128, 32, 2, 4, 3, true>;
using P64 = conv::IgemmPolicy<64, 64, 32, 2, 2, 4, true>;
// C, O, G, D, H, W, KD, KH, KW, S..., P..., Dil...
using R56 = conv::Geometry<64, 64, 1, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using R7 = conv::Geometry<512, 512, 1, 1, 7, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using U16 = conv::Geometry<1280, 1280, 1, 1, 16, 16, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1>;
using R28s2 = conv::Geometry<128, 128, 1, 1, 28, 28, 1, 3, 3, 1, 2, 2, 0, 1, 1, 1, 1, 1>;

template <class G, class Q>
__global__ void __launch_bounds__(Q::kThreads) fprop(const T* x, const T* w, T* y, i64 n) {
  conv::conv_fprop_igemm<T, void, G, Q>(x, w, nullptr, y, n);
}
template <class G, class Q>
__global__ void __launch_bounds__(Q::kThreads) dgrad(const T* dy, const T* w, T* dx, i64 n) {
  conv::conv_dgrad_igemm<T, G, Q>(dy, w, dx, n);
}
template <class G, class Q>
__global__ void __launch_bounds__(Q::kThreads) wgrad(const T* x, const T* dy, float* part, i64 n, i64 s) {
  conv::conv_wgrad_igemm<T, G, Q>(x, dy, part, n, s);
}

template <class K>
float time_it(K launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) launch();
  cudaEventRecord(a);
  const int iters = 20;
  for (int i = 0; i < iters; ++i) launch();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms * 1000.f / iters;
}

template <class G, class Q>
void run(const char* name, i64 n, i64 splits) {
  const size_t xs = n * G::kInPixels * G::kC, ys = n * G::kOutPixels * G::kO, ws = G::kO * G::kFilter;
  T *x, *w, *y, *dx;
  float* part;
  cudaMalloc(&x, xs * 2);
  cudaMalloc(&w, ws * 2);
  cudaMalloc(&y, ys * 2);
  cudaMalloc(&dx, xs * 2);
  cudaMalloc(&part, splits * ws * 4);
  cudaMemset(x, 0x3c, xs * 2);
  cudaMemset(w, 0x3c, ws * 2);
  cudaMemset(y, 0x3c, ys * 2);
  const double flop = 2.0 * n * G::kOutPixels * G::kO * G::kFilter;
  {
    constexpr int sm = conv::kIgemmSharedBytesFprop<T, Q>;
    cudaFuncSetAttribute(fprop<G, Q>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    const i64 tiles = (n * G::kOutPixels + Q::kBM - 1) / Q::kBM * ((G::kO + Q::kBN - 1) / Q::kBN);
    float us = time_it([&] { fprop<G, Q><<<tiles, Q::kThreads, sm>>>(x, w, y, n); });
    printf("%-10s fprop BM%-3d %8.1f us %6.1f TFLOP/s\n", name, Q::kBM, us, flop / us * 1e-6);
  }
  {
    constexpr int sm = conv::kIgemmSharedBytesDgrad<T, Q>;
    cudaFuncSetAttribute(dgrad<G, Q>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    const i64 tiles = (n * G::kInPixels + Q::kBM - 1) / Q::kBM * ((G::kC + Q::kBN - 1) / Q::kBN);
    float us = time_it([&] { dgrad<G, Q><<<tiles, Q::kThreads, sm>>>(y, w, dx, n); });
    printf("%-10s dgrad BM%-3d %8.1f us\n", name, Q::kBM, us);
  }
  {
    constexpr int sm = conv::kIgemmSharedBytesWgrad<T, Q>;
    cudaFuncSetAttribute(wgrad<G, Q>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm);
    const i64 tiles = splits * ((G::kO + Q::kBM - 1) / Q::kBM) * ((G::kFilter + Q::kBN - 1) / Q::kBN);
    float us = time_it([&] { wgrad<G, Q><<<tiles, Q::kThreads, sm>>>(x, y, part, n, splits); });
    printf("%-10s wgrad BM%-3d %8.1f us (splits %lld, no reduce)\n", name, Q::kBM, us, (long long)splits);
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) printf("CUDA error %s\n", cudaGetErrorString(e));
  cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(dx); cudaFree(part);
}

int main() {
  run<R56, P>("r56x64", 32, 4);
  run<R28s2, P>("r28s2", 32, 4);
  run<R7, P>("r7x512", 32, 2);
  run<R7, P64>("r7x512", 32, 2);
  run<U16, P>("u16x1280", 2, 2);
  run<U16, P64>("u16x1280", 2, 2);
  return 0;
}
