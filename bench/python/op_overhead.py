#!/usr/bin/env python3
"""Host time per call of the PyTorch adapter (docs/pytorch.md; issue 17's target: ≤ 10 µs of overhead).

For small shapes, times each path on one device with the same tensors:
  torch.ops.rudnn.X    the custom op, as a model calls it (dispatcher, autograd wrapper, argument
                       checks, output allocation from torch's allocator, the binding, the library);
  binding only         rudnn._C.X with its arguments made once: the nanobind crossing and the
                       library call (on the host emulation device that includes running the kernel);
  adapter alone        torch.ops.rudnn.X with the binding replaced by a no-op: what the adapter adds
                       to a library call, free of the kernel's time (the issue's overhead);
  torch native         the ATen op that does the same (the peer: what a built-in op costs);
  empty custom op      a Python custom op that only allocates its output, with and without an
                       autograd registration (torch's own floor for this kind of op).
Prints a markdown table of medians over repeats.

    python bench/python/op_overhead.py [--device cpu|cuda] [--calls 2000]
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import rudnn
from rudnn import _C
from rudnn._bridge import arg, place


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
    """(label, module whose _C the op calls, binding name, the op, the binding alone, the native peer)."""
    x, gamma = torch.randn(1, 64, device=device), torch.ones(64, device=device)
    out = torch.empty_like(x)
    where = place("normalization", input=x, gamma=gamma)
    yield ("rms_norm [1, 64] f32", rudnn.normalization, "rms_norm",
           lambda: torch.ops.rudnn.rms_norm.default(x, gamma, 1e-6),
           lambda: _C.rms_norm(where, arg(x), arg(gamma), 1e-6, arg(out)),
           lambda: F.rms_norm(x, (64,), gamma, 1e-6))
    q, k, v = (torch.randn(1, 2, 1, 64, device=device) for _ in range(3))
    o = torch.empty_like(q)
    where = place("attention", query=q, key=k, value=v)
    yield ("attention [1, 2, 1, 64] f32 flash_unit", rudnn.attention, "attention",
           lambda: torch.ops.rudnn.attention.default(q, k, v, None, None, None, False, "flash_unit"),
           lambda: _C.attention(where, arg(q), arg(k), arg(v), None, None, None, False, 1, arg(o)),
           lambda: F.scaled_dot_product_attention(q, k, v))


class _NoLibrary:
    """rudnn._C with one binding replaced by a no-op."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return (lambda *args: None) if attribute == self._name else getattr(_C, attribute)


def adapter_alone(module, name, op, calls, device):
    module._C = _NoLibrary(name)
    try:
        return per_call_us(op, calls, device)
    finally:
        module._C = _C


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


_PEER = {}


def x_peer(device):
    return _PEER.setdefault(device, torch.randn(1, 64, device=device))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (rudnn host emulation device)"
    print(f"Host time per call on {name}, median of 7 × {args.calls} calls (µs)\n")
    print("| op | torch.ops.rudnn | binding only | adapter alone | torch native |")
    print("|---|---:|---:|---:|---:|")
    for label, module, name, op, binding, native in cases(device):
        t_op, t_binding, t_native = (per_call_us(f, args.calls, device) for f in (op, binding, native))
        t_adapter = adapter_alone(module, name, op, args.calls, device)
        print(f"| {label} | {t_op:.1f} | {t_binding:.1f} | {t_adapter:.1f} | {t_native:.1f} |")
    _lib, plain, autograd = empty_custom_ops(device)
    print(f"\nPeers (µs): an empty Python custom op {per_call_us(plain, args.calls, device):.1f}, the same with "
          f"register_autograd {per_call_us(autograd, args.calls, device):.1f}, "
          f"torch.empty_like alone {per_call_us(lambda: torch.empty_like(x_peer(device)), args.calls, device):.1f}")


if __name__ == "__main__":
    main()
