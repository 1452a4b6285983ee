"""torch.ops.rudnn.moe_route, moe_route_sigmoid_grouped and moe_layer (with autograd) against a
reference MoE in float64."""

import pytest
import torch
import torch.nn.functional as F
from conftest import close, devices

import rudnn


def top(values, k):
    """The indices of the k largest values, best first, ties to the smaller index (rudnn's rule; torch.topk
    promises no order among equal values, and bf16 logits tie often)."""
    return torch.sort(values, dim=-1, descending=True, stable=True).indices[..., :k]


def softmax_selection(logits, top_k):
    return top(torch.softmax(logits.double(), -1), top_k)


def grouped_selection(logits, bias, top_k, groups, selected_groups, group_top_two=True):
    c = torch.sigmoid(logits.double()) + (0 if bias is None else bias.double())
    per_group = c.view(c.shape[0], groups, -1)
    best_two = torch.sort(per_group, -1, descending=True).values[..., :2]
    score = best_two.sum(-1) if group_top_two else best_two[..., 0]
    kept = torch.zeros_like(score, dtype=torch.bool).scatter_(1, top(score, selected_groups), True)
    c = c.masked_fill(~kept.repeat_interleave(per_group.shape[-1], 1), float("-inf"))
    return top(c, top_k)


def router_weights(logits, indices, grouped, renormalize, scale=1.0):
    scores = torch.sigmoid(logits) if grouped else torch.softmax(logits, -1)
    w = scores.gather(1, indices)
    if renormalize:
        w = w / w.sum(-1, keepdim=True)
    return w * scale


def reference_layer(x, logits, gate, up, down, indices, grouped, renormalize, scale=1.0):
    """out[t] = Σ_j w[t, j] · down_e(silu(gate_e x_t) ⊙ up_e x_t), e = indices[t, j]; differentiable."""
    w = router_weights(logits, indices, grouped, renormalize, scale)
    out = torch.zeros_like(x)
    for j in range(indices.shape[1]):
        e = indices[:, j]
        hidden = F.silu(torch.einsum("tih,th->ti", gate[e], x)) * torch.einsum("tih,th->ti", up[e], x)
        out = out + w[:, j, None] * torch.einsum("thi,ti->th", down[e], hidden)
    return out


def layer_inputs(dtype, device, tokens=11, hidden=16, inter=24, experts=8, requires_grad=False):
    def make(*shape, scale=1.0):
        return (torch.randn(*shape, dtype=torch.float64) * scale).to(dtype).to(device).requires_grad_(requires_grad)

    return (make(tokens, hidden), make(tokens, experts), make(experts, inter, hidden, scale=0.3),
            make(experts, inter, hidden, scale=0.3), make(experts, hidden, inter, scale=0.3))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_routes(seed, device, dtype):
    logits = torch.randn(13, 16, dtype=dtype, device=device)
    tol = 1e-6 if dtype == torch.float32 else 1e-2
    weights, indices = rudnn.moe.route(logits, 3, renormalize=True)
    assert indices.dtype == torch.int32 and weights.dtype == dtype
    assert torch.equal(indices.long().cpu(), softmax_selection(logits.cpu(), 3))
    close(weights, router_weights(logits.double().cpu(), indices.long().cpu(), False, True), tol, tol)
    bias = torch.randn(16, device=device) * 0.1
    weights, indices = rudnn.moe.route_sigmoid_grouped(logits, bias, top_k=4, groups=4, selected_groups=2,
                                                       renormalize=False, scale=2.5)
    assert torch.equal(indices.long().cpu(), grouped_selection(logits.cpu(), bias.cpu(), 4, 4, 2))
    close(weights, router_weights(logits.double().cpu(), indices.long().cpu(), True, False, 2.5), tol, tol)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("dtype, strategy", [(torch.float32, "scalar"), (torch.bfloat16, "tensor_core")])
def test_layer_and_gradients_against_reference(seed, device, grouped, dtype, strategy):
    x, logits, gate, up, down = layer_inputs(dtype, device, requires_grad=True)
    if grouped:
        bias = torch.randn(8, device=device) * 0.1
        out = rudnn.moe.swiglu_moe_grouped(x, logits, gate, up, down, bias, top_k=3, groups=4, selected_groups=2,
                                           scale=1.5, strategy=strategy)
        indices = grouped_selection(logits.detach().cpu(), bias.cpu(), 3, 4, 2)
    else:
        out = rudnn.moe.swiglu_moe(x, logits, gate, up, down, top_k=2, strategy=strategy)
        indices = softmax_selection(logits.detach().cpu(), 2)
    leaves = [t.detach().double().cpu().requires_grad_() for t in (x, logits, gate, up, down)]
    expected = reference_layer(*leaves, indices, grouped, True, 1.5 if grouped else 1.0)
    tol = 2e-5 if dtype == torch.float32 else 3e-2
    close(out, expected, tol, tol)
    grad = torch.randn(expected.shape, dtype=torch.float64)
    out.backward(grad.to(dtype).to(device))
    expected.backward(grad)
    for name, got, want in zip(("input", "logits", "gate", "up", "down"), (x, logits, gate, up, down), leaves):
        assert got.grad is not None and got.grad.dtype == dtype, name
        close(got.grad, want.grad, tol * 4, tol * 4)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])
def test_router_weights_and_gradient(seed, device, scoring):
    logits = torch.randn(9, 12, device=device, requires_grad=True)
    indices = softmax_selection(logits.detach().cpu(), 3).to(device)
    weights = rudnn.moe.router_weights(logits, indices, scoring, renormalize=True, scale=2.0)
    leaf = logits.detach().double().cpu().requires_grad_()
    expected = router_weights(leaf, indices.cpu(), scoring == "sigmoid", True, 2.0)
    close(weights, expected, 1e-6, 1e-6)
    grad = torch.randn(expected.shape, dtype=torch.float64)
    weights.backward(grad.float().to(device))
    expected.backward(grad)
    close(logits.grad, leaf.grad, 1e-6, 1e-6)
    assert weights.dtype == torch.float32 and logits.grad.dtype == torch.float32


def test_opcheck(seed):
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu", requires_grad=True)
    torch.library.opcheck(torch.ops.rudnn.moe_route.default, (logits.detach(), 2, True))
    torch.library.opcheck(torch.ops.rudnn.moe_route_sigmoid_grouped.default,
                          (logits.detach(), None, 2, 4, 2, True, True, 1.0))
    indices = softmax_selection(logits.detach(), 2).to(torch.int32)
    torch.library.opcheck(torch.ops.rudnn.moe_router_weights.default, (logits, indices, False, True, 1.0))
    routing = (2, True, False, 1, 1, True, 1.0, "scalar")
    torch.library.opcheck(torch.ops.rudnn.moe_layer.default, (x, logits, None, gate, up, down, *routing))
    grad = torch.randn(x.shape)
    torch.library.opcheck(torch.ops.rudnn.moe_layer_backward.default,
                          (grad, *(t.detach() for t in (x, logits)), None, *(t.detach() for t in (gate, up, down)),
                           *routing))


@pytest.mark.parametrize("change, kind, argument", [
    (dict(top_k=9), "InvalidValue", "top_k"),
    (dict(top_k=0), "InvalidValue", "top_k"),
    (dict(logits=torch.randn(11, 7)), "ShapeMismatch", "logits"),
    (dict(down=torch.randn(8, 16, 23)), "ShapeMismatch", "down"),
    (dict(x=torch.randn(11, 16).half()), "UnsupportedDType", "input"),
    (dict(strategy="gpu"), "InvalidValue", "strategy"),
])
def test_errors(change, kind, argument):
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu")
    args = dict(x=x, logits=logits, down=down, top_k=2, strategy="scalar")
    args.update(change)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.swiglu_moe(args["x"], args["logits"], gate, up, args["down"], args["top_k"],
                             strategy=args["strategy"])
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)


def test_layer_bias_needs_grouped_routing_and_training_top_k_is_at_most_64():
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu")
    with pytest.raises(rudnn.MoeError) as error:
        torch.ops.rudnn.moe_layer(x, logits, torch.zeros(8), gate, up, down, 2, True, False, 1, 1, True, 1.0, "scalar")
    assert error.value.kind == "InvalidValue" and error.value.argument == "bias", str(error.value)
    wide = torch.randn(3, 72, requires_grad=True)
    gate, up, down = torch.randn(72, 8, 16), torch.randn(72, 8, 16), torch.randn(72, 16, 8)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.swiglu_moe(torch.randn(3, 16), wide, gate, up, down, top_k=66, strategy="scalar")
    assert error.value.kind == "InvalidValue" and error.value.argument == "top_k", str(error.value)
    with torch.no_grad():  # the forward alone takes any top_k ≤ E
        assert rudnn.moe.swiglu_moe(torch.randn(3, 16), wide, gate, up, down, top_k=66, strategy="scalar").shape == (3, 16)


def test_route_errors():
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.route_sigmoid_grouped(torch.randn(4, 16), top_k=2, groups=5, selected_groups=2)
    assert error.value.kind == "InvalidValue" and error.value.argument == "groups", str(error.value)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.router_weights(torch.randn(4, 16), torch.zeros(4, 2, dtype=torch.int32), scale=0.0)
    assert error.value.kind == "InvalidValue" and error.value.argument == "scale", str(error.value)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.router_weights(torch.randn(4, 16), torch.zeros(3, 2, dtype=torch.int32))
    assert error.value.kind == "ShapeMismatch" and error.value.argument == "indices", str(error.value)
