// torch.ops.rudnn.{layer_norm, rms_norm, softmax_last_axis} → rudnn::normalization::*_into.
#include "bridge.h"
#include "rudnn/normalization.h"

namespace rudnn::python {

void bind_normalization(nb::module_& m) {
  m.def("layer_norm", [](const Place& place, const TensorArg& input, const TensorArg& gamma, const OptionalTensor& beta,
                         float epsilon, const TensorArg& out) {
    return run("normalization", place, [&](Views& v) -> std::optional<Error> {
      auto x = v(input, "input");
      auto g = v(gamma, "gamma");
      auto b = v(beta, "beta");
      auto y = v(out, "out");
      if (v.error()) return v.error();
      return failure(normalization::layer_norm_into(*x, *g, b, epsilon, *y));
    });
  });
  m.def("rms_norm",
        [](const Place& place, const TensorArg& input, const TensorArg& gamma, float epsilon, const TensorArg& out) {
          return run("normalization", place, [&](Views& v) -> std::optional<Error> {
            auto x = v(input, "input");
            auto g = v(gamma, "gamma");
            auto y = v(out, "out");
            if (v.error()) return v.error();
            return failure(normalization::rms_norm_into(*x, *g, epsilon, *y));
          });
        });
  m.def("softmax_last_axis", [](const Place& place, const TensorArg& logits, const TensorArg& out) {
    return run("normalization", place, [&](Views& v) -> std::optional<Error> {
      auto x = v(logits, "logits");
      auto y = v(out, "out");
      if (v.error()) return v.error();
      return failure(normalization::softmax_last_axis_into(*x, *y));
    });
  });
}

}  // namespace rudnn::python
