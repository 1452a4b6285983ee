// A kernel module built like a generated one (hidden visibility, dlopen'ed with RTLD_LOCAL): it may
// use only the ABI table handed to rudnn_emu_bind, never a symbol of the runtime.
#include "rudnn/prelude.cuh"

RUDNN_EMU_MODULE();

namespace {
template <class T>
RUDNN_DEVICE void scale_rows(const T* RUDNN_RESTRICT x, T* RUDNN_RESTRICT y, T alpha) {
  T* s = rudnn::dynamic_shared<T>();
  const unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = x[i];
  __syncthreads();
  T v = s[blockDim.x - 1 - t] * alpha;
  v += __shfl_xor_sync(0xffffffffu, v, 1) * 0;  // exercises a warp collective through the ABI
  y[i] = v;
}
}  // namespace

RUDNN_KERNEL void rudnn_test_scale_rows(void** args) {
  scale_rows(static_cast<const float*>(args[0]), static_cast<float*>(args[1]), *static_cast<const float*>(args[2]));
}
