"""Normalization along the last axis (SPEC §2): torch.ops.rudnn.{layer_norm, rms_norm,
softmax_last_axis}. Forward only: the library has no normalization backward."""

import torch

from ._library import define


def _same_as_input(input, *args):
    return torch.empty_like(input, memory_format=torch.contiguous_format)


layer_norm_op = define("layer_norm(Tensor input, Tensor gamma, Tensor? beta, float epsilon) -> Tensor", _same_as_input)
rms_norm_op = define("rms_norm(Tensor input, Tensor gamma, float epsilon) -> Tensor", _same_as_input)
softmax_last_axis_op = define("softmax_last_axis(Tensor logits) -> Tensor", _same_as_input)


def layer_norm(input, gamma, beta=None, epsilon=1e-5):
    """y = (x − mean) / sqrt(var + epsilon) · gamma + beta over the last axis; gamma, beta float32 [H]."""
    return layer_norm_op(input, gamma, beta, epsilon)


def rms_norm(input, gamma, epsilon=1e-6):
    """y = x / sqrt(mean(x²) + epsilon) · gamma over the last axis; gamma float32 [H]."""
    return rms_norm_op(input, gamma, epsilon)


def softmax_last_axis(logits):
    """Numerically stable softmax over the last axis."""
    return softmax_last_axis_op(logits)
