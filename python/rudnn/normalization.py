"""Normalization along the last axis (SPEC §2): torch.ops.rudnn.{layer_norm, rms_norm,
softmax_last_axis}. Forward only: the library has no normalization backward."""

import torch

from . import _C
from ._bridge import arg, empty, place, prepare, prepare_optional
from ._library import define
from .errors import raise_if_failed

_F = "normalization"


def _layer_norm(input, gamma, beta, epsilon):
    x, g, b = prepare(_F, "input", input), prepare(_F, "gamma", gamma), prepare_optional(_F, "beta", beta)
    where = place(_F, input=x, gamma=g, beta=b)
    out = empty(x.shape, x.dtype, x)
    raise_if_failed(_C.layer_norm(where, arg(x), arg(g), arg(b), epsilon, arg(out)))
    return out


def _rms_norm(input, gamma, epsilon):
    x, g = prepare(_F, "input", input), prepare(_F, "gamma", gamma)
    where = place(_F, input=x, gamma=g)
    out = empty(x.shape, x.dtype, x)
    raise_if_failed(_C.rms_norm(where, arg(x), arg(g), epsilon, arg(out)))
    return out


def _softmax_last_axis(logits):
    x = prepare(_F, "logits", logits)
    out = empty(x.shape, x.dtype, x)
    raise_if_failed(_C.softmax_last_axis(place(_F, logits=x), arg(x), arg(out)))
    return out


def _same_as_input(input, *args):
    return torch.empty_like(input, memory_format=torch.contiguous_format)


layer_norm_op = define("layer_norm(Tensor input, Tensor gamma, Tensor? beta, float epsilon) -> Tensor",
                       _layer_norm, _same_as_input, _F)
rms_norm_op = define("rms_norm(Tensor input, Tensor gamma, float epsilon) -> Tensor", _rms_norm, _same_as_input, _F)
softmax_last_axis_op = define("softmax_last_axis(Tensor logits) -> Tensor", _softmax_last_axis, _same_as_input, _F)


def layer_norm(input, gamma, beta=None, epsilon=1e-5):
    """y = (x − mean) / sqrt(var + epsilon) · gamma + beta over the last axis; gamma, beta float32 [H]."""
    return layer_norm_op(input, gamma, beta, epsilon)


def rms_norm(input, gamma, epsilon=1e-6):
    """y = x / sqrt(mean(x²) + epsilon) · gamma over the last axis; gamma float32 [H]."""
    return rms_norm_op(input, gamma, epsilon)


def softmax_last_axis(logits):
    """Numerically stable softmax over the last axis."""
    return softmax_last_axis_op(logits)
