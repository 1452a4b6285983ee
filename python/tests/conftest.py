"""Shared fixtures of the PyTorch adapter's tests (run by scripts/test; docs/pytorch.md).

Every test draws a fresh seed (RUDNN_TEST_SEED repeats one; a failing test prints its seed) and
runs with poisoned outputs (RUDNN_TORCH_POISON=1: every output starts as NaN bytes). CPU tensors
run on the host emulation device; the CUDA tests run only where torch sees a GPU."""

import os
import random

import pytest

os.environ.setdefault("RUDNN_TORCH_POISON", "1")

import torch  # noqa: E402


@pytest.fixture
def seed():
    value = int(os.environ.get("RUDNN_TEST_SEED", random.randrange(2**31)))
    print(f"RUDNN_TEST_SEED={value}")
    torch.manual_seed(value)
    return value


def devices():
    """CPU always; CUDA where torch and rudnn see a GPU (marked so the CPU-only run reports the skip)."""
    from rudnn import _C

    usable = torch.cuda.is_available() and _C.cuda_device_count() > 0
    cuda = pytest.param("cuda", marks=pytest.mark.skipif(not usable, reason="needs a CUDA GPU (torch and rudnn)"))
    return ["cpu", cuda]


def close(actual, expected, atol, rtol):
    """Asserts |actual − expected| ≤ atol + rtol·|expected| everywhere, in float64, with the worst element."""
    actual, expected = actual.double().cpu(), expected.double().cpu()
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.isfinite(actual).all(), "non-finite output (an unwritten, poisoned element?)"
    excess = (actual - expected).abs() - (atol + rtol * expected.abs())
    worst = int(excess.argmax())
    assert excess.max() <= 0, (f"element {worst}: got {actual.flatten()[worst].item()}, "
                               f"expected {expected.flatten()[worst].item()}")
