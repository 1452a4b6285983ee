"""torch.ops.rudnn.{chunk_gated_delta_rule, gated_delta_rule} against the recurrence in float64."""

import pytest
import torch
from conftest import close, devices

import rudnn


def recurrence(q, k, v, beta, g, state, scale):
    """S ← S·exp(g_t); u_t = β_t (v_t − Sᵀk_t); S ← S + k_t u_tᵀ; o_t = Sᵀ(scale · q_t), in float64."""
    q, k, v, beta, g = (t.double().cpu() for t in (q, k, v, beta, g))
    b, h, steps, dk = q.shape
    s = torch.zeros(b, h, dk, v.shape[-1], dtype=torch.float64) if state is None else state.double().cpu().clone()
    out = torch.empty(b, h, steps, v.shape[-1], dtype=torch.float64)
    for t in range(steps):
        s = s * g[..., t, None, None].exp()
        u = beta[..., t, None] * (v[..., t, :] - torch.einsum("bhkv,bhk->bhv", s, k[..., t, :]))
        s = s + k[..., t, :, None] * u[..., None, :]
        out[..., t, :] = torch.einsum("bhkv,bhk->bhv", s, scale * q[..., t, :])
    return out, s


def inputs(dtype, device, steps=37, dk=32, dv=16):
    def make(*shape, low=-1.0, high=1.0):
        return (torch.rand(*shape, dtype=torch.float64) * (high - low) + low).to(dtype).to(device)

    q, k = make(2, 3, steps, dk, low=-0.2, high=0.2), make(2, 3, steps, dk, low=-0.2, high=0.2)
    return q, k, make(2, 3, steps, dv), make(2, 3, steps, low=0, high=1), make(2, 3, steps, low=-0.5, high=0)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_against_the_recurrence(seed, device, dtype):
    tol = 2e-5 if dtype == torch.float32 else 2e-2
    q, k, v, beta, g = inputs(dtype, device)
    state = torch.randn(2, 3, 32, 16, device=device) * 0.1
    expected, final = recurrence(q, k, v, beta, g, state, 0.7)
    for chunk_size in (16, 64):
        out, s = rudnn.gated_delta.chunk_gated_delta_rule(q, k, v, beta, g, state, 0.7, chunk_size)
        close(out, expected, tol, tol)
        close(s, final, tol, tol)
        assert out.dtype == dtype and s.dtype == torch.float32
    out, s = rudnn.gated_delta.gated_delta_rule(q, k, v, beta, g, state, 0.7)
    close(out, expected, tol, tol)
    close(s, final, tol, tol)


def test_prefill_then_decode_continues_the_state(seed):
    q, k, v, beta, g = inputs(torch.float32, "cpu", steps=20)
    expected, final = recurrence(q, k, v, beta, g, None, 1.0)
    head, state = rudnn.gated_delta.chunk_gated_delta_rule(q[:, :, :19], k[:, :, :19], v[:, :, :19], beta[..., :19],
                                                           g[..., :19], chunk_size=8)
    tail, s = rudnn.gated_delta.gated_delta_rule(q[:, :, 19:], k[:, :, 19:], v[:, :, 19:], beta[..., 19:],
                                                 g[..., 19:], state)
    close(torch.cat([head, tail], 2), expected, 2e-5, 2e-5)
    close(s, final, 2e-5, 2e-5)


def test_opcheck(seed):
    q, k, v, beta, g = inputs(torch.float32, "cpu", steps=9)
    torch.library.opcheck(torch.ops.rudnn.chunk_gated_delta_rule.default, (q, k, v, beta, g, None, 1.0, 4))
    torch.library.opcheck(torch.ops.rudnn.gated_delta_rule.default,
                          (q, k, v, beta, g, torch.zeros(2, 3, 32, 16), 0.5))


@pytest.mark.parametrize("change, kind, argument", [
    (dict(chunk_size=0), "InvalidValue", "chunk_size"),
    (dict(chunk_size=4096), "InvalidValue", "chunk_size"),
    (dict(v=torch.randn(2, 3, 8, 16)), "ShapeMismatch", "value"),
    (dict(beta=torch.rand(2, 3, 9).half()), "UnsupportedDType", "beta"),
    (dict(state=torch.zeros(2, 3, 16, 16)), "ShapeMismatch", "initial_state"),
    (dict(scale=float("inf")), "InvalidValue", "query_scale"),
])
def test_errors(change, kind, argument):
    q, k, v, beta, g = inputs(torch.float32, "cpu", steps=9)
    args = dict(v=v, beta=beta, state=None, scale=1.0, chunk_size=4)
    args.update(change)
    with pytest.raises(rudnn.GatedDeltaError) as error:
        rudnn.gated_delta.chunk_gated_delta_rule(q, k, args["v"], args["beta"], g, args["state"], args["scale"],
                                                 args["chunk_size"])
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)
