"""CUDA streams (skipped without a GPU): rudnn runs on torch's current stream — a side stream or the
legacy default stream — with no synchronization of its own, and a paged plan stays on its stream."""

import pytest
import torch
from conftest import close

import rudnn
from rudnn import _C

pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and _C.cuda_device_count() > 0),
                                reason="needs a CUDA GPU (torch and rudnn)")


def rms(x, gamma):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.double()


def test_a_side_stream_orders_the_call_after_its_inputs(seed):
    side = torch.cuda.Stream()
    gamma = torch.rand(4096, device="cuda") + 0.5
    with torch.cuda.stream(side):
        # Produced on the side stream just before the call: correct only if the call runs on `side` too.
        x = torch.randn(512, 4096, device="cuda") * 3
        y = rudnn.normalization.rms_norm(x, gamma, 1e-6)
    side.synchronize()
    close(y, rms(x, gamma), 2e-5, 2e-5)


def test_the_legacy_default_stream(seed):
    assert torch.cuda.current_stream().cuda_stream == 0  # torch's default is the legacy stream
    x, gamma = torch.randn(64, 256, device="cuda"), torch.rand(256, device="cuda") + 0.5
    close(rudnn.normalization.rms_norm(x, gamma, 1e-6), rms(x, gamma), 2e-5, 2e-5)


def test_a_paged_plan_stays_on_its_stream(seed):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        plan = rudnn.paged_attention.PagedPlan(4, 2, [[0, 1]], [5], [0], [4], "cuda")
    q = torch.randn(1, 2, 16, device="cuda")
    k, v = torch.randn(2, 4, 1, 16, device="cuda"), torch.randn(2, 4, 1, 16, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = plan.attention(q, k, v)
    side.synchronize()
    assert out.shape == (1, 2, 16) and torch.isfinite(out).all()
    with pytest.raises(rudnn.PagedAttentionError) as error:  # the default stream is not the plan's
        plan.attention(q, k, v)
    assert error.value.kind == "QueueMismatch" and error.value.argument == "query", str(error.value)


def test_a_captured_paged_call_replays_with_an_in_place_replan(seed):
    """A CUDA graph captured over a plan's call replays with whatever schedule an in-place replan wrote
    into the plan's buffers since: each replay equals a fresh plan's call for that schedule."""
    side = torch.cuda.Stream()
    schedules = [([[0, 1, 2]], [9], [0], [8]), ([[0, 1, 2]], [10], [0], [9]), ([[2, 0]], [7], [0], [6])]
    with torch.cuda.stream(side):
        plan = rudnn.paged_attention.PagedPlan(4, 3, *schedules[0], "cuda")
        q = torch.randn(1, 2, 16, device="cuda")
        k, v = torch.randn(3, 4, 1, 16, device="cuda"), torch.randn(3, 4, 1, 16, device="cuda")
        plan.attention(q, k, v)  # warm: nothing may compile during the capture
        side.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            out = plan.attention(q, k, v)
        for schedule in schedules:
            if schedule is not schedules[0]:
                plan.replan(*schedule, in_place=True)
            graph.replay()
            expected = rudnn.paged_attention.PagedPlan(4, 3, *schedule, "cuda").attention(q, k, v)
            side.synchronize()
            assert torch.equal(out, expected)
