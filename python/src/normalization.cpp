// torch.ops.rudnn.{layer_norm, rms_norm, softmax_last_axis} → rudnn::normalization::*_into.
// Forward only: the library has no normalization backward.
#include <torch/library.h>

#include <cmath>
#include <sstream>

#include "autograd.h"
#include "call.h"
#include "rudnn/normalization.h"

namespace rudnn::python {

namespace {

constexpr char kFamily[] = "normalization";

// epsilon as the kernels take it (FP32). A finite positive double that rounds to 0 or overflows is
// named with the value the caller passed, not the rounded one the library would report.
float epsilon_of(const Call& call, double epsilon) {
  const auto narrowed = static_cast<float>(epsilon);
  if (std::isfinite(epsilon) && epsilon > 0 && !(std::isfinite(narrowed) && narrowed > 0)) {
    std::ostringstream passed;
    passed << epsilon;
    call.fail(
        Error(ErrorKind::InvalidValue, "epsilon", "finite and > 0 in float32 (about 1.4e-45 to 3.4e38)", passed.str()));
  }
  return narrowed;
}

at::Tensor layer_norm(const at::Tensor& input, const at::Tensor& gamma, const std::optional<at::Tensor>& beta,
                      double epsilon) {
  Call call(kFamily, {{"input", &input}, {"gamma", &gamma}, {"beta", beta ? &*beta : nullptr}});
  Tensor x = call.in(input, "input");
  Tensor g = call.in(gamma, "gamma");
  std::optional<Tensor> b = call.in(beta, "beta");
  at::Tensor out = call.empty(input.sizes(), input.scalar_type());
  call.check(normalization::layer_norm_into(x, g, b, epsilon_of(call, epsilon), call.out(out, "out")));
  call.finish();
  return out;
}

at::Tensor rms_norm(const at::Tensor& input, const at::Tensor& gamma, double epsilon) {
  Call call(kFamily, {{"input", &input}, {"gamma", &gamma}});
  Tensor x = call.in(input, "input");
  Tensor g = call.in(gamma, "gamma");
  at::Tensor out = call.empty(input.sizes(), input.scalar_type());
  call.check(normalization::rms_norm_into(x, g, epsilon_of(call, epsilon), call.out(out, "out")));
  call.finish();
  return out;
}

at::Tensor softmax_last_axis(const at::Tensor& logits) {
  Call call(kFamily, {{"logits", &logits}});
  Tensor x = call.in(logits, "logits");
  at::Tensor out = call.empty(logits.sizes(), logits.scalar_type());
  call.check(normalization::softmax_last_axis_into(x, call.out(out, "out")));
  call.finish();
  return out;
}

void kernels(torch::Library& m) {
  m.impl("layer_norm", guarded<kFamily, &layer_norm>);
  m.impl("rms_norm", guarded<kFamily, &rms_norm>);
  m.impl("softmax_last_axis", guarded<kFamily, &softmax_last_axis>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  for (const char* op : {"layer_norm", "rms_norm", "softmax_last_axis"}) m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
