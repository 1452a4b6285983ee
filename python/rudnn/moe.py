"""MoE (SPEC §3, §4, §10): torch.ops.rudnn.moe_route and moe_route_sigmoid_grouped (the routings),
and torch.ops.rudnn.moe_layer — route, dispatch, SwiGLU experts, combine in one call, every
intermediate in one workspace from torch's allocator — with autograd through moe_layer_backward."""

import torch

from . import _C
from ._bridge import U32, arg, empty, option, place, prepare, prepare_optional
from ._library import define
from .errors import MoeError, raise_if_failed

_F = "moe"
# rudnn::moe::GroupedStrategy's numbers (the experts' GEMMs).
STRATEGIES = {"scalar": 0, "auto": 1, "tensor_core": 2}


def _routing(top_k, renormalize, grouped=False, groups=1, selected_groups=1, group_top_two=True, scale=1.0):
    return (grouped, top_k, renormalize, groups, selected_groups, group_top_two, scale)


def _route(logits, bias, routing):
    l, b = prepare(_F, "logits", logits), prepare_optional(_F, "bias", bias)
    where = place(_F, logits=l, bias=b)
    top_k = max(routing[1], 0)
    weights = empty((l.shape[0] if l.dim() else 0, top_k), l.dtype, l)
    indices = empty(weights.shape, torch.int32, l)
    raise_if_failed(_C.route(where, arg(l), arg(b), routing, arg(indices, U32), arg(weights)))
    return weights, indices


def _route_fake(logits, top_k):
    if logits.dim() != 2:
        raise MoeError("ShapeMismatch", "logits", "[tokens, experts]", str(list(logits.shape)))
    return logits.new_empty((logits.shape[0], top_k)), logits.new_empty((logits.shape[0], top_k), dtype=torch.int32)


def _moe_route(logits, top_k, renormalize):
    return _route(logits, None, _routing(top_k, renormalize))


def _moe_route_sigmoid_grouped(logits, bias, top_k, groups, selected_groups, group_top_two, renormalize, scale):
    return _route(logits, bias, _routing(top_k, renormalize, True, groups, selected_groups, group_top_two, scale))


moe_route_op = define("moe_route(Tensor logits, int top_k, bool renormalize) -> (Tensor, Tensor)", _moe_route,
                      lambda logits, top_k, renormalize: _route_fake(logits, top_k), _F)
moe_route_sigmoid_grouped_op = define(
    "moe_route_sigmoid_grouped(Tensor logits, Tensor? bias, int top_k, int groups, int selected_groups, "
    "bool group_top_two, bool renormalize, float scale) -> (Tensor, Tensor)", _moe_route_sigmoid_grouped,
    lambda logits, bias, top_k, *options: _route_fake(logits, top_k), _F)

def _router_weights(logits, indices, sigmoid, renormalize, scale):
    l, i = prepare(_F, "logits", logits), prepare(_F, "indices", indices)
    where = place(_F, logits=l, indices=i)
    out = empty(i.shape, torch.float32, l)
    raise_if_failed(_C.router_weights(where, arg(l), arg(i), sigmoid, renormalize, scale, arg(out)))
    return out


def _router_weights_backward(grad_weights, logits, indices, sigmoid, renormalize, scale):
    l, i, g = prepare(_F, "logits", logits), prepare(_F, "indices", indices), prepare(_F, "grad_weights", grad_weights)
    where = place(_F, logits=l, indices=i, grad_weights=g)
    out = empty(l.shape, l.dtype, l)
    raise_if_failed(_C.router_weights_backward(where, arg(l), arg(i), arg(g), sigmoid, renormalize, scale, arg(out)))
    return out


_WEIGHTS = "bool sigmoid, bool renormalize, float scale"
moe_router_weights_op = define(f"moe_router_weights(Tensor logits, Tensor indices, {_WEIGHTS}) -> Tensor",
                               _router_weights,
                               lambda logits, indices, *options: indices.new_empty(indices.shape, dtype=torch.float32))
moe_router_weights_backward_op = define(
    f"moe_router_weights_backward(Tensor grad_weights, Tensor logits, Tensor indices, {_WEIGHTS}) -> Tensor",
    _router_weights_backward,
    lambda grad_weights, logits, *args: torch.empty_like(logits, memory_format=torch.contiguous_format), _F)


def _router_setup_context(ctx, inputs, output):
    logits, indices, *options = inputs
    ctx.save_for_backward(logits, indices)
    ctx.options = options


def _router_backward(ctx, grad_weights):
    logits, indices = ctx.saved_tensors
    dlogits = moe_router_weights_backward_op(grad_weights.float().contiguous(), logits, indices, *ctx.options)
    return dlogits, None, None, None, None


torch.library.register_autograd("rudnn::moe_router_weights", _router_backward, setup_context=_router_setup_context)

_ROUTING = ("int top_k, bool renormalize, bool grouped, int groups, int selected_groups, bool group_top_two, "
            "float scale, str strategy")


def _prepare_layer(input, logits, bias, gate, up, down):
    names = ("input", "logits", "bias", "gate", "up", "down")
    tensors = [prepare_optional(_F, n, t) for n, t in zip(names, (input, logits, bias, gate, up, down))]
    return tensors, place(_F, **dict(zip(names, tensors)))


# The layer's workspace bytes per call signature: a function of the shapes, dtypes, device, top_k and
# strategy (SwiGluExperts::layer_workspace_bytes), so a warm call crosses into the library once.
_WORKSPACE_BYTES = {}
_WORKSPACE_BYTES_KEPT = 4096  # signatures; the cache starts over past it (serving varies the token count)


def _workspace_bytes(where, x, l, g, u, d, top_k, strategy):
    key = (where[:2], x.shape, l.shape, g.shape, u.shape, d.shape, x.dtype, g.dtype, l.dtype, top_k, strategy)
    nbytes = _WORKSPACE_BYTES.get(key)
    if nbytes is None:
        failure, nbytes = _C.layer_workspace_bytes(where, arg(x), arg(l), arg(g), arg(u), arg(d), top_k, strategy)
        raise_if_failed(failure)
        if len(_WORKSPACE_BYTES) >= _WORKSPACE_BYTES_KEPT:
            _WORKSPACE_BYTES.clear()
        _WORKSPACE_BYTES[key] = nbytes
    return nbytes


def _moe_layer(input, logits, bias, gate, up, down, top_k, renormalize, grouped, groups, selected_groups,
               group_top_two, scale, strategy):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    if bias is not None and not grouped:
        raise MoeError("InvalidValue", "bias", "None for softmax routing (grouped = false)", "a tensor")
    (x, l, b, g, u, d), where = _prepare_layer(input, logits, bias, gate, up, down)
    workspace = empty((_workspace_bytes(where, x, l, g, u, d, top_k, chosen),), torch.uint8, x)
    out = empty(x.shape, x.dtype, x)
    routing = _routing(top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale)
    raise_if_failed(_C.layer(where, arg(x), arg(l), arg(b), arg(g), arg(u), arg(d), routing, chosen, arg(out),
                             arg(workspace)))
    return out


def _moe_layer_fake(input, *args):
    return torch.empty_like(input, memory_format=torch.contiguous_format)


def _moe_layer_backward(grad_output, input, logits, bias, gate, up, down, top_k, renormalize, grouped, groups,
                        selected_groups, group_top_two, scale, strategy):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    (x, l, b, g, u, d), where = _prepare_layer(input, logits, bias, gate, up, down)
    dy = prepare(_F, "grad_output", grad_output)
    place(_F, input=x, grad_output=dy)
    dinput, dlogits = empty(x.shape, x.dtype, x), empty(l.shape, l.dtype, l)
    dgate, dup, ddown = (empty(w.shape, torch.float32, x) for w in (g, u, d))
    routing = _routing(top_k, renormalize, grouped, groups, selected_groups, group_top_two, scale)
    raise_if_failed(_C.layer_backward(where, arg(dy), arg(x), arg(l), arg(b), arg(g), arg(u), arg(d), routing, chosen,
                                      arg(dinput), arg(dlogits), arg(dgate), arg(dup), arg(ddown)))
    return dinput, dlogits, dgate.to(g.dtype), dup.to(u.dtype), ddown.to(d.dtype)


def _moe_layer_backward_fake(grad_output, input, logits, bias, gate, up, down, *args):
    return tuple(torch.empty_like(t, memory_format=torch.contiguous_format) for t in (input, logits, gate, up, down))


moe_layer_op = define(
    f"moe_layer(Tensor input, Tensor logits, Tensor? bias, Tensor gate, Tensor up, Tensor down, {_ROUTING}) -> Tensor",
    _moe_layer, _moe_layer_fake)
moe_layer_backward_op = define(
    f"moe_layer_backward(Tensor grad_output, Tensor input, Tensor logits, Tensor? bias, Tensor gate, Tensor up, "
    f"Tensor down, {_ROUTING}) -> (Tensor, Tensor, Tensor, Tensor, Tensor)", _moe_layer_backward,
    _moe_layer_backward_fake, _F)


# The router's gradient (selected_router_backward) takes top_k ≤ 64 (SPEC §10); the forward takes any
# top_k ≤ E. A differentiable call over 64 is rejected here, right after its forward, not at backward.
MAX_TRAINING_TOP_K = 64


def _setup_context(ctx, inputs, output):
    input, logits, bias, gate, up, down, *routing = inputs
    if routing[0] > MAX_TRAINING_TOP_K:
        raise MoeError("InvalidValue", "top_k", f"≤ {MAX_TRAINING_TOP_K} for a differentiable call (the router's "
                       "gradient)", str(routing[0]))
    ctx.save_for_backward(input, logits, bias, gate, up, down)
    ctx.routing = routing


def _backward(ctx, grad_output):
    input, logits, bias, gate, up, down = ctx.saved_tensors
    dinput, dlogits, dgate, dup, ddown = moe_layer_backward_op(grad_output.contiguous(), input, logits, bias, gate,
                                                               up, down, *ctx.routing)
    return (dinput, dlogits, None, dgate, dup, ddown) + (None,) * len(ctx.routing)


torch.library.register_autograd("rudnn::moe_layer", _backward, setup_context=_setup_context)


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
