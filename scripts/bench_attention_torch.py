#!/usr/bin/env python3
"""rudnn's attention against PyTorch SDPA on the same GPU (issue 5 item 5; run by scripts/gpu-check).

Runs `rudnn-bench attention` (per strategy: flash_mma = FlashBlackboxAccelerated, flash_unit,
fallback, autotune), then torch.nn.functional.scaled_dot_product_attention at the same shapes with
the flash and the cuDNN backends (torch.nn.attention.sdpa_kernel; grouped-query heads through
enable_gqa=True where the backend takes it, else K and V repeated per query head before timing).
Shapes: B·T tokens (B = tokens / T), Tq = Tk = T, Hq query heads, Hkv ∈ --kv-heads, D ∈ --head-dim,
causal and not, bf16. Prints a markdown table of TFLOP/s (4·B·Hq·T·T·D flops, halved for causal)
with each rudnn strategy's ratio to the best torch backend (> 1: rudnn is faster), and the Target of
issue 5 marked met / not met. Fails soft (one line, exit 0) without PyTorch or CUDA.
"""
import argparse
import os
import sys

from bench_torch_util import default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_attention_torch"
STRATEGIES = ("flash_mma", "flash_unit", "fallback", "autotune")
TARGET = dict(head_dim=128, seq=8192, causal=0)


def sdpa_backends(torch):
    """[(name, context factory)] for the flash and cuDNN backends, and notes on what is missing."""
    notes = []
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        sdpa_kernel = None
    if sdpa_kernel is not None:
        out = [("flash", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION))]
        if hasattr(SDPBackend, "CUDNN_ATTENTION"):
            out.append(("cudnn", lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)))
        else:
            notes.append(f"torch {torch.__version__} has no SDPBackend.CUDNN_ATTENTION: cuDNN not measured")
        return out, notes
    # Older torch: the flag context of torch.backends.cuda (flash only).
    ctx = torch.backends.cuda.sdp_kernel
    notes.append(f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel: flash through "
                 "torch.backends.cuda.sdp_kernel, cuDNN not measured")
    return [("flash", lambda: ctx(enable_flash=True, enable_math=False, enable_mem_efficient=False))], notes


class TorchShape:
    """Inputs of one shape and a timed SDPA call per backend (GQA natively where possible)."""

    def __init__(self, torch, b, hq, hkv, t, d, causal):
        self.torch, self.causal, self.group = torch, bool(causal), hq // hkv
        self.q = torch.randn(b, hq, t, d, device="cuda", dtype=torch.bfloat16)
        self.k = torch.randn(b, hkv, t, d, device="cuda", dtype=torch.bfloat16)
        self.v = torch.randn(b, hkv, t, d, device="cuda", dtype=torch.bfloat16)
        self.k_rep = self.v_rep = None

    def call(self, gqa):
        f = self.torch.nn.functional
        if self.group == 1:
            return lambda: f.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=self.causal)
        if gqa:
            return lambda: f.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=self.causal,
                                                          enable_gqa=True)
        if self.k_rep is None:
            self.k_rep = self.k.repeat_interleave(self.group, dim=1)
            self.v_rep = self.v.repeat_interleave(self.group, dim=1)
        return lambda: f.scaled_dot_product_attention(self.q, self.k_rep, self.v_rep, is_causal=self.causal)

    def time_us(self, ctx, iters, runs):
        """(µs, how GQA was served, error): enable_gqa first, then repeated K/V."""
        errors = []
        for gqa in ([True, False] if self.group > 1 else [False]):
            try:
                with ctx():
                    fn = self.call(gqa)
                    fn()
                    self.torch.cuda.synchronize()
                    ms = time_ms(self.torch, fn, iters=iters, runs=runs, warmup=1)
                return 1000 * ms, ("enable_gqa" if gqa else "repeat" if self.group > 1 else ""), None
            except (RuntimeError, TypeError) as e:  # no kernel for this input, or no enable_gqa argument
                first = (str(e).splitlines() or [""])[0][:160]
                errors.append(f"{'enable_gqa' if gqa else 'repeat'}: {type(e).__name__}: {first}")
        return None, None, "; ".join(errors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--tokens", type=int, default=16384, help="B·T")
    ap.add_argument("--seq", type=int, action="append", help="T (repeatable; default 512 … 16384)")
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, action="append", help="repeatable (default 32, 8)")
    ap.add_argument("--head-dim", type=int, action="append", help="repeatable (default 64, 128)")
    ap.add_argument("--causal", type=int, choices=(0, 1), action="append", help="repeatable (default 0, 1)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--budget-ms", type=int, default=300, help="rudnn-bench's cap per measurement")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for rudnn-bench")
    ap.add_argument("--tag", default="", help="names this run in the title and the CSV (e.g. wgmma, for a run "
                    "under RUDNN_WGMMA=1, whose flash_mma strategy takes the warpgroup-MMA kernel for D = 64, 128, 256)")
    args = ap.parse_args()
    seqs = args.seq or [512, 1024, 2048, 4096, 8192, 16384]
    kv_heads = args.kv_heads or [32, 8]
    head_dims = args.head_dim or [64, 128]
    causals = args.causal or [0, 1]
    strategies = [s for s in args.strategies.split(",") if s]
    Hq, N = args.q_heads, args.tokens

    tag = f" ({args.tag})" if args.tag else ""
    print(f"### Attention (issue 5): rudnn vs torch SDPA, bf16, B·T = {N} tokens, Hq = {Hq}{tag}\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    bad = [t for t in seqs if N % t] + [h for h in kv_heads if Hq % h]
    if bad:
        print(f"{NAME}: every --seq must divide --tokens and every --kv-heads --q-heads (got {bad}); nothing run")
        return 0
    # rudnn first, while this process holds no GPU memory.
    cmd = [args.rudnn_bench, "attention", "--device", "cuda:0", "--tokens", str(N), "--q-heads", str(Hq),
           "--dtype", "bf16", "--iters", str(args.iters), "--runs", str(args.runs), "--budget-ms", str(args.budget_ms),
           "--strategies", ",".join(strategies)]
    for flag, values in (("--seq", seqs), ("--kv-heads", kv_heads), ("--head-dim", head_dims), ("--causal", causals)):
        for v in values:
            cmd += [flag, str(v)]
    rows, error = run_rudnn_bench(cmd, os.path.join(args.log, "rudnn-bench-attention" + (f"-{args.tag}" if args.tag else "") + ".csv"), args.timeout)
    rudnn = {(r["strategy"], int(r["kv_heads"]), int(r["seq"]), int(r["head_dim"]), int(r["causal"])):
             float(r["median_us"]) for r in rows}

    backends, notes = sdpa_backends(torch)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; rudnn: host wall clock per call over "
          "warm runs; torch: CUDA events. Cells: TFLOP/s; rudnn cells add (× the best torch backend: "
          "> 1 = rudnn faster)\n")
    names = [n for n, _ in backends]
    print("| D | T | B | Hkv | causal | " + " | ".join(f"rudnn {s}" for s in strategies) + " | " +
          " | ".join(f"torch {n}" for n in names) + " |")
    print("|---" * (5 + len(strategies) + len(names)) + "|")
    best_torch = {}  # (hkv, t, d, causal) → µs
    gqa_ways = set()
    for d in head_dims:
        for t in seqs:
            b = N // t
            for hkv in kv_heads:
                for causal in causals:
                    key = (hkv, t, d, causal)
                    flops = 4.0 * b * Hq * t * t * d * (0.5 if causal else 1.0)
                    tf = lambda us: flops / (us * 1e-6) / 1e12  # noqa: E731
                    torch_us = {}
                    try:
                        shape = TorchShape(torch, b, Hq, hkv, t, d, causal)
                        for name, ctx in backends:
                            us, how, err = shape.time_us(ctx, args.iters, args.runs)
                            if us is None:
                                notes.append(f"torch {name} at D={d} T={t} Hkv={hkv} causal={causal}: {err}")
                            else:
                                torch_us[name] = us
                                if how:
                                    gqa_ways.add(f"{name}: {how}")
                        del shape
                    except Exception as e:  # noqa: BLE001 (report, keep rudnn's numbers)
                        notes.append(f"torch at D={d} T={t} Hkv={hkv} causal={causal}: {type(e).__name__}: "
                                     f"{str(e)[:200]}")
                    torch.cuda.empty_cache()
                    best = min(torch_us.values()) if torch_us else None
                    if best is not None:
                        best_torch[key] = best
                    cells = []
                    for s in strategies:
                        us = rudnn.get((s,) + key)
                        if us is None:
                            cells.append("-")
                        elif best is None:
                            cells.append(f"{tf(us):.1f}")
                        else:
                            cells.append(f"{tf(us):.1f} ({best / us:.2f}×)")
                    cells += [f"{tf(torch_us[n]):.1f}" if n in torch_us else "failed" for n in names]
                    print(f"| {d} | {t} | {b} | {hkv} | {causal} | " + " | ".join(cells) + " |")
                    sys.stdout.flush()

    print("\nTargets (issue 5):")
    shapes = [(hkv, TARGET["seq"], TARGET["head_dim"], TARGET["causal"]) for hkv in kv_heads]
    ratios = [(k[0], best_torch[k] / rudnn[("flash_mma",) + k]) for k in shapes
              if k in best_torch and ("flash_mma",) + k in rudnn]
    measured = ratios if len(ratios) == len(shapes) and ratios else None
    print(target_line("FlashBlackboxAccelerated ≥ 0.8× torch SDPA's best backend at bf16, D = 128, length 8k, "
                      "non-causal", measured and ", ".join(f"Hkv={h}: {r:.2f}×" for h, r in measured),
                      measured and all(r >= 0.8 for _, r in measured)))
    if gqa_ways:
        notes.append("GQA in torch: " + ", ".join(sorted(gqa_ways)))
    for n in notes:
        print(f"note: {n}")
    if error:
        print(f"\nrudnn-bench attention failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
