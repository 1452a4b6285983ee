"""torch.ops.rudnn.attention against F.scaled_dot_product_attention in float64."""

import pytest
import torch
import torch.nn.functional as F
from conftest import close, devices

import rudnn

TOLERANCE = {torch.float32: 3e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def reference(q, k, v, excluded=None, bias=None, scale=None, causal=False):
    q, k, v = q.double(), k.double(), v.double()
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    scores = (q @ k.transpose(-1, -2)) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if bias is not None:
        scores = scores + bias.double()
    tq, tk = q.shape[2], k.shape[2]
    if causal:  # bottom-right aligned: query i sees key j iff j ≤ i + Tk − Tq
        hidden = torch.arange(tk)[None, :] > torch.arange(tq)[:, None] + (tk - tq)
        scores = scores.masked_fill(hidden.to(scores.device), float("-inf"))
    if excluded is not None:
        scores = scores.masked_fill(excluded.bool(), float("-inf"))
    probs = torch.softmax(scores, -1).nan_to_num(0.0)  # a row with every key excluded is zeros
    return probs @ v


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype, strategy", [(torch.float32, "flash_unit"), (torch.float32, "fallback"),
                                             (torch.float16, "flash_blackbox_accelerated"),
                                             (torch.bfloat16, "flash_unit")])
def test_against_sdpa(seed, device, dtype, strategy):
    q = torch.randn(2, 4, 9, 64, dtype=dtype, device=device)
    k = torch.randn(2, 2, 13, 64, dtype=dtype, device=device)
    v = torch.randn(2, 2, 13, 64, dtype=dtype, device=device)
    tol = TOLERANCE[dtype]
    close(rudnn.attention.attention(q, k, v, strategy=strategy), reference(q, k, v), tol, tol)
    close(rudnn.attention.attention(q, k, v, causal=True, scale=0.1, strategy=strategy),
          reference(q, k, v, scale=0.1, causal=True), tol, tol)
    if dtype == torch.float32:  # torch's own kernel, for the plain case
        sdpa = F.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(2, 1),
                                              v.double().repeat_interleave(2, 1))
        close(rudnn.attention.attention(q, k, v, strategy=strategy), sdpa, tol, tol)


def test_schema_defaults(seed):
    """The schema's defaults (no mask, no bias, 1/√D, not causal, the library's default strategy)."""
    q, k, v = torch.randn(1, 2, 5, 32), torch.randn(1, 1, 6, 32), torch.randn(1, 1, 6, 32)
    close(torch.ops.rudnn.attention(q, k, v), reference(q, k, v), 3e-5, 3e-5)
    close(rudnn.attention.attention(q, k, v, causal=True), reference(q, k, v, causal=True), 3e-5, 3e-5)


def test_mask_and_bias(seed):
    q, k, v = torch.randn(1, 2, 5, 32), torch.randn(1, 2, 7, 32), torch.randn(1, 2, 7, 16)
    excluded = torch.rand(1, 1, 5, 7) < 0.4
    excluded[0, 0, 3] = True  # a row with every key excluded
    bias = torch.randn(1, 2, 5, 7)
    out = rudnn.attention.attention(q, k, v, mask=excluded, attn_bias=bias, strategy="flash_unit")
    close(out, reference(q, k, v, excluded, bias), 3e-5, 3e-5)
    assert out[0, :, 3].abs().max() == 0
    close(rudnn.attention.attention(q, k, v, mask=excluded.to(torch.uint8), strategy="fallback"),
          reference(q, k, v, excluded), 3e-5, 3e-5)


def test_opcheck(seed):
    q, k, v = torch.randn(1, 2, 5, 32), torch.randn(1, 1, 6, 32), torch.randn(1, 1, 6, 32)
    torch.library.opcheck(torch.ops.rudnn.attention.default, (q, k, v), {"causal": True, "strategy": "flash_unit"})
    torch.library.opcheck(torch.ops.rudnn.attention.default, (q, k, v, torch.zeros(1, 1, 5, 6, dtype=torch.uint8)),
                          {"strategy": "fallback"})


@pytest.mark.parametrize("change, kind, argument", [
    (dict(k=torch.randn(1, 3, 6, 32)), "ShapeMismatch", "key"),  # Hq % Hkv ≠ 0
    (dict(v=torch.randn(1, 1, 5, 32)), "ShapeMismatch", "value"),
    (dict(k=torch.randn(1, 1, 6, 32).half()), "UnsupportedDType", "key"),
    (dict(strategy="flash_blackbox_accelerated"), "Unsupported", "strategy"),  # f32 on tensor cores
    (dict(strategy="fastest"), "InvalidValue", "strategy"),
    (dict(mask=torch.zeros(1, 1, 5, 7, dtype=torch.uint8)), "ShapeMismatch", "mask"),
])
def test_errors(change, kind, argument):
    args = dict(q=torch.randn(1, 2, 5, 32), k=torch.randn(1, 1, 6, 32), v=torch.randn(1, 1, 6, 32), mask=None,
                strategy="flash_unit")
    args.update(change)
    with pytest.raises(rudnn.AttentionSetupError) as error:
        rudnn.attention.attention(args["q"], args["k"], args["v"], mask=args["mask"], strategy=args["strategy"])
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)
