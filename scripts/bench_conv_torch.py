#!/usr/bin/env python3
"""rudnn's convolution against cuDNN through PyTorch on the same GPU (issue 12 item 6; run by scripts/gpu-check).

Runs `rudnn-bench conv` (ImplicitGemm; the depthwise layer Direct), then the same layers with
torch.nn.functional.conv2d/conv3d on channels_last bf16 tensors with torch.backends.cudnn.benchmark
= True (forward), and torch.ops.aten.convolution_backward for the data and weight gradients (what
autograd calls: cuDNN's dgrad and wgrad). Prints a markdown table (speed = torch time / rudnn time:
> 1 means rudnn is faster) and the Targets of issue 12 marked met / not met. Fails soft (one line,
exit 0) without PyTorch or CUDA.
"""
import argparse
import os
import sys

from bench_torch_util import copy_bandwidth, default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_conv_torch"


def torch_call(torch, row):
    """The torch callable of one CSV row (same layer, direction, layout and dtype)."""
    n, d, h, w, c, o, k, s, g = (int(row[x]) for x in ("n", "d", "h", "w", "c", "o", "k", "stride", "groups"))
    three_d = row["set"] == "video"
    dt = torch.bfloat16 if row["dtype"] == "bf16" else torch.float16 if row["dtype"] == "f16" else torch.float32
    fmt = torch.channels_last_3d if three_d else torch.channels_last
    xs = (n, c, d, h, w) if three_d else (n, c, h, w)
    ws = (o, c // g, k, k, k) if three_d else (o, c // g, k, k)
    x = torch.empty(xs, device="cuda", dtype=dt).uniform_(-1, 1).to(memory_format=fmt)
    wt = torch.empty(ws, device="cuda", dtype=dt).uniform_(-0.1, 0.1).to(memory_format=fmt)
    conv = torch.nn.functional.conv3d if three_d else torch.nn.functional.conv2d
    stride, pad = [s] * (3 if three_d else 2), [k // 2] * (3 if three_d else 2)
    y = conv(x, wt, None, stride, pad, 1, g)
    dy = torch.empty_like(y).uniform_(-1, 1)
    direction = row["direction"]
    if direction == "fprop":
        return lambda: conv(x, wt, None, stride, pad, 1, g)
    mask = [direction == "dgrad", direction == "wgrad", False]
    return lambda: torch.ops.aten.convolution_backward(dy, x, wt, None, stride, pad, [1] * len(stride), False,
                                                        [0] * len(stride), g, mask)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--sets", default="resnet50,unet,depthwise,video,stem")
    ap.add_argument("--directions", default="fprop,dgrad,wgrad")
    ap.add_argument("--strategy", default="implicit_gemm", help="rudnn-bench conv --strategy (autotune: set "
                    "RUDNN_AUTOTUNE=full to measure on a cold cache)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--timeout", type=int, default=240, help="seconds for rudnn-bench")
    args = ap.parse_args()

    print(f"### Convolution (issue 12): rudnn ({args.strategy}) vs cuDNN (PyTorch, channels_last, cudnn.benchmark), "
          "bf16\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    torch.backends.cudnn.benchmark = True
    cmd = [args.rudnn_bench, "conv", "--device", "cuda:0", "--sets", args.sets, "--directions", args.directions,
           "--strategy", args.strategy, "--dtype", "bf16", "--iters", str(args.iters), "--runs", str(args.runs)]
    csv = "rudnn-bench-conv.csv" if args.strategy == "implicit_gemm" else f"rudnn-bench-conv-{args.strategy}.csv"
    rows, error = run_rudnn_bench(cmd, os.path.join(args.log, csv), args.timeout)
    bw = copy_bandwidth(torch, 1024**3)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; cuDNN {torch.backends.cudnn.version()}; "
          f"device copy bandwidth: {bw:.0f} GB/s\n")
    print("| set | layer | dir | N | algorithm | rudnn µs | cuDNN µs | speed rudnn/cuDNN | rudnn TFLOP/s | rudnn GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, times, dw_gbs = {}, {}, None
    for r in rows:
        ru = float(r["median_us"])
        try:
            tu = 1000 * time_ms(torch, torch_call(torch, r), iters=args.iters, runs=args.runs)
        except Exception as e:  # noqa: BLE001 (report, keep rudnn's number)
            tu = None
            print(f"note: torch {r['layer']} {r['direction']} failed: {type(e).__name__}: {str(e)[:160]}")
        torch.cuda.empty_cache()
        ratio = None if tu is None else tu / ru
        ratios.setdefault((r["set"], r["direction"], r["k"]), []).append(ratio)
        times[(r["set"], r["layer"], r["direction"])] = ru
        if r["set"] == "depthwise" and r["direction"] == "fprop":
            dw_gbs = float(r["gb_per_s"])
        print(f"| {r['set']} | {r['layer']} | {r['direction']} | {r['n']} | {r['algorithm']} | {ru:.1f} | "
              f"{'error' if tu is None else f'{tu:.1f}'} | {'-' if ratio is None else f'{ratio:.2f}x'} | "
              f"{float(r['tflops']):.1f} | {float(r['gb_per_s']):.0f} |")

    def worst(set_, direction, k=None):
        vals = [v for (s, d, kk), vs in ratios.items() if s == set_ and d == direction and (k is None or kk == k)
                for v in vs]
        return None if not vals or None in vals else min(vals)

    print("\nTargets (issue 12, H200):")
    x = worst("resnet50", "fprop", "3")
    print(target_line("ImplicitGemm bf16 fprop ≥ 0.9× cuDNN on the ResNet-50 3×3 layers (worst layer)",
                      x and f"{x:.2f}×", x is not None and x >= 0.9))
    x = worst("unet", "fprop")
    print(target_line("... ≥ 1.0× on the UNet layers (worst layer)", x and f"{x:.2f}×", x is not None and x >= 1.0))
    for d in ("dgrad", "wgrad"):
        x = min([v for v in (worst("resnet50", d), worst("unet", d)) if v is not None], default=None)
        print(target_line(f"{d} ≥ 0.8× cuDNN (worst ResNet-50/UNet layer)", x and f"{x:.2f}×", x is not None and
                          x >= 0.8))
    vid = {d: t for (s, _, d), t in times.items() if s == "video"}
    back = vid.get("dgrad", 0) + vid.get("wgrad", 0) if "dgrad" in vid and "wgrad" in vid else None
    x = back and vid.get("fprop") and back / vid["fprop"]
    print(target_line("3-D backward (dgrad + wgrad) ≤ 2× its forward time", x and f"{x:.2f}×", x and x <= 2))
    x = dw_gbs and 100 * dw_gbs / bw
    print(target_line(f"depthwise 3×3 ≥ 70% of the measured copy bandwidth ({bw:.0f} GB/s)", x and f"{x:.0f}%",
                      x and x >= 70))
    if error:
        print(f"\nrudnn-bench conv failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
