// rudnn._C: the Python package's bindings over librudnn.so (docs/pytorch.md). Only thin adapters
// live here; every contract is checked by the library.
#include "bridge.h"

NB_MODULE(_C, m) {
  using namespace rudnn::python;
  m.doc() = "rudnn's bindings for the PyTorch adapter (use the rudnn package, not this module)";
  // Plans still referenced at interpreter exit (by torch's op registry, a module global) are not leaks.
  nanobind::set_leak_warnings(false);
  bind_normalization(m);
  bind_attention(m);
  bind_convolution(m);
  bind_gated_delta(m);
  bind_moe(m);
  bind_paged_attention(m);
  m.def("cuda_device_count", [] { return rudnn::Device::cuda_device_count(); });
}
