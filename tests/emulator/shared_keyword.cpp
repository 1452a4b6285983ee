// Must NOT compile (see CMakeLists.txt): templates cannot use static shared memory on the host.
#include "rudnn/prelude.cuh"

RUDNN_DEVICE void uses_static_shared() {
  __shared__ float buffer[32];
  buffer[0] = 1.0f;
}
