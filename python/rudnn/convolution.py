"""Convolution (SPEC §6): torch.ops.rudnn.conv_forward over 1, 2 or 3 spatial dims, channels-first
or channels-last, with autograd through torch.ops.rudnn.conv_data_backward and conv_weight_backward."""

import torch

from . import _C
from ._bridge import arg, empty, option, place, prepare, prepare_optional
from ._library import define
from .errors import ConvSetupError, raise_if_failed

_F = "convolution"
# rudnn::convolution::ConvStrategy's numbers; "default" is the library's default_strategy().
STRATEGIES = {"default": -1, "direct": 0, "implicit_gemm": 1, "autotune": 2}


def output_shape(input_shape, weight_shape, stride, padding, dilation, channels_last):
    """The forward's output shape: out = (in + 2·padding − dilation·(k − 1) − 1) // stride + 1."""
    spatial = len(input_shape) - 2
    stride, padding, dilation = (list(v) or [d] * spatial for v, d in ((stride, 1), (padding, 0), (dilation, 1)))
    if channels_last:
        extents, kernel = input_shape[1:-1], weight_shape[1:-1]
    else:
        extents, kernel = input_shape[2:], weight_shape[2:]
    # A stride < 1 makes no shape (0 here): the library names it.
    out = [(n + 2 * p - d * (k - 1) - 1) // s + 1 if s > 0 else 0
           for n, k, s, p, d in zip(extents, kernel, stride, padding, dilation)]
    if channels_last:
        return [input_shape[0], *out, weight_shape[0]]
    return [input_shape[0], weight_shape[0], *out]


def _possible_output_shape(input, weight, stride, padding, dilation, channels_last):
    """The forward's output shape, or None where the ranks or an extent < 1 make none (a batch of 0 is fine)."""
    shape = output_shape(input.shape, weight.shape, stride, padding, dilation, channels_last)
    if input.dim() < 3 or weight.dim() != input.dim() or len(shape) != input.dim() or min(shape[1:]) < 1:
        return None
    return shape


def _conv_forward(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    x, w, b = prepare(_F, "input", input), prepare(_F, "weight", weight), prepare_optional(_F, "bias", bias)
    where = place(_F, input=x, weight=w, bias=b)
    # No shape: a placeholder output, and the library names the argument that makes the shape impossible.
    out = empty(_possible_output_shape(x, w, stride, padding, dilation, channels_last) or [0], x.dtype, x)
    raise_if_failed(_C.conv_forward(where, arg(x), arg(w), arg(b), stride, padding, dilation, groups, chosen,
                                    channels_last, arg(out)))
    return out


def _conv_forward_fake(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last):
    shape = _possible_output_shape(input, weight, stride, padding, dilation, channels_last)
    if shape is None:
        raise ConvSetupError("ShapeMismatch", "input", "an output extent ≥ 1 per spatial dim",
                             f"input {list(input.shape)}, weight {list(weight.shape)}")
    return input.new_empty(shape)


def _conv_data_backward(grad_output, weight, input_shape, stride, padding, dilation, groups, strategy,
                        channels_last):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    dy, w = prepare(_F, "grad_output", grad_output), prepare(_F, "weight", weight)
    where = place(_F, grad_output=dy, weight=w)
    grad_input = empty(input_shape, dy.dtype, dy)
    raise_if_failed(_C.conv_data_backward(where, arg(dy), arg(w), input_shape, stride, padding, dilation, groups,
                                          chosen, channels_last, arg(grad_input)))
    return grad_input


def _conv_data_backward_fake(grad_output, weight, input_shape, *args):
    return grad_output.new_empty(input_shape)


def _conv_weight_backward(input, grad_output, weight_shape, stride, padding, dilation, groups, strategy,
                          channels_last, with_bias_grad):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    x, dy = prepare(_F, "input", input), prepare(_F, "grad_output", grad_output)
    where = place(_F, input=x, grad_output=dy)
    grad_weight = empty(weight_shape, x.dtype, x)
    grad_bias = empty([weight_shape[0] if with_bias_grad else 0], torch.float32, x)
    raise_if_failed(_C.conv_weight_backward(where, arg(x), arg(dy), weight_shape, stride, padding, dilation, groups,
                                            chosen, channels_last, arg(grad_weight),
                                            arg(grad_bias) if with_bias_grad else None))
    return grad_weight, grad_bias


def _conv_weight_backward_fake(input, grad_output, weight_shape, stride, padding, dilation, groups, strategy,
                               channels_last, with_bias_grad):
    return (input.new_empty(weight_shape),
            input.new_empty([weight_shape[0] if with_bias_grad else 0], dtype=torch.float32))


_OPTIONS = "int[] stride, int[] padding, int[] dilation, int groups, str strategy, bool channels_last"
conv_forward_op = define(f"conv_forward(Tensor input, Tensor weight, Tensor? bias, {_OPTIONS}) -> Tensor",
                         _conv_forward, _conv_forward_fake)
conv_data_backward_op = define(
    f"conv_data_backward(Tensor grad_output, Tensor weight, int[] input_shape, {_OPTIONS}) -> Tensor",
    _conv_data_backward, _conv_data_backward_fake, _F)
conv_weight_backward_op = define(
    f"conv_weight_backward(Tensor input, Tensor grad_output, int[] weight_shape, {_OPTIONS}, "
    "bool with_bias_grad) -> (Tensor, Tensor)", _conv_weight_backward, _conv_weight_backward_fake, _F)


def _setup_context(ctx, inputs, output):
    input, weight, bias, *options = inputs
    ctx.save_for_backward(input, weight)
    ctx.options = options
    ctx.bias_dtype = None if bias is None else bias.dtype


def _backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    grad_output = grad_output.contiguous()
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_input = conv_data_backward_op(grad_output, weight, list(input.shape), *ctx.options)
    if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
        grad_weight, grad_bias = conv_weight_backward_op(input, grad_output, list(weight.shape), *ctx.options,
                                                         ctx.needs_input_grad[2])
        grad_bias = grad_bias.to(ctx.bias_dtype) if ctx.needs_input_grad[2] else None
        grad_weight = grad_weight if ctx.needs_input_grad[1] else None
    return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


torch.library.register_autograd("rudnn::conv_forward", _backward, setup_context=_setup_context)


def conv(input, weight, bias=None, stride=(), padding=(), dilation=(), groups=1, strategy="default",
         channels_last=False):
    """Convolution over 1–3 spatial dims. Channels-first: input [N, C, *in], weight [O, C/groups, *k]
    → [N, O, *out] (``F.conv1d/2d/3d`` with symmetric integer padding); channels-last: input
    [N, *in, C], weight [O, *k, C/groups] → [N, *out, O]. ``stride``/``padding``/``dilation``: one
    entry per spatial dim, or an int for all, or empty for the defaults. Differentiable."""
    spatial = input.dim() - 2

    def per_dim(v):
        return [int(v)] * spatial if isinstance(v, int) else [int(e) for e in v]

    return conv_forward_op(input, weight, bias, per_dim(stride), per_dim(padding), per_dim(dilation), groups,
                           strategy, channels_last)


def conv_forward(input, weight, bias=None, stride=(), padding=(), dilation=(), groups=1, strategy="default"):
    """The guide's conv_forward: channels-first in and out."""
    return conv(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last=False)


def conv_forward_nhwc(input, weight, bias=None, stride=(), padding=(), dilation=(), groups=1, strategy="default"):
    """The guide's conv_forward_nhwc: channels-last in and out."""
    return conv(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last=True)
