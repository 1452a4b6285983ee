"""MoE (SPEC §3, §4, §10): torch.ops.rudnn.moe_route and moe_route_sigmoid_grouped (the routings),
torch.ops.rudnn.moe_layer — route, dispatch, SwiGLU experts, combine in one call, every
intermediate in one workspace from torch's allocator — with autograd through moe_layer_backward,
and the layer's steps as separate differentiable ops: moe_dispatch, moe_experts, moe_combine."""

from typing import NamedTuple

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

# The layer's steps (python/src/moe_steps.cpp). A dispatch is (expert_indices, offsets, slots), int32;
# each op after moe_dispatch reads them back and checks them against each other (host
# synchronizations in every op, which moe_layer does not pay).
_DISPATCH = "Tensor expert_indices, Tensor offsets, Tensor slots"


def _dispatch_fake(input, expert_indices, experts):
    if input.dim() != 2 or expert_indices.dim() != 2:
        raise MoeError("ShapeMismatch", "input" if input.dim() != 2 else "expert_indices", "rank 2",
                       str(list((input if input.dim() != 2 else expert_indices).shape)))
    tokens, top_k = expert_indices.shape
    return (input.new_empty((tokens * top_k, input.shape[1])), input.new_empty((experts + 1,), dtype=torch.int32),
            input.new_empty((tokens, top_k), dtype=torch.int32))


moe_dispatch_op = define("moe_dispatch(Tensor input, Tensor expert_indices, int experts) -> (Tensor, Tensor, Tensor)",
                         _dispatch_fake)
moe_dispatch_backward_op = define(
    f"moe_dispatch_backward(Tensor grad_rows, {_DISPATCH}) -> Tensor",
    lambda grad_rows, expert_indices, *dispatch: grad_rows.new_empty((expert_indices.shape[0], grad_rows.shape[1])))
moe_experts_op = define(
    f"moe_experts(Tensor rows, {_DISPATCH}, Tensor gate, Tensor up, Tensor down, str strategy) -> Tensor",
    lambda rows, indices, offsets, slots, gate, *args: rows.new_empty(rows.shape, dtype=gate.dtype))
moe_experts_backward_op = define(
    f"moe_experts_backward(Tensor grad_output, Tensor rows, {_DISPATCH}, Tensor gate, Tensor up, Tensor down, "
    "str strategy) -> (Tensor, Tensor, Tensor, Tensor)",
    lambda grad_output, rows, indices, offsets, slots, gate, up, down, strategy: tuple(
        torch.empty_like(t, memory_format=torch.contiguous_format) for t in (rows, gate, up, down)))
moe_combine_op = define(
    "moe_combine(Tensor expert_output, Tensor expert_indices, Tensor weights, Tensor offsets, Tensor slots) -> Tensor",
    lambda expert_output, expert_indices, *args: expert_output.new_empty(
        (expert_indices.shape[0], expert_output.shape[1])))
moe_combine_backward_op = define(
    "moe_combine_backward(Tensor grad_output, Tensor expert_output, Tensor expert_indices, Tensor weights, "
    "Tensor offsets, Tensor slots) -> (Tensor, Tensor)",
    lambda grad_output, expert_output, expert_indices, weights, *args: (
        torch.empty_like(expert_output, memory_format=torch.contiguous_format),
        torch.empty_like(weights, memory_format=torch.contiguous_format)))


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


class Dispatched(NamedTuple):
    """A dispatch (``dispatch``): each token's row copied once per selected expert, grouped by expert.
    ``rows`` [T·top_k, H] (expert e's are ``rows[offsets[e]:offsets[e+1]]``, in no fixed order inside
    it), ``offsets`` int32 [E + 1], ``slots`` int32 [T, top_k] (the row of token t's j-th choice), and
    the routing's ``expert_indices`` int32 [T, top_k]."""
    rows: torch.Tensor
    offsets: torch.Tensor
    slots: torch.Tensor
    expert_indices: torch.Tensor


def dispatch(input, expert_indices, experts):
    """input [T, H] and a selection ``expert_indices`` int32 [T, top_k] (``route``'s, or any with every
    index < ``experts``) → ``Dispatched``. Differentiable in the input (the gradient sums each token's
    rows)."""
    rows, offsets, slots = moe_dispatch_op(input, expert_indices, experts)
    return Dispatched(rows, offsets, slots, expert_indices)


def swiglu_experts(dispatched, gate, up, down, strategy="auto"):
    """The SwiGLU experts over a dispatch's rows: row r of expert e → down_e · (silu(gate_e · x) ⊙
    (up_e · x)); [T·top_k, H] in the rows' order, the weights' dtype. Differentiable in the rows, gate,
    up and down (weight gradients summed in FP32 in a fixed order)."""
    rows, offsets, slots, indices = dispatched
    return moe_experts_op(rows, indices, offsets, slots, gate, up, down, strategy)


def combine(expert_output, dispatched, weights):
    """The weighted sum of each token's expert outputs: out[t] = Σ_j weights[t, j] · expert_output[slots[t,
    j]], in FP32 in j order → [T, H] in expert_output's dtype. ``weights`` [T, top_k] (``route``'s, or
    ``router_weights``' to train the router). Differentiable in expert_output and weights."""
    _, offsets, slots, indices = dispatched
    return moe_combine_op(expert_output, indices, weights, offsets, slots)
