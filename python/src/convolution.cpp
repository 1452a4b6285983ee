// torch.ops.rudnn.conv_{forward, data_backward, weight_backward} → rudnn::convolution::*_into, with
// conv_forward's autograd through the other two.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "autograd.h"
#include "call.h"
#include "conv_shape.h"
#include "rudnn/convolution.h"

namespace rudnn::python {

namespace {

constexpr char kFamily[] = "convolution";
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Int = std::int64_t;

struct Options {
  Ints stride, padding, dilation;
  Int groups;
  std::string strategy;
  bool channels_last;
};

convolution::ConvOptions options_of(const Options& o) {
  return {.stride = o.stride, .padding = o.padding, .dilation = o.dilation, .groups = o.groups};
}
convolution::ConvStrategy strategy_of(const Call& call, std::string_view strategy) {
  using convolution::ConvStrategy;
  return choose<ConvStrategy>(call, "strategy", strategy,
                              {{"default", convolution::default_strategy()},
                               {"direct", ConvStrategy::Direct},
                               {"implicit_gemm", ConvStrategy::ImplicitGemm},
                               {"autotune", ConvStrategy::Autotune}});
}
convolution::ConvLayout layout_of(bool channels_last) {
  return channels_last ? convolution::ConvLayout::ChannelsLast : convolution::ConvLayout::ChannelsFirst;
}
Ints ints(at::IntArrayRef values) { return Ints(values.begin(), values.end()); }

at::Tensor conv_forward(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                        at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, Int groups,
                        std::string_view strategy, bool channels_last) {
  Call call(kFamily, {{"input", &input}, {"weight", &weight}, {"bias", bias ? &*bias : nullptr}});
  const auto chosen = strategy_of(call, strategy);
  Tensor x = call.in(input, "input");
  Tensor w = call.in(weight, "weight");
  std::optional<Tensor> b = call.in(bias, "bias");
  const Options o{ints(stride), ints(padding), ints(dilation), groups, std::string(strategy), channels_last};
  // No shape: a placeholder output, and the library names the argument that makes the shape impossible.
  auto shape =
      conv_output_shape(ints(input.sizes()), ints(weight.sizes()), o.stride, o.padding, o.dilation, channels_last);
  at::Tensor out = call.empty(shape && plausible(*shape) ? *shape : Ints{0}, input.scalar_type());
  Tensor y = call.out(out, "out");
  if (channels_last)
    call.check(convolution::conv_forward_nhwc_into(x, w, b, options_of(o), y, chosen));
  else
    call.check(convolution::conv_forward_into(x, w, b, options_of(o), y, chosen));
  call.finish();
  return out;
}

at::Tensor conv_data_backward(const at::Tensor& grad_output, const at::Tensor& weight, at::IntArrayRef input_shape,
                              at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, Int groups,
                              std::string_view strategy, bool channels_last) {
  Call call(kFamily, {{"grad_output", &grad_output}, {"weight", &weight}});
  const auto chosen = strategy_of(call, strategy);
  Tensor dy = call.in(grad_output, "grad_output");
  Tensor w = call.in(weight, "weight");
  at::Tensor grad_input =
      call.empty(plausible(ints(input_shape)) ? ints(input_shape) : Ints{0}, grad_output.scalar_type());
  const Options o{ints(stride), ints(padding), ints(dilation), groups, {}, channels_last};
  call.check(convolution::conv_data_backward_into(
      dy, w, ints(input_shape), options_of(o), call.out(grad_input, "grad_input"), chosen, layout_of(channels_last)));
  call.finish();
  return grad_input;
}

std::tuple<at::Tensor, at::Tensor> conv_weight_backward(const at::Tensor& input, const at::Tensor& grad_output,
                                                        at::IntArrayRef weight_shape, at::IntArrayRef stride,
                                                        at::IntArrayRef padding, at::IntArrayRef dilation, Int groups,
                                                        std::string_view strategy, bool channels_last,
                                                        bool with_bias_grad) {
  Call call(kFamily, {{"input", &input}, {"grad_output", &grad_output}});
  const auto chosen = strategy_of(call, strategy);
  Tensor x = call.in(input, "input");
  Tensor dy = call.in(grad_output, "grad_output");
  const bool allocatable = plausible(ints(weight_shape));
  at::Tensor grad_weight = call.empty(allocatable ? ints(weight_shape) : Ints{0}, input.scalar_type());
  at::Tensor grad_bias = call.empty({with_bias_grad && allocatable && !weight_shape.empty() ? weight_shape[0] : 0},
                                    c10::ScalarType::Float);
  std::optional<Tensor> db;
  if (with_bias_grad) db = call.out(grad_bias, "grad_bias");
  const Options o{ints(stride), ints(padding), ints(dilation), groups, {}, channels_last};
  convolution::ConvWeightGrads grads{call.out(grad_weight, "grad_weight"), db};
  call.check(convolution::conv_weight_backward_into(x, dy, ints(weight_shape), options_of(o), grads, chosen,
                                                    layout_of(channels_last)));
  call.finish();
  return {grad_weight, grad_bias};
}

using ForwardSignature = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                    at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, Int, std::string_view, bool);

// conv_forward's kernel below autograd (the device kernel, or the fake one while tracing).
at::Tensor forward_below_autograd(const at::Tensor& input, const at::Tensor& weight,
                                  const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                  at::IntArrayRef padding, at::IntArrayRef dilation, Int groups,
                                  std::string_view strategy, bool channels_last) {
  at::AutoDispatchBelowADInplaceOrView below;
  static auto op = rudnn_op<ForwardSignature>("conv_forward");
  return op.call(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last);
}

// Saves input and weight; the backward is the data backward (for input) and the weight backward (for
// weight and bias), each only when wanted.
struct ConvFunction : torch::autograd::Function<ConvFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, const Options* o) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["stride"] = o->stride;
    ctx->saved_data["padding"] = o->padding;
    ctx->saved_data["dilation"] = o->dilation;
    ctx->saved_data["groups"] = o->groups;
    ctx->saved_data["strategy"] = o->strategy;
    ctx->saved_data["channels_last"] = o->channels_last;
    ctx->saved_data["wanted"] = c10::List<bool>({requires_grad(input), requires_grad(weight), requires_grad(bias)});
    if (bias) ctx->saved_data["bias_dtype"] = static_cast<Int>(bias->scalar_type());
    return forward_below_autograd(input, weight, bias, o->stride, o->padding, o->dilation, o->groups, o->strategy,
                                  o->channels_last);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &weight = saved[1];
    auto& data = ctx->saved_data;
    const Ints stride = data["stride"].toIntVector(), padding = data["padding"].toIntVector(),
               dilation = data["dilation"].toIntVector();
    const Int groups = data["groups"].toInt();
    const std::string strategy = data["strategy"].toStringRef();
    const bool channels_last = data["channels_last"].toBool();
    const auto wanted = ctx->saved_data["wanted"].toBoolList();
    const at::Tensor grad_output = grads[0].contiguous();
    at::Tensor grad_input, grad_weight, grad_bias;
    if (wanted[0]) {
      static auto data_backward =
          rudnn_op<at::Tensor(const at::Tensor&, const at::Tensor&, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef,
                              at::IntArrayRef, Int, std::string_view, bool)>("conv_data_backward");
      grad_input = data_backward.call(grad_output, weight, input.sizes(), stride, padding, dilation, groups, strategy,
                                      channels_last);
    }
    if (wanted[1] || wanted[2]) {
      static auto weights = rudnn_op<std::tuple<at::Tensor, at::Tensor>(
          const at::Tensor&, const at::Tensor&, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, Int,
          std::string_view, bool, bool)>("conv_weight_backward");
      auto [dw, db] = weights.call(input, grad_output, weight.sizes(), stride, padding, dilation, groups, strategy,
                                   channels_last, wanted[2]);
      if (wanted[1]) grad_weight = dw;
      if (wanted[2]) grad_bias = db.to(static_cast<c10::ScalarType>(data["bias_dtype"].toInt()));
    }
    return {grad_input, grad_weight, grad_bias, at::Tensor()};
  }
};

at::Tensor conv_forward_autograd(const at::Tensor& input, const at::Tensor& weight,
                                 const std::optional<at::Tensor>& bias, at::IntArrayRef stride, at::IntArrayRef padding,
                                 at::IntArrayRef dilation, Int groups, std::string_view strategy, bool channels_last) {
  if (!forward_needs_grad(input, weight, bias))
    return forward_below_autograd(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last);
  const Options o{ints(stride), ints(padding), ints(dilation), groups, std::string(strategy), channels_last};
  return ConvFunction::apply(input, weight, bias, &o);
}

void kernels(torch::Library& m) {
  m.impl("conv_forward", guarded<kFamily, &conv_forward>);
  m.impl("conv_data_backward", guarded<kFamily, &conv_data_backward>);
  m.impl("conv_weight_backward", guarded<kFamily, &conv_weight_backward>);
}

}  // namespace

RUDNN_TORCH_KERNELS(kernels)

TORCH_LIBRARY_IMPL(rudnn, Autograd, m) {
  m.impl("conv_forward", &conv_forward_autograd);
  for (const char* op : {"conv_data_backward", "conv_weight_backward"}) m.impl(op, forward_only(kFamily));
}

}  // namespace rudnn::python
