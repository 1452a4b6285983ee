#!/usr/bin/env python3
"""rudnn's MoE forward against PyTorch on the same GPU (issue 4 item 8; run by scripts/gpu-check).

Runs `rudnn-bench moe` (route, dispatch, experts Scalar/TensorCore, combine, forward), then a PyTorch
reference at the same shapes: softmax + topk routing (renormalized), dispatch by a stable argsort of
the expert indices + index_select, SwiGLU experts by torch._grouped_mm (gate and up as one [E, 2I, H]
weight; per-expert matmuls where grouped_mm is missing or disagrees), combine by index_add in FP32.
Also measures the dense bf16 GEMM rate (torch.matmul, 8192³) for the "% of dense" column. Prints a
markdown table (speed = torch time / rudnn time: > 1 means rudnn is faster) and the Targets of
issue 4 marked met / not met. Fails soft (one line, exit 0) without PyTorch or CUDA.
"""
import argparse
import os
import sys

from bench_torch_util import default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_moe_torch"


def dense_bf16_tflops(torch, n=8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(torch, lambda: a @ b, iters=10, runs=5, warmup=3)
    del a, b
    return 2 * n**3 / (ms * 1e-3) / 1e12


class TorchMoe:
    """The reference MoE layer for E experts of hidden H, intermediate I, top-k K, in bf16."""

    def __init__(self, torch, experts, hidden, inter, top_k, dtype):
        self.torch, self.E, self.H, self.I, self.k, self.dtype = torch, experts, hidden, inter, top_k, dtype
        a, b = 1.5 / hidden**0.5, 1.5 / inter**0.5
        # nn.Linear layout per expert ([out, in]); grouped_mm takes the transposed views.
        self.w_gate_up = torch.empty(experts, 2 * inter, hidden, device="cuda", dtype=dtype).uniform_(-a, a)
        self.w_down = torch.empty(experts, hidden, inter, device="cuda", dtype=dtype).uniform_(-b, b)
        self.gmm = getattr(torch, "_grouped_mm", None) or getattr(torch.nn.functional, "grouped_mm", None)
        self.use_grouped = self.gmm is not None
        self.counts = None  # per-expert row counts (host list) for the per-expert fallback

    def route(self, logits):
        t = self.torch
        p = t.softmax(logits.float(), dim=-1)
        w, idx = t.topk(p, self.k, dim=-1)
        w = w / w.sum(dim=-1, keepdim=True)
        return w.to(self.dtype), idx

    def dispatch(self, x, idx):
        t = self.torch
        flat = idx.reshape(-1)
        order = t.argsort(flat, stable=True)
        tok = t.div(order, self.k, rounding_mode="floor")
        rows = x.index_select(0, tok)
        offs = t.cumsum(t.bincount(flat, minlength=self.E), 0).to(t.int32)
        return rows, order, tok, offs

    def experts_grouped(self, rows, offs):
        f = self.torch.nn.functional
        gu = self.gmm(rows, self.w_gate_up.transpose(1, 2), offs=offs)
        act = f.silu(gu[:, : self.I]) * gu[:, self.I :]
        return self.gmm(act, self.w_down.transpose(1, 2), offs=offs)

    def experts_loop(self, rows, offs):
        f = self.torch.nn.functional
        if self.counts is None:
            ends = offs.tolist()
            self.counts = [e - s for s, e in zip([0] + ends[:-1], ends)]
        outs, start = [], 0
        for e, n in enumerate(self.counts):
            if n:
                gu = rows[start : start + n] @ self.w_gate_up[e].t()
                outs.append((f.silu(gu[:, : self.I]) * gu[:, self.I :]) @ self.w_down[e].t())
            start += n
        return self.torch.cat(outs)

    def experts(self, rows, offs):
        return self.experts_grouped(rows, offs) if self.use_grouped else self.experts_loop(rows, offs)

    def combine(self, y, order, tok, w, tokens):
        t = self.torch
        wf = w.reshape(-1)[order].float()
        out = t.zeros(tokens, self.H, device="cuda", dtype=t.float32)
        out.index_add_(0, tok, y.float() * wf[:, None])
        return out.to(self.dtype)

    def forward(self, x, logits):
        w, idx = self.route(logits)
        rows, order, tok, offs = self.dispatch(x, idx)
        return self.combine(self.experts(rows, offs), order, tok, w, x.shape[0])

    def check_grouped(self, rows, offs):
        """grouped_mm against per-expert matmuls once per shape; falls back on an error or a mismatch."""
        if not self.use_grouped:
            return "torch has no grouped_mm: per-expert matmuls"
        self.counts = None
        try:
            got = self.experts_grouped(rows, offs).float()
        except Exception as e:  # noqa: BLE001 (any failure: fall back, say why)
            self.use_grouped = False
            return f"torch._grouped_mm failed ({type(e).__name__}: {str(e)[:120]}): per-expert matmuls"
        want = self.experts_loop(rows, offs).float()
        err = ((got - want).norm() / want.norm()).item()
        if not err < 2e-2:
            self.use_grouped = False
            return f"torch._grouped_mm disagrees with per-expert matmuls (rel L2 {err:.2e}): per-expert matmuls"
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--tokens", type=int, action="append")
    ap.add_argument("--experts", type=int, action="append")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--inter", type=int, default=1408)
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--budget-ms", type=int, default=1500, help="rudnn-bench's cap per slow step")
    ap.add_argument("--strategies", default="scalar,tensorcore")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for rudnn-bench")
    ap.add_argument("--dense-size", type=int, default=8192, help="N of the dense N×N×N bf16 GEMM rate")
    ap.add_argument("--tag", default="", help="names this run in the title and the CSV (e.g. wgmma, for a run "
                    "under RUDNN_WGMMA=1, whose tensor-core experts take the warpgroup-MMA tiles)")
    args = ap.parse_args()
    tokens = args.tokens or [16, 512, 4096]
    experts = args.experts or [64, 256]
    H, I, K = args.hidden, args.inter, args.top_k

    tag = f" ({args.tag})" if args.tag else ""
    print(f"### MoE forward (issue 4): rudnn vs PyTorch, bf16{tag}\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    # rudnn first, while this process holds no GPU memory.
    cmd = [args.rudnn_bench, "moe", "--device", "cuda:0", "--hidden", str(H), "--inter", str(I), "--top-k", str(K),
           "--dtype", "bf16", "--iters", str(args.iters), "--runs", str(args.runs), "--budget-ms",
           str(args.budget_ms), "--strategies", args.strategies]
    for t in tokens:
        cmd += ["--tokens", str(t)]
    for e in experts:
        cmd += ["--experts", str(e)]
    csv_name = "rudnn-bench-moe" + (f"-{args.tag}" if args.tag else "") + ".csv"
    rows, error = run_rudnn_bench(cmd, os.path.join(args.log, csv_name), args.timeout)
    rudnn = {(r["step"], int(r["tokens"]), int(r["experts"]), r["strategy"]): r for r in rows}

    dense = dense_bf16_tflops(torch, args.dense_size)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; dense bf16 GEMM ({args.dense_size}³): "
          f"{dense:.0f} TFLOP/s; H = {H}, I = {I}, top-k = {K}\n")
    print("| step | T | E | strategy | rudnn µs | torch µs | speed rudnn/torch | rudnn TFLOP/s | % dense |")
    print("|---|---|---|---|---|---|---|---|---|")
    notes = []
    torch_us = {}  # (step, T, E) → µs
    flops = {t: 6.0 * t * K * H * I for t in tokens}
    for E in experts:
        if K > E:
            notes.append(f"E={E}: top-k {K} > E, skipped")
            continue
        try:
            moe = TorchMoe(torch, E, H, I, K, torch.bfloat16)
        except Exception as e:  # noqa: BLE001 (report, keep rudnn's numbers)
            moe = None
            notes.append(f"E={E}: the torch reference failed: {type(e).__name__}: {str(e)[:200]}")
        for T in tokens:
            steps = ("route", "dispatch", "experts", "combine", "forward")
            try:
                if moe is None:
                    raise RuntimeError("no torch reference")
                x = torch.empty(T, H, device="cuda", dtype=torch.bfloat16).uniform_(-1, 1)
                logits = torch.randn(T, E, device="cuda", dtype=torch.bfloat16)
                w, idx = moe.route(logits)
                rows_, order, tok, offs = moe.dispatch(x, idx)
                note = moe.check_grouped(rows_, offs)
                if note:
                    notes.append(f"E={E} T={T}: {note}")
                y = moe.experts(rows_, offs)
                fns = {
                    "route": lambda: moe.route(logits),
                    "dispatch": lambda: moe.dispatch(x, idx),
                    "experts": lambda: moe.experts(rows_, offs),
                    "combine": lambda: moe.combine(y, order, tok, w, T),
                    "forward": lambda: moe.forward(x, logits),
                }
                for step, fn in fns.items():
                    torch_us[(step, T, E)] = 1000 * time_ms(torch, fn, iters=args.iters, runs=args.runs)
                del x, logits, w, idx, rows_, order, tok, offs, y, fns
            except Exception as e:  # noqa: BLE001
                if moe is not None:
                    notes.append(f"E={E} T={T}: the torch reference failed: {type(e).__name__}: {str(e)[:200]}")
            for step in steps:
                strategies = ["scalar", "tensorcore"] if step in ("experts", "forward") else [""]
                for s in strategies:
                    if s and s not in args.strategies:
                        continue
                    r = rudnn.get((step, T, E, s))
                    tu = torch_us.get((step, T, E))
                    tus = f"{tu:.1f}" if tu is not None else "error"
                    if r is None:
                        print(f"| {step} | {T} | {E} | {s or '-'} | failed | {tus} | - | - | - |")
                        continue
                    ru = float(r["median_us"])
                    tf = f"{flops[T] / (ru * 1e-6) / 1e12:.1f}" if s else "-"
                    pct = f"{100 * flops[T] / (ru * 1e-6) / 1e12 / dense:.0f}%" if s else "-"
                    ratio = f"{tu / ru:.2f}x" if tu is not None else "-"
                    print(f"| {step} | {T} | {E} | {s or '-'} | {ru:.1f} | {tus} | {ratio} | {tf} | {pct} |")
            sys.stdout.flush()
        del moe
        torch.cuda.empty_cache()
    sys.stdout.flush()

    # Targets of issue 4 (H200), at T = 4096 over every E measured.
    print("\nTargets (issue 4):")
    big = 4096

    def per_e(fn):
        vals = []
        for E in experts:
            v = fn(E)
            if v is None:
                return None
            vals.append((E, v))
        return vals or None

    def rus(step, E, s=""):
        r = rudnn.get((step, big, E, s))
        return float(r["median_us"]) if r else None

    speed = per_e(lambda E: None if rus("experts", E, "tensorcore") is None or ("experts", big, E) not in torch_us
                  else torch_us[("experts", big, E)] / rus("experts", E, "tensorcore"))
    grouped = all("per-expert" not in n for n in notes)
    print(target_line(f"TensorCore experts ≥ 1.0× torch {'grouped GEMM' if grouped else 'experts (see notes)'} at "
                      f"T = {big}", speed and ", ".join(f"E={E}: {v:.2f}×" for E, v in speed),
                      speed and all(v >= 1.0 for _, v in speed)))
    rate = per_e(lambda E: None if rus("experts", E, "tensorcore") is None
                 else 100 * flops[big] / (rus("experts", E, "tensorcore") * 1e-6) / 1e12 / dense)
    print(target_line(f"TensorCore experts ≥ 60% of the dense bf16 GEMM rate ({dense:.0f} TFLOP/s) at T = {big}",
                      rate and ", ".join(f"E={E}: {v:.0f}%" for E, v in rate), rate and all(v >= 60 for _, v in rate)))

    def overhead(E):
        parts = [rus(s, E) for s in ("route", "dispatch", "combine")]
        fwd = rus("forward", E, "tensorcore")
        return None if None in parts or fwd is None else 100 * sum(parts) / fwd

    share = per_e(overhead)
    print(target_line(f"routing + dispatch + combine ≤ 15% of the forward (TensorCore) at T = {big}",
                      share and ", ".join(f"E={E}: {v:.1f}%" for E, v in share), share and all(v <= 15 for _, v in share)))
    for n in notes:
        print(f"note: {n}")
    if error:
        print(f"\nrudnn-bench moe failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
