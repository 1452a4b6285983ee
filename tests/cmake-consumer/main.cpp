// Uses only the installed headers and library: rms_norm of one row on the host device.
#include <cmath>
#include <cstdio>

#include <rudnn/normalization.h>

int main() {
  using namespace rudnn;
  Device device = Device::host();
  auto x = Tensor::upload(HostData::from_f64({1, 4}, DType::F32, std::vector<double>{1, 2, 3, 4}), device);
  auto g = Tensor::upload(HostData::from_f64({4}, DType::F32, std::vector<double>{1, 1, 1, 1}), device);
  if (!x.ok() || !g.ok()) return 2;
  auto y = normalization::rms_norm(x.value(), g.value(), 1e-6f);
  if (!y.ok()) {
    std::fprintf(stderr, "%s\n", y.error().message().c_str());
    return 3;
  }
  auto host = to_host(y.value());
  if (!host.ok()) return 4;
  const double rms = std::sqrt((1 + 4 + 9 + 16) / 4.0);
  auto v = host->to_f64();
  for (int i = 0; i < 4; ++i)
    if (std::fabs(v[i] - (i + 1) / rms) > 1e-5) return 5;
  std::puts("consumer: rms_norm through find_package(rudnn) ok");
  return 0;
}
