#!/usr/bin/env python3
"""rudnn's MoE backward against PyTorch autograd on the same GPU (issue 14 item 7; run by scripts/gpu-check).

Runs `rudnn-bench moe-backward` (router, combine Serial/Plane, experts Scalar/TensorCore, dispatch and
the whole backward step, each row checked by rudnn-bench against FP64), or reads a CSV it printed
(--rudnn-csv), then times the backward of a reference MoE layer in PyTorch autograd at the same
shapes: router weights = softmax over all E in FP32, the top-k selection (not differentiated),
renormalized (rudnn's RouterTrainingPlan: Softmax, renormalize, scale 1); dispatch by a stable
argsort of the expert indices + index_select; SwiGLU experts by torch._grouped_mm (gate and up as one
[E, 2I, H] weight; per-expert torch.mm where grouped_mm is missing, has no backward or disagrees);
combine by index_add in FP32. Each part's backward is timed alone (torch.autograd.grad over a
retained graph of that part: no forward in the time, no .grad accumulation), and the whole step (the
gradients of x, logits and the expert weights). Also measures the dense bf16 GEMM rate (torch.matmul,
8192³) for the "% dense" column and the Targets. Prints a markdown table (speed = torch time / rudnn
time: > 1 means rudnn is faster), writes torch's rows as CSV in rudnn-bench's columns
($LOG/torch-moe-backward.csv), and prints the Targets of issue 14 marked met / not met. Fails soft
(one line, exit 0) without PyTorch or CUDA.

TFLOP/s counts 16·N·H·I (N = T·top_k) for both: rudnn's backward recomputes the gate/up GEMMs (its cache
saves no activations); torch saves them and runs 12·N·H·I, so its TFLOP/s is an effective rate at
rudnn's count and the time ratio is the comparison.
"""
import argparse
import csv
import io
import os
import sys

from bench_torch_util import default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_moe_backward_torch"
COLUMNS = ["step", "tokens", "experts", "hidden", "inter", "top_k", "dtype", "strategy", "device", "median_us",
           "tflops", "overhead_pct", "max_err", "check"]
PARTS = ("router", "combine", "experts", "dispatch", "backward")


def dense_bf16_tflops(torch, n=8192):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = time_ms(torch, lambda: a @ b, iters=10, runs=5, warmup=3)
    return 2 * n**3 / (ms * 1e-3) / 1e12  # a and b are freed on return (main empties the cache)


class TorchMoeTraining:
    """The reference MoE layer (E experts, hidden H, intermediate I, top-k K, bf16) under autograd."""

    def __init__(self, torch, experts, hidden, inter, top_k, dtype):
        self.torch, self.E, self.H, self.I, self.k, self.dtype = torch, experts, hidden, inter, top_k, dtype
        a, b = 1.5 / hidden**0.5, 1.5 / inter**0.5
        # nn.Linear layout per expert ([out, in]); grouped_mm takes the transposed views.
        self.w_gate_up = torch.empty(experts, 2 * inter, hidden, device="cuda", dtype=dtype).uniform_(-a, a)
        self.w_down = torch.empty(experts, hidden, inter, device="cuda", dtype=dtype).uniform_(-b, b)
        self.w_gate_up.requires_grad_()
        self.w_down.requires_grad_()
        self.gmm = getattr(torch, "_grouped_mm", None) or getattr(torch.nn.functional, "grouped_mm", None)
        self.use_grouped = self.gmm is not None
        self.counts = None  # per-expert row counts (host list) for the per-expert path

    def select(self, logits):
        """The top-k experts of each token (no gradient: the choice is fixed)."""
        t = self.torch
        with t.no_grad():
            return t.topk(t.softmax(logits.float(), dim=-1), self.k, dim=-1).indices

    def weights(self, logits, idx):
        """F32 [T, K]: the selected softmax probabilities, renormalized (differentiable in logits)."""
        w = self.torch.softmax(logits.float(), dim=-1).gather(1, idx)
        return w / w.sum(dim=-1, keepdim=True)

    def dispatch_plan(self, idx):
        t = self.torch
        flat = idx.reshape(-1)
        order = t.argsort(flat, stable=True)
        tok = t.div(order, self.k, rounding_mode="floor")
        offs = t.cumsum(t.bincount(flat, minlength=self.E), 0).to(t.int32)
        ends = offs.tolist()
        self.counts = [e - s for s, e in zip([0] + ends[:-1], ends)]
        return order, tok, offs

    def experts_grouped(self, rows, offs):
        f = self.torch.nn.functional
        gu = self.gmm(rows, self.w_gate_up.transpose(1, 2), offs=offs)
        act = f.silu(gu[:, : self.I]) * gu[:, self.I :]
        return self.gmm(act, self.w_down.transpose(1, 2), offs=offs)

    def experts_loop(self, rows, offs):
        f = self.torch.nn.functional
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
        wf = w.reshape(-1)[order]
        out = t.zeros(tokens, self.H, device="cuda", dtype=t.float32).index_add(0, tok, y.float() * wf[:, None])
        return out.to(self.dtype)

    def check_grouped(self, rows, offs):
        """grouped_mm's forward and backward against per-expert matmuls once per shape; falls back on an
        error (e.g. no autograd formula) or a mismatch. Returns a note or None."""
        if not self.use_grouped:
            return "torch has no grouped_mm: per-expert matmuls"
        t = self.torch
        params = [self.w_gate_up, self.w_down]

        def grads(fn):
            r = rows.detach().requires_grad_()
            y = fn(r, offs)
            dy = t.ones_like(y)
            return [y.float()] + [g.float() for g in t.autograd.grad(y, [r] + params, dy)]

        try:
            got = grads(self.experts_grouped)
        except Exception as e:  # noqa: BLE001 (any failure: fall back, say why)
            self.use_grouped = False
            return f"torch._grouped_mm (with backward) failed ({type(e).__name__}: {str(e)[:120]}): per-expert matmuls"
        want = grads(self.experts_loop)
        for name, a, b in zip(("y", "drows", "dgate_up", "ddown"), got, want):
            err = ((a - b).norm() / b.norm().clamp_min(1e-30)).item()
            if not err < 2e-2:
                self.use_grouped = False
                return (f"torch._grouped_mm disagrees with per-expert matmuls on {name} (rel L2 {err:.2e}): "
                        "per-expert matmuls")
        return None


def torch_parts(torch, moe, T, iters, runs):
    """Median µs of each part's backward and of the whole step at T tokens."""
    t, H, E, dt = torch, moe.H, moe.E, moe.dtype
    grad = torch.autograd.grad
    x = t.empty(T, H, device="cuda", dtype=dt).uniform_(-1, 1).requires_grad_()
    logits = t.randn(T, E, device="cuda", dtype=dt).requires_grad_()
    gy = t.empty(T, H, device="cuda", dtype=dt).uniform_(-1, 1)
    idx = moe.select(logits)
    order, tok, offs = moe.dispatch_plan(idx)
    notes = []
    note = moe.check_grouped(x.detach().index_select(0, tok), offs)
    if note:
        notes.append(note)
    params = [moe.w_gate_up, moe.w_down]
    # The whole step's graph, and the gradients flowing into each part (the parts' own inputs).
    w = moe.weights(logits, idx)
    rows = x.index_select(0, tok)
    y = moe.experts(rows, offs)
    out = moe.combine(y, order, tok, w, T)
    dy, dw = grad(out, [y, w], gy, retain_graph=True)
    drows = grad(y, rows, dy, retain_graph=True)[0]
    # Each part alone over leaves, so its backward is all that runs.
    logits_l = logits.detach().requires_grad_()
    w_l = moe.weights(logits_l, idx)
    y_l, wl_l = y.detach().requires_grad_(), w.detach().requires_grad_()
    out_l = moe.combine(y_l, order, tok, wl_l, T)
    rows_l = rows.detach().requires_grad_()
    ye_l = moe.experts(rows_l, offs)
    x_l = x.detach().requires_grad_()
    rd_l = x_l.index_select(0, tok)
    fns = {
        "router": lambda: grad(w_l, logits_l, dw, retain_graph=True),
        "combine": lambda: grad(out_l, [y_l, wl_l], gy, retain_graph=True),
        "experts": lambda: grad(ye_l, [rows_l] + params, dy, retain_graph=True),
        "dispatch": lambda: grad(rd_l, x_l, drows, retain_graph=True),
        "backward": lambda: grad(out, [x, logits] + params, gy, retain_graph=True),
    }
    us = {}
    for step, fn in fns.items():
        us[step] = 1000 * time_ms(torch, fn, iters=iters, runs=runs)
    return us, notes  # the graphs are freed on return


def fnum(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", help="run this rudnn-bench (else --rudnn-csv, else torch alone)")
    ap.add_argument("--rudnn-csv", help="compare against the CSV of an earlier `rudnn-bench moe-backward` run")
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--tokens", type=int, action="append")
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--inter", type=int, default=1408)
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget-ms", type=int, default=1000, help="rudnn-bench's cap per slow step")
    ap.add_argument("--strategies", default="scalar,tensorcore")
    ap.add_argument("--timeout", type=int, default=240, help="seconds for rudnn-bench")
    ap.add_argument("--dense-size", type=int, default=8192, help="N of the dense N×N×N bf16 GEMM rate")
    ap.add_argument("--tag", default="", help="names this run in the title and the CSV (e.g. wgmma, for a run "
                    "under RUDNN_WGMMA=1, whose tensor-core backward is the warpgroup-MMA tile)")
    args = ap.parse_args()
    tokens = args.tokens or [512, 4096]
    E, H, I, K = args.experts, args.hidden, args.inter, args.top_k

    tag = f" ({args.tag})" if args.tag else ""
    print(f"### MoE backward (issue 14): rudnn vs PyTorch autograd, bf16{tag}\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    # rudnn first, while this process holds no GPU memory.
    rows, error = [], None
    if args.rudnn_bench:
        cmd = [args.rudnn_bench, "moe-backward", "--device", "cuda:0", "--experts", str(E), "--hidden", str(H),
               "--inter", str(I), "--top-k", str(K), "--dtype", "bf16", "--iters", str(args.iters), "--runs",
               str(args.runs), "--budget-ms", str(args.budget_ms), "--strategies", args.strategies]
        for t in tokens:
            cmd += ["--tokens", str(t)]
        csv_name = "rudnn-bench-moe-backward" + (f"-{args.tag}" if args.tag else "") + ".csv"
        rows, error = run_rudnn_bench(cmd, os.path.join(args.log, csv_name), args.timeout)
    elif args.rudnn_csv:
        with open(args.rudnn_csv) as f:
            rows = [r for r in csv.DictReader(f) if r.get("step")]
    rudnn = {(r["step"], int(r["tokens"]), int(r["experts"]), r["strategy"]): r for r in rows}

    dense = dense_bf16_tflops(torch, args.dense_size)
    torch.cuda.empty_cache()
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; dense bf16 GEMM ({args.dense_size}³): "
          f"{dense:.0f} TFLOP/s; E = {E}, H = {H}, I = {I}, top-k = {K}\n")
    notes = []
    torch_us = {}  # (step, T) → µs
    flops = {t: 16.0 * t * K * H * I for t in tokens}
    peer = "grouped_mm"
    try:
        moe = TorchMoeTraining(torch, E, H, I, K, torch.bfloat16)
    except Exception as e:  # noqa: BLE001 (report, keep rudnn's numbers)
        moe = None
        notes.append(f"the torch reference failed: {type(e).__name__}: {str(e)[:200]}")
    for T in tokens:
        if moe is None:
            break
        try:
            us, part_notes = torch_parts(torch, moe, T, args.iters, args.runs)
            for k, v in us.items():
                torch_us[(k, T)] = v
            notes += [f"T={T}: {n}" for n in part_notes]
        except Exception as e:  # noqa: BLE001
            notes.append(f"T={T}: the torch reference failed: {type(e).__name__}: {str(e)[:200]}")
        torch.cuda.empty_cache()
    if moe is not None and not moe.use_grouped:
        peer = "per-expert mm"
    del moe
    torch.cuda.empty_cache()

    # torch's rows in rudnn-bench's columns.
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for T in tokens:
        parts = [torch_us.get((s, T)) for s in ("router", "combine", "dispatch")]
        for step in PARTS:
            tu = torch_us.get((step, T))
            if tu is None:
                continue
            tf = f"{flops[T] / (tu * 1e-6) / 1e12:.3f}" if step in ("experts", "backward") else ""
            ov = (f"{100 * sum(parts) / tu:.1f}" if step == "backward" and None not in parts else "")
            w.writerow([step, T, E, H, I, K, "bf16", f"torch-{peer.replace(' ', '-')}", "cuda:0", f"{tu:.2f}", tf,
                        ov, "", ""])
    try:
        with open(os.path.join(args.log, "torch-moe-backward.csv"), "w") as f:
            f.write(out.getvalue())
    except OSError as e:
        notes.append(f"torch's CSV not written: {e}")

    print(f"| step | T | strategy | rudnn µs | torch µs ({peer}) | speed rudnn/torch | rudnn TFLOP/s | % dense "
          "| torch TFLOP/s | overhead % rudnn / torch | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    compared = bool(rows or args.rudnn_bench or args.rudnn_csv)  # else torch alone: one row per step
    rudnn_strategies = {"combine": ["serial", "plane"], "experts": args.strategies.split(","),
                        "backward": args.strategies.split(",")} if compared else {}
    for T in tokens:
        tparts = [torch_us.get((s, T)) for s in ("router", "combine", "dispatch")]
        for step in PARTS:
            tu = torch_us.get((step, T))
            tus = fnum(tu)
            gemm = step in ("experts", "backward")
            ttf = fnum(flops[T] / (tu * 1e-6) / 1e12) if gemm and tu else "-"
            tov = fnum(100 * sum(tparts) / tu) if step == "backward" and tu and None not in tparts else "-"
            for s in rudnn_strategies.get(step, [""]):
                r = rudnn.get((step, T, E, s))
                if r is None:
                    print(f"| {step} | {T} | {s or '-'} | {'failed' if compared else '-'} | {tus} | - | - | - | {ttf} "
                          f"| - / {tov} | - |")
                    continue
                if not r["median_us"]:
                    print(f"| {step} | {T} | {s} | {r['check'] or 'failed'} | {tus} | - | - | - | {ttf} | - / {tov} "
                          f"| {r['check']} |")
                    continue
                ru = float(r["median_us"])
                ratio = f"{tu / ru:.2f}x" if tu else "-"
                tf = fnum(flops[T] / (ru * 1e-6) / 1e12) if gemm else "-"
                pct = f"{100 * flops[T] / (ru * 1e-6) / 1e12 / dense:.0f}%" if gemm else "-"
                ov = r["overhead_pct"] or "-"
                chk = f"{r['check']} ({r['max_err']})" if r["check"] else "-"
                print(f"| {step} | {T} | {s or '-'} | {ru:.1f} | {tus} | {ratio} | {tf} | {pct} | {ttf} | {ov} / {tov} "
                      f"| {chk} |")
    sys.stdout.flush()

    # Targets of issue 14 (H200), at the largest T measured (4096 by default).
    big = max(tokens)
    print(f"\nTargets (issue 14, T = {big}):")

    def rus(step, s=""):
        r = rudnn.get((step, big, E, s))
        return float(r["median_us"]) if r and r["median_us"] else None

    def state(step, s):
        r = rudnn.get((step, big, E, s))
        return r["check"] if r and not r["median_us"] else None

    tc, sc = rus("experts", "tensorcore"), rus("experts", "scalar")
    tt = torch_us.get(("experts", big))
    why = "" if tc is not None else f" (TensorCore {state('experts', 'tensorcore') or 'not measured'})"
    speed = tt / tc if tc and tt else None
    print(target_line(f"TensorCore experts backward ≥ 1.0× torch's {peer} backward{why}",
                      speed and f"{speed:.2f}×", speed is not None and speed >= 1.0))
    rate = 100 * flops[big] / (tc * 1e-6) / 1e12 / dense if tc else None
    print(target_line(f"TensorCore experts backward ≥ 60% of the dense bf16 GEMM rate ({dense:.0f} TFLOP/s){why}",
                      rate and f"{rate:.0f}%", rate is not None and rate >= 60))
    if sc is not None:
        sr = 100 * flops[big] / (sc * 1e-6) / 1e12 / dense
        print(f"  (Scalar experts backward: {flops[big] / (sc * 1e-6) / 1e12:.1f} TFLOP/s = {sr:.1f}% of dense"
              f"{f', {tt / sc:.2f}× torch' if tt else ''})")
    parts = [rus(s) for s in ("router", "dispatch")] + [rus("combine", "serial")]
    share = {}
    for s in ("tensorcore", "scalar"):
        st = rus("backward", s)
        if st is not None and None not in parts:
            share[s] = 100 * sum(parts) / st
    tshare = share.get("tensorcore")
    print(target_line("router + combine + dispatch backward ≤ 10% of the step (TensorCore)"
                      + ("" if tshare is not None else f" ({state('backward', 'tensorcore') or 'not measured'})"),
                      tshare and f"{tshare:.1f}%", tshare is not None and tshare <= 10))
    if "scalar" in share:
        print(f"  (with the Scalar experts: {share['scalar']:.1f}% of the step)")
    failed = [r for r in rows if r.get("check") == "FAIL"]
    checked = [r for r in rows if r.get("check") in ("ok", "FAIL")]
    if rows:
        print(f"- output checks (rudnn-bench, FP64 slices): {len(checked) - len(failed)}/{len(checked)} ok")
    for n in notes:
        print(f"note: {n}")
    if error:
        print(f"\nrudnn-bench moe-backward failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
