"""MoE (SPEC §3, §4, §10): torch.ops.rudnn.moe_route and moe_route_sigmoid_grouped (the routings),
and torch.ops.rudnn.moe_layer — route, dispatch, SwiGLU experts, combine in one call, every
intermediate in one workspace from torch's allocator — with autograd through moe_layer_backward."""

import torch

from ._library import define
from .errors import MoeError

# The strategy option's values (the experts' grouped GEMMs; python/src/moe.cpp).
STRATEGIES = ("scalar", "auto", "tensor_core")
# The router's gradient takes top_k ≤ 64 (SPEC §10): a differentiable moe_layer over it is rejected
# before it runs; a forward-only call takes any top_k ≤ E.
MAX_TRAINING_TOP_K = 64


def _route_fake(logits, top_k):
    if logits.dim() != 2:
        raise MoeError("ShapeMismatch", "logits", "[tokens, experts]", str(list(logits.shape)))
    return logits.new_empty((logits.shape[0], top_k)), logits.new_empty((logits.shape[0], top_k), dtype=torch.int32)


moe_route_op = define("moe_route(Tensor logits, int top_k, bool renormalize) -> (Tensor, Tensor)",
                      lambda logits, top_k, renormalize: _route_fake(logits, top_k))
moe_route_sigmoid_grouped_op = define(
    "moe_route_sigmoid_grouped(Tensor logits, Tensor? bias, int top_k, int groups, int selected_groups, "
    "bool group_top_two, bool renormalize, float scale) -> (Tensor, Tensor)",
    lambda logits, bias, top_k, *options: _route_fake(logits, top_k))

# moe_router_weights is differentiable in the logits through moe_router_weights_backward.
_WEIGHTS = "bool sigmoid, bool renormalize, float scale"
moe_router_weights_op = define(f"moe_router_weights(Tensor logits, Tensor indices, {_WEIGHTS}) -> Tensor",
                               lambda logits, indices, *options: indices.new_empty(indices.shape, dtype=torch.float32))
moe_router_weights_backward_op = define(
    f"moe_router_weights_backward(Tensor grad_weights, Tensor logits, Tensor indices, {_WEIGHTS}) -> Tensor",
    lambda grad_weights, logits, *args: torch.empty_like(logits, memory_format=torch.contiguous_format))

# moe_layer is differentiable in input, logits, gate, up and down through moe_layer_backward, which
# recomputes the forward (no activations kept between the passes).
_ROUTING = ("int top_k, bool renormalize, bool grouped, int groups, int selected_groups, bool group_top_two, "
            "float scale, str strategy")
moe_layer_op = define(
    f"moe_layer(Tensor input, Tensor logits, Tensor? bias, Tensor gate, Tensor up, Tensor down, {_ROUTING}) -> Tensor",
    lambda input, *args: torch.empty_like(input, memory_format=torch.contiguous_format))
moe_layer_backward_op = define(
    f"moe_layer_backward(Tensor grad_output, Tensor input, Tensor logits, Tensor? bias, Tensor gate, Tensor up, "
    f"Tensor down, {_ROUTING}) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    lambda grad_output, input, logits, bias, gate, up, down, *args: tuple(
        torch.empty_like(t, memory_format=torch.contiguous_format) for t in (input, logits, gate, up, down)))


def route(logits, top_k, renormalize=True):
    """Softmax over all E experts in FP32, then the top_k (ties to the smaller index) → (weights
    [T, top_k] in the logits' dtype, expert indices int32 [T, top_k])."""
    return moe_route_op(logits, top_k, renormalize)


def route_sigmoid_grouped(logits, bias=None, top_k=8, groups=8, selected_groups=4, group_top_two=True,
                          renormalize=True, scale=1.0):
    """DeepSeek-V3's grouped, limited sigmoid routing → (weights, expert indices int32)."""
    return moe_route_sigmoid_grouped_op(logits, bias, top_k, groups, selected_groups, group_top_two, renormalize,
                                        scale)


def router_weights(logits, indices, scoring="softmax", renormalize=True, scale=1.0):
    """The weights of the selected experts as a function of the logits (SPEC §10; the selection itself is
    not differentiated): softmax over all E logits (or the sigmoid of each, ``scoring="sigmoid"``) at the
    selected ``indices`` [T, top_k] (int32/int64), optionally divided by their sum, times ``scale``; float32
    [T, top_k]. Differentiable in the logits — for routers training with experts of the caller's own."""
    if scoring not in ("softmax", "sigmoid"):
        raise MoeError("InvalidValue", "scoring", "softmax or sigmoid", repr(scoring))
    return moe_router_weights_op(logits, indices, scoring == "sigmoid", renormalize, scale)


def swiglu_moe(input, logits, gate, up, down, top_k, renormalize=True, strategy="auto"):
    """A whole MoE layer with softmax top-k routing: input [T, H], logits [T, E], gate and up
    [E, I, H], down [E, H, I] → [T, H]. Differentiable in input, logits, gate, up and down."""
    return moe_layer_op(input, logits, None, gate, up, down, top_k, renormalize, False, 1, 1, True, 1.0, strategy)


def swiglu_moe_grouped(input, logits, gate, up, down, bias=None, top_k=8, groups=8, selected_groups=4,
                       group_top_two=True, renormalize=True, scale=1.0, strategy="auto"):
    """A whole MoE layer with DeepSeek-V3's grouped sigmoid routing (``bias`` float32 [E] selects
    only). Differentiable in input, logits, gate, up and down."""
    return moe_layer_op(input, logits, bias, gate, up, down, top_k, renormalize, True, groups, selected_groups,
                        group_top_two, scale, strategy)
