"""Convolution (SPEC §6): torch.ops.rudnn.conv_forward over 1, 2 or 3 spatial dims, channels-first
or channels-last, with autograd through torch.ops.rudnn.conv_data_backward and conv_weight_backward."""

import torch

from ._library import define
from .errors import ConvSetupError

# The strategy option's values (python/src/convolution.cpp); "default" is the library's default_strategy().
STRATEGIES = ("default", "direct", "implicit_gemm", "autotune")


def output_shape(input_shape, weight_shape, stride, padding, dilation, channels_last):
    """The forward's output shape, or None where the ranks or an extent < 1 make none (a batch of 0 is
    fine): out = (in + 2·padding − dilation·(k − 1) − 1) // stride + 1. The kernel's rule is C++
    (python/src/conv_shape.h); this one takes torch.compile's symbolic sizes, and opcheck compares the
    two on every test case."""
    spatial = len(input_shape) - 2
    if spatial < 1 or len(weight_shape) != len(input_shape):
        return None
    stride, padding, dilation = (list(v) or [d] * spatial for v, d in ((stride, 1), (padding, 0), (dilation, 1)))
    if not len(stride) == len(padding) == len(dilation) == spatial or min(stride) < 1:
        return None
    first = 1 if channels_last else 2
    extents = [input_shape[first + i] + 2 * padding[i] - dilation[i] * (weight_shape[first + i] - 1) - 1
               for i in range(spatial)]
    if min(extents) < 0:
        return None
    out = [e // s + 1 for e, s in zip(extents, stride)]
    shape = [input_shape[0], *out, weight_shape[0]] if channels_last else [input_shape[0], weight_shape[0], *out]
    return shape if min(shape[1:]) >= 1 else None


def _conv_forward_fake(input, weight, bias, stride, padding, dilation, groups, strategy, channels_last):
    shape = output_shape(input.shape, weight.shape, stride, padding, dilation, channels_last)
    if shape is None:
        raise ConvSetupError("ShapeMismatch", "input", "an output extent ≥ 1 per spatial dim",
                             f"input {list(input.shape)}, weight {list(weight.shape)}")
    return input.new_empty(shape)


def _conv_data_backward_fake(grad_output, weight, input_shape, *args):
    return grad_output.new_empty(input_shape)


def _conv_weight_backward_fake(input, grad_output, weight_shape, stride, padding, dilation, groups, strategy,
                               channels_last, with_bias_grad):
    return (input.new_empty(weight_shape),
            input.new_empty([weight_shape[0] if with_bias_grad else 0], dtype=torch.float32))


# conv_forward is differentiable in input, weight and bias through the other two (python/src/convolution.cpp).
_OPTIONS = "int[] stride, int[] padding, int[] dilation, int groups, str strategy, bool channels_last"
conv_forward_op = define(f"conv_forward(Tensor input, Tensor weight, Tensor? bias, {_OPTIONS}) -> Tensor",
                         _conv_forward_fake)
conv_data_backward_op = define(
    f"conv_data_backward(Tensor grad_output, Tensor weight, int[] input_shape, {_OPTIONS}) -> Tensor",
    _conv_data_backward_fake)
conv_weight_backward_op = define(
    f"conv_weight_backward(Tensor input, Tensor grad_output, int[] weight_shape, {_OPTIONS}, "
    "bool with_bias_grad) -> (Tensor, Tensor)", _conv_weight_backward_fake)


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
