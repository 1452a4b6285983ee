"""torch.compile(fullgraph=True) traces through every rudnn op (their fake kernels), forward and
backward, and the compiled model computes what the eager one does."""

import pytest
import torch
from conftest import close

import rudnn


class Block(torch.nn.Module):
    """rms_norm → causal attention → a conv over the sequence → an MoE layer → layer_norm → softmax."""

    def __init__(self, hidden=32, heads=2, experts=4, inter=16):
        super().__init__()
        self.heads = heads
        self.gamma = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.conv = torch.nn.Parameter(torch.randn(hidden, hidden, 3) * 0.1)
        self.router = torch.nn.Linear(hidden, experts)
        self.gate = torch.nn.Parameter(torch.randn(experts, inter, hidden) * 0.2)
        self.up = torch.nn.Parameter(torch.randn(experts, inter, hidden) * 0.2)
        self.down = torch.nn.Parameter(torch.randn(experts, hidden, inter) * 0.2)

    def forward(self, x):  # x [T, hidden]
        steps, hidden = x.shape
        # rms_norm and attention are forward-only: no parameter before them needs a gradient.
        h = rudnn.normalization.rms_norm(x, self.gamma.detach(), 1e-6)
        heads = h.view(steps, self.heads, hidden // self.heads).transpose(0, 1)[None]
        a = rudnn.attention.attention(heads, heads, heads, causal=True, strategy="flash_unit")
        h = x + a[0].transpose(0, 1).reshape(steps, hidden)
        c = rudnn.convolution.conv(h.t()[None], self.conv, None, padding=1, strategy="direct")
        h = h + c[0].t()
        h = h + rudnn.moe.swiglu_moe(h, self.router(h), self.gate, self.up, self.down, top_k=2, strategy="scalar")
        # The forward-only tail, off the gradient's path.
        probs = rudnn.normalization.softmax_last_axis(rudnn.normalization.layer_norm(h.detach(), self.gamma.detach(),
                                                                                     None, 1e-5))
        return h, probs


def test_compile_fullgraph_forward_and_backward(seed):
    torch._dynamo.reset()
    model = Block()
    x = torch.randn(10, 32)
    eager, eager_probs = model(x)
    eager.pow(2).sum().backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    out, probs = compiled(x)
    close(out, eager.double(), 1e-6, 1e-6)
    close(probs, eager_probs.double(), 1e-6, 1e-6)
    out.pow(2).sum().backward()
    assert set(expected) == {"conv", "router.weight", "router.bias", "gate", "up", "down"}
    for name, grad in expected.items():
        close(dict(model.named_parameters())[name].grad, grad.double(), 1e-6, 1e-6)


def test_backward_through_a_forward_only_op_raises(seed):
    x = torch.randn(4, 16, requires_grad=True)
    y = rudnn.normalization.rms_norm(x, torch.ones(16), 1e-6)
    with pytest.raises(rudnn.NormalizationError) as error:
        y.sum().backward()
    assert error.value.kind == "Unsupported" and error.value.argument == "rms_norm", str(error.value)


def test_compile_with_inductor(seed):
    """torch.compile's default backend (inductor: generated C++ around the rudnn ops, which stay extern
    calls) on a function mixing rudnn and torch ops, forward and backward."""
    torch._dynamo.reset()
    x = torch.randn(2, 8, 12)
    w = torch.randn(8, 8, 3, requires_grad=True)
    gamma = torch.rand(12) + 0.5

    def f(x, w):
        h = rudnn.normalization.rms_norm(x, gamma, 1e-6)
        return torch.relu(rudnn.convolution.conv(h, w, None, padding=1, strategy="direct")).sum() * 0.5

    eager = f(x, w)
    (expected,) = torch.autograd.grad(eager, w)
    compiled = torch.compile(f, fullgraph=True)
    out = compiled(x, w)
    (grad,) = torch.autograd.grad(out, w)
    close(out, eager.double(), 1e-5, 1e-5)
    close(grad, expected.double(), 1e-5, 1e-5)


def test_compile_the_moe_steps(seed):
    """route → router_weights → dispatch → experts → combine, beside a shared expert in torch: traced
    whole (each step's fake kernel) and equal to eager, forward and backward."""
    torch._dynamo.reset()
    x = torch.randn(9, 16, requires_grad=True)
    router = torch.randn(16, 4, requires_grad=True)
    gate, up = (torch.randn(4, 8, 16) * 0.3).requires_grad_(), (torch.randn(4, 8, 16) * 0.3).requires_grad_()
    down = (torch.randn(4, 16, 8) * 0.3).requires_grad_()
    shared = torch.randn(16, 16) * 0.1

    def layer(x, router, gate, up, down):
        logits = x @ router
        indices = rudnn.moe.route(logits.detach(), 2)[1]
        d = rudnn.moe.dispatch(x, indices, 4)
        y = rudnn.moe.swiglu_experts(d, gate, up, down, strategy="scalar")
        return rudnn.moe.combine(y, d, rudnn.moe.router_weights(logits, indices)) + x @ shared

    inputs = (x, router, gate, up, down)
    eager = layer(*inputs)
    expected = torch.autograd.grad(eager.pow(2).sum(), inputs)
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    out = compiled(*inputs)
    close(out, eager.double(), 1e-6, 1e-6)
    for got, want in zip(torch.autograd.grad(out.pow(2).sum(), inputs), expected):
        close(got, want.double(), 1e-6, 1e-6)
