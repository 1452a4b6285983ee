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


def expect_gradients(out, expected, inputs, leaves, tol):
    """Back-propagates one random gradient through `out` and its float64 reference `expected`; each
    input's gradient (its dtype) against its leaf's."""
    grad = torch.randn(expected.shape, dtype=torch.float64)
    out.backward(grad.to(out.dtype).to(out.device))
    expected.backward(grad)
    for name, got, want in zip(("input", "logits", "gate", "up", "down"), inputs, leaves):
        assert got.grad is not None and got.grad.dtype == got.dtype, name
        close(got.grad, want.grad, tol, tol)


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
    expect_gradients(out, expected, (x, logits, gate, up, down), leaves, tol * 4)


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
    # top_k past the experts: the library's InvalidValue, never a huge allocation of the outputs first.
    for top_k in (9, 2**40, 2**62):
        with pytest.raises(rudnn.MoeError) as error:
            rudnn.moe.route(torch.randn(3, 8), top_k)
        assert error.value.kind == "InvalidValue" and error.value.argument == "top_k", str(error.value)
        with pytest.raises(rudnn.MoeError) as error:
            rudnn.moe.route_sigmoid_grouped(torch.randn(3, 8), top_k=top_k, groups=4, selected_groups=2)
        assert error.value.kind == "InvalidValue" and error.value.argument == "top_k", str(error.value)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.route_sigmoid_grouped(torch.randn(4, 16), top_k=2, groups=5, selected_groups=2)
    assert error.value.kind == "InvalidValue" and error.value.argument == "groups", str(error.value)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.router_weights(torch.randn(4, 16), torch.zeros(4, 2, dtype=torch.int32), scale=0.0)
    assert error.value.kind == "InvalidValue" and error.value.argument == "scale", str(error.value)
    with pytest.raises(rudnn.MoeError) as error:
        rudnn.moe.router_weights(torch.randn(4, 16), torch.zeros(3, 2, dtype=torch.int32))
    assert error.value.kind == "ShapeMismatch" and error.value.argument == "indices", str(error.value)


# --- the layer's steps as separate ops: moe_dispatch, moe_experts, moe_combine ---


def expect_dispatch(d, x, experts):
    """offsets are the choices' running count; each choice's row is its token's input, inside its
    expert's range, no row taken twice."""
    indices, offsets, slots = d.expert_indices.long().cpu(), d.offsets.long().cpu(), d.slots.long().cpu()
    counts = torch.bincount(indices.flatten(), minlength=experts)
    assert torch.equal(offsets, torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)]))
    assert torch.equal(torch.sort(slots.flatten()).values, torch.arange(slots.numel()))
    assert ((slots >= offsets[indices]) & (slots < offsets[indices + 1])).all()
    rows = d.rows.detach().cpu()
    assert torch.equal(rows[slots], x.detach().cpu()[:, None].expand(-1, slots.shape[1], -1))


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype, strategy", [(torch.float32, "scalar"), (torch.bfloat16, "tensor_core"),
                                             (torch.bfloat16, "auto")])
def test_steps_compose_the_layer_bit_for_bit(seed, device, dtype, strategy):
    x, logits, gate, up, down = layer_inputs(dtype, device)
    weights, indices = rudnn.moe.route(logits, 2)
    d = rudnn.moe.dispatch(x, indices, 8)
    expect_dispatch(d, x, 8)
    y = rudnn.moe.swiglu_experts(d, gate, up, down, strategy=strategy)
    assert y.shape == d.rows.shape and y.dtype == dtype
    out = rudnn.moe.combine(y, d, weights)
    assert torch.equal(out, rudnn.moe.swiglu_moe(x, logits, gate, up, down, top_k=2, strategy=strategy))
    tol = 2e-5 if dtype == torch.float32 else 3e-2
    leaves = [t.double().cpu() for t in (x, logits, gate, up, down)]
    close(out, reference_layer(*leaves, indices.long().cpu(), False, True), tol, tol)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype, strategy", [(torch.float32, "scalar"), (torch.bfloat16, "auto")])
def test_steps_gradients_against_reference(seed, device, dtype, strategy):
    """The router trained through router_weights → combine; the experts and the input through dispatch
    → experts → combine: every gradient against the float64 reference layer's."""
    x, logits, gate, up, down = layer_inputs(dtype, device, requires_grad=True)
    indices = rudnn.moe.route(logits.detach(), 3)[1]
    weights = rudnn.moe.router_weights(logits, indices)
    d = rudnn.moe.dispatch(x, indices, 8)
    assert not d.offsets.requires_grad and not d.slots.requires_grad
    out = rudnn.moe.combine(rudnn.moe.swiglu_experts(d, gate, up, down, strategy=strategy), d, weights)
    leaves = [t.detach().double().cpu().requires_grad_() for t in (x, logits, gate, up, down)]
    expected = reference_layer(*leaves, indices.long().cpu(), False, True)
    tol = 2e-5 if dtype == torch.float32 else 3e-2
    close(out, expected, tol, tol)
    expect_gradients(out, expected, (x, logits, gate, up, down), leaves, tol * 4)


def test_steps_opcheck(seed):
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu", requires_grad=True)
    weights, indices = rudnn.moe.route(logits.detach(), 2)
    weights.requires_grad_()
    ops = torch.ops.rudnn
    torch.library.opcheck(ops.moe_dispatch.default, (x, indices, 8))
    d = rudnn.moe.dispatch(x.detach(), indices, 8)
    dispatch = (indices, d.offsets, d.slots)
    rows = d.rows.clone().requires_grad_()
    torch.library.opcheck(ops.moe_dispatch_backward.default, (torch.randn(d.rows.shape), *dispatch))
    torch.library.opcheck(ops.moe_experts.default, (rows, *dispatch, gate, up, down, "scalar"))
    torch.library.opcheck(ops.moe_experts_backward.default,
                          (torch.randn(d.rows.shape), d.rows, *dispatch, *(t.detach() for t in (gate, up, down)),
                           "scalar"))
    y = torch.randn(d.rows.shape, requires_grad=True)
    torch.library.opcheck(ops.moe_combine.default, (y, indices, weights, d.offsets, d.slots))
    torch.library.opcheck(ops.moe_combine_backward.default,
                          (torch.randn(x.shape), y.detach(), indices, weights.detach(), d.offsets, d.slots))


def corrupted(d, name, edit):
    """d with one of its tensors edited (on a copy)."""
    value = getattr(d, name).clone()
    edit(value)
    return d._replace(**{name: value})


def swapped_choices(slots):
    slots[0, 0], slots[0, 1] = slots[0, 1].clone(), slots[0, 0].clone()  # token 0's two experts differ


@pytest.mark.parametrize("name, edit, kind", [
    ("offsets", lambda o: o.__setitem__(1, o[1] + 1), "InvalidValue"),
    ("offsets", lambda o: o.__setitem__(0, 1), "InvalidValue"),
    ("slots", swapped_choices, "InvalidValue"),
    ("slots", lambda s: s.__setitem__((1, 0), s[0, 0]), "InvalidValue"),
    ("slots", lambda s: s.__setitem__((2, 1), 10**6), "InvalidValue"),
])
def test_a_malformed_dispatch_is_named(name, edit, kind):
    """Every op after dispatch checks the dispatch it is given; a bad one is an error naming the tensor,
    also from a backward."""
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu")
    weights, indices = rudnn.moe.route(logits, 2)
    d = rudnn.moe.dispatch(x, indices, 8)
    bad = corrupted(d, name, edit)
    y = rudnn.moe.swiglu_experts(d, gate, up, down, strategy="scalar")
    ops = torch.ops.rudnn
    for call in (lambda: rudnn.moe.swiglu_experts(bad, gate, up, down, strategy="scalar"),
                 lambda: ops.moe_experts_backward(y, bad.rows, indices, bad.offsets, bad.slots, gate, up, down,
                                                  "scalar"),
                 lambda: rudnn.moe.combine(y, bad, weights),
                 lambda: ops.moe_combine_backward(y, y, indices, weights, bad.offsets, bad.slots),
                 lambda: ops.moe_dispatch_backward(d.rows, indices, bad.offsets, bad.slots)):
        with pytest.raises(rudnn.MoeError) as error:
            call()
        assert error.value.kind == kind and error.value.argument == name, str(error.value)


def test_step_errors():
    x, logits, gate, up, down = layer_inputs(torch.float32, "cpu")
    weights, indices = rudnn.moe.route(logits, 2)
    cases = [
        (lambda: rudnn.moe.dispatch(x, indices.long(), 8), "UnsupportedDType", "expert_indices"),
        (lambda: rudnn.moe.dispatch(x, indices.float(), 8), "UnsupportedDType", "expert_indices"),
        (lambda: rudnn.moe.dispatch(x, indices, 3), "InvalidValue", "expert_indices"),
        (lambda: rudnn.moe.dispatch(x, indices, 0), "InvalidValue", "experts"),
        (lambda: rudnn.moe.dispatch(x, indices, 2**31), "InvalidValue", "experts"),
        (lambda: rudnn.moe.dispatch(x[:5], indices, 8), "ShapeMismatch", "input"),
    ]
    d = rudnn.moe.dispatch(x, indices, 8)
    cases += [
        (lambda: rudnn.moe.swiglu_experts(d._replace(offsets=d.offsets[None]), gate, up, down), "ShapeMismatch",
         "offsets"),
        (lambda: rudnn.moe.swiglu_experts(d._replace(offsets=d.offsets[:5]), gate, up, down), "ShapeMismatch",
         "offsets"),
        # 0-d offsets: the experts op knows the count from the weights and must still name them.
        (lambda: rudnn.moe.swiglu_experts(d._replace(offsets=d.offsets[0]), gate, up, down), "ShapeMismatch",
         "offsets"),
        (lambda: rudnn.moe.combine(d.rows, d._replace(offsets=d.offsets[0]), weights), "ShapeMismatch", "offsets"),
        (lambda: rudnn.moe.combine(d.rows, d._replace(offsets=d.offsets[None]), weights), "ShapeMismatch",
         "offsets"),
        (lambda: rudnn.moe.swiglu_experts(d._replace(slots=d.slots.long()), gate, up, down), "UnsupportedDType",
         "slots"),
        (lambda: rudnn.moe.swiglu_experts(d._replace(rows=d.rows[:-1]), gate, up, down), "ShapeMismatch", "rows"),
        (lambda: rudnn.moe.swiglu_experts(d, gate, up, down, strategy="gpu"), "InvalidValue", "strategy"),
        (lambda: rudnn.moe.combine(d.rows, d, weights[:, :1]), "ShapeMismatch", "weights"),
        (lambda: rudnn.moe.combine(d.rows[:-1], d, weights), "ShapeMismatch", "expert_output"),
        (lambda: rudnn.moe.combine(d.rows, d._replace(offsets=d.offsets[:3]), weights), "ShapeMismatch", "offsets"),
        (lambda: torch.ops.rudnn.moe_experts_backward(d.rows[:, :8], d.rows, indices, d.offsets, d.slots, gate, up,
                                                      down, "scalar"), "ShapeMismatch", "grad_output"),
        (lambda: torch.ops.rudnn.moe_experts_backward(d.rows.bfloat16(), d.rows, indices, d.offsets, d.slots, gate,
                                                      up, down, "scalar"), "UnsupportedDType", "grad_output"),
        (lambda: torch.ops.rudnn.moe_dispatch_backward(d.rows[:-1], indices, d.offsets, d.slots), "ShapeMismatch",
         "grad_rows"),
    ]
    for call, kind, argument in cases:
        with pytest.raises(rudnn.MoeError) as error:
            call()
        assert error.value.kind == kind and error.value.argument == argument, str(error.value)
