#!/usr/bin/env python3
"""rudnn's normalization ops against PyTorch on the same GPU (run by scripts/gpu-check).

Measures the device copy bandwidth first (a large device-to-device copy, bytes read + written), then
for each shape and dtype times torch's layer_norm / rms_norm / softmax with CUDA events, runs
rudnn-bench for the same configs, and prints a markdown table: GB/s, % of copy bandwidth, ratio.
"""
import argparse
import csv
import io
import os
import subprocess

import torch

SHAPES = [(16384, 4096), (4096, 8192)]
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}


def time_ms(fn, iters=50, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(15):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iters)
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth():
    n = 2 * 1024**3  # 2 GiB
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), iters=10, warmup=3)
    return 2 * n / (ms * 1e-3) / 1e9


def torch_ops(rows, h, dtype):
    x = torch.randn(rows, h, device="cuda", dtype=dtype)
    g = torch.randn(h, device="cuda", dtype=torch.float32) * 0.1 + 1
    b = torch.randn(h, device="cuda", dtype=torch.float32)
    gx, bx = g.to(dtype), b.to(dtype)  # torch's fused kernels want matching dtypes
    ops = {
        "layer_norm": lambda: torch.nn.functional.layer_norm(x, (h,), gx, bx, 1e-5),
        "rms_norm": lambda: torch.nn.functional.rms_norm(x, (h,), gx, 1e-5),
        "softmax": lambda: torch.softmax(x, dim=-1),
    }
    return {name: time_ms(fn) for name, fn in ops.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=".")
    args = ap.parse_args()
    bw = copy_bandwidth()
    cmd = [args.rudnn_bench, "norm", "--device", "cuda:0", "--iters", "50"]
    for r, h in SHAPES:
        cmd += ["--shape", f"{r}x{h}"]
    for d in DTYPES:
        cmd += ["--dtype", d]
    out = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(args.log, "rudnn-bench.csv"), "w") as f:
        f.write(out.stdout + out.stderr)
    rudnn = {}
    if out.returncode == 0:
        for row in csv.DictReader(io.StringIO(out.stdout)):
            rudnn[(row["op"], row["shape"], row["dtype"])] = float(row["median_us"]) / 1000
    print(f"device copy bandwidth: {bw:.0f} GB/s ({torch.cuda.get_device_name()})\n")
    print("| op | shape | dtype | rudnn GB/s | % copy BW | torch GB/s | rudnn/torch speed |")
    print("|---|---|---|---|---|---|---|")
    for r, h in SHAPES:
        for dname, dtype in DTYPES.items():
            t = torch_ops(r, h, dtype)
            nbytes = 2 * r * h * torch.tensor([], dtype=dtype).element_size()
            for op, tms in t.items():
                key = (op, f"{r}x{h}", dname)
                tgbs = nbytes / (tms * 1e-3) / 1e9
                if key in rudnn:
                    rgbs = nbytes / (rudnn[key] * 1e-3) / 1e9
                    print(f"| {op} | {r}x{h} | {dname} | {rgbs:.0f} | {100 * rgbs / bw:.0f}% | {tgbs:.0f} | "
                          f"{tms / rudnn[key]:.2f}x |")
                else:
                    print(f"| {op} | {r}x{h} | {dname} | failed | - | {tgbs:.0f} | - |")
    if out.returncode != 0:
        print("\nrudnn-bench failed:\n" + out.stderr[-2000:])


if __name__ == "__main__":
    main()
