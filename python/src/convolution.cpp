// torch.ops.rudnn.conv_{forward, data_backward, weight_backward} → rudnn::convolution::*_into. The
// autograd formula (python/rudnn/convolution.py) is the data and weight backward.
#include "bridge.h"
#include "rudnn/convolution.h"

namespace rudnn::python {

namespace {

using Ints = std::vector<std::int64_t>;

convolution::ConvOptions options_of(const Ints& stride, const Ints& padding, const Ints& dilation,
                                    std::int64_t groups) {
  return {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups};
}
// strategy: a ConvStrategy's number, −1 for default_strategy().
convolution::ConvStrategy strategy_of(int strategy) {
  return strategy < 0 ? convolution::default_strategy() : static_cast<convolution::ConvStrategy>(strategy);
}
convolution::ConvLayout layout_of(bool channels_last) {
  return channels_last ? convolution::ConvLayout::ChannelsLast : convolution::ConvLayout::ChannelsFirst;
}

}  // namespace

void bind_convolution(nb::module_& m) {
  m.def("conv_forward", [](const Place& place, const TensorArg& input, const TensorArg& weight,
                           const OptionalTensor& bias, const Ints& stride, const Ints& padding, const Ints& dilation,
                           std::int64_t groups, int strategy, bool channels_last, const TensorArg& out) {
    return run("convolution", place, [&](Views& v) -> std::optional<Error> {
      auto x = v(input, "input");
      auto w = v(weight, "weight");
      auto b = v(bias, "bias");
      auto y = v(out, "out");
      if (v.error()) return v.error();
      auto options = options_of(stride, padding, dilation, groups);
      if (channels_last)
        return failure(convolution::conv_forward_nhwc_into(*x, *w, b, options, *y, strategy_of(strategy)));
      return failure(convolution::conv_forward_into(*x, *w, b, options, *y, strategy_of(strategy)));
    });
  });
  m.def("conv_data_backward", [](const Place& place, const TensorArg& grad_output, const TensorArg& weight,
                                 const Ints& input_shape, const Ints& stride, const Ints& padding, const Ints& dilation,
                                 std::int64_t groups, int strategy, bool channels_last, const TensorArg& grad_input) {
    return run("convolution", place, [&](Views& v) -> std::optional<Error> {
      auto dy = v(grad_output, "grad_output");
      auto w = v(weight, "weight");
      auto dx = v(grad_input, "grad_input");
      if (v.error()) return v.error();
      return failure(convolution::conv_data_backward_into(*dy, *w, input_shape,
                                                          options_of(stride, padding, dilation, groups), *dx,
                                                          strategy_of(strategy), layout_of(channels_last)));
    });
  });
  m.def("conv_weight_backward",
        [](const Place& place, const TensorArg& input, const TensorArg& grad_output, const Ints& weight_shape,
           const Ints& stride, const Ints& padding, const Ints& dilation, std::int64_t groups, int strategy,
           bool channels_last, const TensorArg& grad_weight, const OptionalTensor& grad_bias) {
          return run("convolution", place, [&](Views& v) -> std::optional<Error> {
            auto x = v(input, "input");
            auto dy = v(grad_output, "grad_output");
            auto dw = v(grad_weight, "grad_weight");
            auto db = v(grad_bias, "grad_bias");
            if (v.error()) return v.error();
            convolution::ConvWeightGrads grads{*dw, db};
            return failure(convolution::conv_weight_backward_into(*x, *dy, weight_shape,
                                                                  options_of(stride, padding, dilation, groups), grads,
                                                                  strategy_of(strategy), layout_of(channels_last)));
          });
        });
}

}  // namespace rudnn::python
