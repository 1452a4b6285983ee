#!/usr/bin/env python3
"""Host time per call of the PyTorch adapter (docs/pytorch.md; issue 17's target: ≤ 10 µs of overhead).

Each op is called through torch.ops.rudnn as a model calls it (torch's dispatcher, the C++ autograd
kernel, the C++ kernel: argument checks, outputs from torch's allocator, the library's contract and
launch) in two shapes:
  zero rows    a batch of 0 tokens: the library checks the call and launches nothing, so what is timed
               is the adapter and the library's host path — the overhead (as bench/serving_bench.cpp
               times the C++ serving path);
  small        a small real shape; on the host emulation device this includes running the kernel on
               the CPU, so it is an upper bound of the overhead there (on a GPU the kernel runs
               asynchronously and the two agree).
Peers in the same run: the torch op that does the same on the small shape, torch.empty_like (the
allocation every op makes), and two Python custom ops that only allocate their output, with and
without a Python autograd registration (what the adapter cost when its kernels were Python).

    python bench/python/op_overhead.py [--device cpu|cuda] [--calls 2000]
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import rudnn  # noqa: F401  (registers torch.ops.rudnn)


def per_call_us(fn, calls, device, repeats=7):
    for _ in range(max(calls // 10, 10)):
        fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def cases(device):
    """(label, the op on zero rows or None, the op on a small shape, the torch peer on that shape)."""
    ops = torch.ops.rudnn

    def randn(*shape):
        return torch.randn(*shape, device=device)

    gamma = torch.ones(64, device=device)
    x0, x = randn(0, 64), randn(1, 64)
    yield ("rms_norm [·, 64] f32", lambda: ops.rms_norm.default(x0, gamma, 1e-6),
           lambda: ops.rms_norm.default(x, gamma, 1e-6), lambda: F.rms_norm(x, (64,), gamma, 1e-6))
    yield ("layer_norm [·, 64] f32", lambda: ops.layer_norm.default(x0, gamma, gamma, 1e-5),
           lambda: ops.layer_norm.default(x, gamma, gamma, 1e-5), lambda: F.layer_norm(x, (64,), gamma, gamma, 1e-5))
    q = randn(1, 2, 1, 64)
    yield ("attention [1, 2, 1, 64] f32 flash_unit", None,
           lambda: ops.attention.default(q, q, q, None, None, None, False, "flash_unit"),
           lambda: F.scaled_dot_product_attention(q, q, q))
    # Channels-last: channels-first would add the layout conversions of the weight, which run even for
    # zero rows.
    xc0, xc, w = randn(0, 8, 8, 4), randn(1, 8, 8, 4), randn(4, 3, 3, 4)
    xt, wt = xc.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2)
    yield ("conv_forward_nhwc [·, 8, 8, 4] 3×3 f32 direct",
           lambda: ops.conv_forward.default(xc0, w, None, [1, 1], [1, 1], [1, 1], 1, "direct", True),
           lambda: ops.conv_forward.default(xc, w, None, [1, 1], [1, 1], [1, 1], 1, "direct", True),
           lambda: F.conv2d(xt, wt, None, 1, 1))
    gate, up, down = randn(8, 32, 64), randn(8, 32, 64), randn(8, 64, 32)
    t0, l0, t, l = randn(0, 64), randn(0, 8), randn(1, 64), randn(1, 8)

    def moe(tokens, logits):
        return ops.moe_layer.default(tokens, logits, None, gate, up, down, 2, True, False, 1, 1, True, 1.0, "auto")

    yield ("moe_layer [·, 64], 8 experts, top 2 f32", lambda: moe(t0, l0), lambda: moe(t, l), None)
    # The layer's steps as separate ops: each after dispatch reads the dispatch back to check it.
    (w0, i0), (w1, i1) = ops.moe_route.default(l0, 2, True), ops.moe_route.default(l, 2, True)
    d0, d1 = ops.moe_dispatch.default(t0, i0, 8), ops.moe_dispatch.default(t, i1, 8)

    def experts(rows, indices, offsets, slots):
        return ops.moe_experts.default(rows, indices, offsets, slots, gate, up, down, "auto")

    yield ("moe_dispatch [·, 64], 8 experts, top 2 f32", lambda: ops.moe_dispatch.default(t0, i0, 8),
           lambda: ops.moe_dispatch.default(t, i1, 8), None)
    yield ("moe_experts [2·, 64], 8 experts f32", lambda: experts(d0[0], i0, d0[1], d0[2]),
           lambda: experts(d1[0], i1, d1[1], d1[2]), None)
    yield ("moe_combine [2·, 64] → [·, 64] f32", lambda: ops.moe_combine.default(d0[0], i0, w0, d0[1], d0[2]),
           lambda: ops.moe_combine.default(d1[0], i1, w1, d1[1], d1[2]), None)


def empty_custom_ops(device):
    """Two Python custom ops that only allocate their output: one plain, one with an autograd formula."""
    lib = torch.library.Library("rudnn_bench", "DEF")
    for name in ("plain", "autograd"):
        lib.define(f"{name}(Tensor a) -> Tensor")
        lib.impl(name, lambda a: torch.empty_like(a), "CPU")
        lib.impl(name, lambda a: torch.empty_like(a), "CUDA")
    torch.library.register_autograd("rudnn_bench::autograd", lambda ctx, grad: grad, lib=lib)
    x = torch.randn(1, 64, device=device)
    return lib, lambda: torch.ops.rudnn_bench.plain.default(x), lambda: torch.ops.rudnn_bench.autograd.default(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (rudnn host emulation device)"
    print(f"Host time per call on {name}, torch {torch.__version__}, median of 7 × {args.calls} calls (µs)\n")
    print("| op | torch.ops.rudnn, zero rows | torch.ops.rudnn, small | torch native, small |")
    print("|---|---:|---:|---:|")

    def cell(fn):
        return "—" if fn is None else f"{per_call_us(fn, args.calls, device):.1f}"

    for label, zero, small, native in cases(device):
        print(f"| {label} | {cell(zero)} | {cell(small)} | {cell(native)} |")
    _lib, plain, autograd = empty_custom_ops(device)
    x = torch.randn(1, 64, device=device)
    print(f"\nPeers (µs): torch.empty_like {cell(lambda: torch.empty_like(x))}, an empty Python custom op "
          f"{cell(plain)}, the same with a Python register_autograd {cell(autograd)}")


if __name__ == "__main__":
    main()
