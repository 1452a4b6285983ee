#!/usr/bin/env python3
"""rudnn's paged attention backward against FlashAttention-2's varlen backward (or torch SDPA) on the same GPU (issue 15; run by scripts/gpu-check).

Runs `rudnn-bench paged-backward` (the atomic and the ordered path, with vs_atomic = the ordered time over the
atomic one on the same inputs; sets prefill = every position 0..L-1 of each of
`batch` sequences of length L is a causal query row, decode = one query row per sequence at position
L - 1; rudnn-bench checks each row against an FP64 reference unless --check 0), or reads a CSV it
printed (--rudnn-csv; with neither, or when rudnn-bench gives no rows, the peer alone over the
--sets × --batch × --seq-len grid), then the same tokens through a peer on contiguous tensors:
flash_attn.flash_attn_varlen_func (q [tokens, Hq, D], k / v [tokens, Hkv, D]: GQA served by
flash-attn itself; prefill causal over cu_seqlens = 0, L, 2L, ...; decode one query per sequence
over its L keys, which sees every key, so causal=False: the same result whatever the flash-attn
version's alignment of the causal mask) when `import flash_attn` works and the dtype is bf16 / f16;
else torch SDPA on [B, H, L, D] (prefill is_causal=True; decode a query of length 1 with
is_causal=False; grouped-query heads through enable_gqa=True where torch takes it, else K and V
repeated per query head with repeat_interleave inside the graph, so its backward sums the groups).
Only the backward is timed: the forward runs once with requires_grad, then
torch.autograd.grad(out, (q, k, v), grad_out, retain_graph=True) between CUDA events (warmup, median
of --runs runs of --iters calls). The peers use the log-sum-exp their forward saved; rudnn's backward
recomputes it (one more pass over the keys), which is part of what is compared. Page size does not
change the peer's problem: one peer time serves every page size.

TFLOP/s counts backward FLOPs = 2.5 × forward FLOPs, forward = 4·Hq·D·Σ_rows (keys the row sees)
(prefill Σ = B·L(L+1)/2, decode Σ = B·L), for rudnn and the peer alike, so ratio = rudnn TFLOP/s /
peer TFLOP/s = peer time / rudnn time (> 1 means rudnn is faster). Prints a markdown table, writes
the peer's rows as CSV in rudnn-bench's columns ($LOG/torch-paged-backward.csv), a summary with the
geometric-mean ratio per set and the Target of issue 15 (prefill ≥ 0.8× FlashAttention-2's varlen
backward on the same tokens, contiguous layout) marked met / not met. Fails soft (one line, exit 0)
without PyTorch or CUDA.
"""
import argparse
import csv
import io
import math
import os
import sys

from bench_torch_util import default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_paged_backward_torch"
COLUMNS = ["set", "batch", "seq_len", "page_size", "q_heads", "kv_heads", "head_dim", "rows", "dtype", "path",
           "device", "median_us", "tflops", "vs_atomic", "max_err", "check"]
SETS = ("prefill", "decode")
TARGET = 0.8  # prefill: rudnn TFLOP/s ≥ 0.8 × FlashAttention-2's varlen backward
ORDERED_TARGET = 1.15  # the ordered path at most 15% slower than the atomic one


def dtype_of(torch, name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def backward_flops(s, b, length, hq, d):
    """2.5 × the forward's 4·Hq·D·Σ_rows (keys the row sees)."""
    seen = b * length * (length + 1) // 2 if s == "prefill" else b * length
    return 2.5 * 4.0 * hq * d * seen


def query_rows(s, b, length):
    return b * length if s == "prefill" else b


def tflops(flops, us):
    return flops / (us * 1e-6) / 1e12


def geomean(vals):
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


class Peer:
    """The contiguous-layout peers; each builder returns a callable of one backward call (the forward
    already run once, its graph retained)."""

    def __init__(self, torch, flash_attn):
        self.torch = torch
        self.fa = flash_attn
        self.gqa = None  # whether SDPA takes enable_gqa: None until tried

    def flash(self, s, b, length, hq, hkv, d, dt):
        torch = self.torch
        prefill = s == "prefill"
        q = torch.randn(query_rows(s, b, length), hq, d, dtype=dt, device="cuda", requires_grad=True)
        k = torch.randn(b * length, hkv, d, dtype=dt, device="cuda", requires_grad=True)
        v = torch.randn(b * length, hkv, d, dtype=dt, device="cuda", requires_grad=True)
        cu_k = torch.arange(0, b + 1, dtype=torch.int32, device="cuda") * length
        cu_q = cu_k if prefill else torch.arange(0, b + 1, dtype=torch.int32, device="cuda")
        out = self.fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, length if prefill else 1, length,
                                             causal=prefill)
        if isinstance(out, tuple):  # versions / flags that also return the LSE
            out = out[0]
        go = torch.randn_like(out)
        return lambda: torch.autograd.grad(out, (q, k, v), go, retain_graph=True)

    def sdpa(self, s, b, length, hq, hkv, d, dt):
        torch = self.torch
        sdpa = torch.nn.functional.scaled_dot_product_attention
        prefill = s == "prefill"
        q = torch.randn(b, hq, length if prefill else 1, d, dtype=dt, device="cuda", requires_grad=True)
        k = torch.randn(b, hkv, length, d, dtype=dt, device="cuda", requires_grad=True)
        v = torch.randn(b, hkv, length, d, dtype=dt, device="cuda", requires_grad=True)
        out = None
        if hq != hkv and self.gqa is not False:
            try:
                out = sdpa(q, k, v, is_causal=prefill, enable_gqa=True)
                self.gqa = True
            except (RuntimeError, TypeError):  # no enable_gqa argument, or no kernel that takes it
                self.gqa = False
        if out is None:
            g = hq // hkv
            kr = k.repeat_interleave(g, dim=1) if g > 1 else k
            vr = v.repeat_interleave(g, dim=1) if g > 1 else v
            out = sdpa(q, kr, vr, is_causal=prefill)
        go = torch.randn_like(out)
        return lambda: torch.autograd.grad(out, (q, k, v), go, retain_graph=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", help="run this rudnn-bench (else --rudnn-csv, else the peer alone)")
    ap.add_argument("--rudnn-csv", help="compare against the CSV of an earlier `rudnn-bench paged-backward` run")
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--sets", default="prefill,decode")
    ap.add_argument("--batch", default="4,16", help="comma list (rudnn-bench --batch)")
    ap.add_argument("--seq-len", default="1024,4096", help="comma list (rudnn-bench --seq-len)")
    ap.add_argument("--page-size", default="16", help="comma list (rudnn-bench --page-size)")
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    ap.add_argument("--check", choices=["0", "1"], default="1", help="rudnn-bench --check (FP64 reference)")
    ap.add_argument("--iters", type=int, default=10, help="peer calls per timed run")
    ap.add_argument("--runs", type=int, default=5, help="peer timed runs (the median is reported)")
    ap.add_argument("--timeout", type=int, default=240, help="seconds for rudnn-bench")
    ap.add_argument("--peer", choices=["auto", "flash_attn", "sdpa"], default="auto")
    args = ap.parse_args()

    print(f"### Paged attention backward (issue 15): rudnn vs FlashAttention-2 varlen (else torch SDPA), "
          f"contiguous K/V, {args.dtype}, causal\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    fa = None
    if args.peer != "sdpa":
        try:
            import flash_attn  # noqa: F401
            fa = flash_attn
            fa.flash_attn_varlen_func  # noqa: B018 (old versions lack it: fall back)
        except Exception as e:  # noqa: BLE001 (any import failure: fall back)
            fa = None
            if args.peer == "flash_attn":
                print(f"{NAME}: flash_attn cannot be imported ({type(e).__name__}: {str(e)[:160]})")
                return 0
            print(f"note: flash_attn cannot be imported ({type(e).__name__}); the peer is torch SDPA "
                  "(a stand-in for FlashAttention-2's varlen backward)\n")
    # rudnn first, while this process holds no GPU memory.
    rows, error = [], None
    if args.rudnn_bench:
        cmd = [args.rudnn_bench, "paged-backward", "--device", "cuda:0", "--sets", args.sets, "--q-heads",
               str(args.q_heads), "--kv-heads", str(args.kv_heads), "--head-dim", str(args.head_dim), "--dtype",
               args.dtype, "--check", args.check, "--budget-ms", "300"]
        for opt, values in (("--batch", args.batch), ("--seq-len", args.seq_len), ("--page-size", args.page_size)):
            for v in values.split(","):
                cmd += [opt, v]
        rows, error = run_rudnn_bench(cmd, os.path.join(args.log, "rudnn-bench-paged-backward.csv"), args.timeout)
    elif args.rudnn_csv:
        with open(args.rudnn_csv) as f:
            rows = [r for r in csv.DictReader(f) if r.get("set")]
    compared = bool(args.rudnn_bench or args.rudnn_csv)
    grid = not rows  # no rudnn rows (not asked, or rudnn-bench failed): the peer alone over the grid
    if grid:
        rows = [{"set": s, "batch": b, "seq_len": n, "page_size": "-", "q_heads": str(args.q_heads),
                 "kv_heads": str(args.kv_heads), "head_dim": str(args.head_dim), "dtype": args.dtype}
                for s in args.sets.split(",") for b in args.batch.split(",") for n in args.seq_len.split(",")]

    peer = Peer(torch, fa)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}"
          f"{'; flash_attn ' + getattr(fa, '__version__', '?') if fa else ''}; Hq = {args.q_heads}, "
          f"Hkv = {args.kv_heads}, D = {args.head_dim}\n")
    notes = []
    peer_res = {}  # (set, batch, len, hq, hkv, d, dtype) → (peer name, µs or None)

    def measure(s, b, length, hq, hkv, d, dtname):
        dt = dtype_of(torch, dtname)
        tries = []
        if fa is not None and dtname in ("bf16", "f16"):
            tries.append(("flash_attn_varlen", peer.flash))
        elif fa is not None:
            notes.append(f"flash_attn has no {dtname} kernel: {s} batch {b} len {length} through sdpa")
        if args.peer != "flash_attn" or not tries:
            tries.append(("sdpa", peer.sdpa))
        for name, build in tries:
            fn = None
            try:
                fn = build(s, b, length, hq, hkv, d, dt)
                return name, 1000 * time_ms(torch, fn, iters=args.iters, runs=args.runs)
            except Exception as e:  # noqa: BLE001 (report, try the next peer, keep rudnn's number)
                notes.append(f"{name} {s} batch {b} len {length} failed: {type(e).__name__}: {str(e)[:160]}")
            finally:
                fn = None
                torch.cuda.empty_cache()
        return tries[-1][0], None

    print("| set | path | batch | len | page | Hq/Hkv | D | rows | rudnn µs | rudnn TFLOP/s | vs atomic | peer | peer µs "
          "| peer TFLOP/s | rudnn/peer | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ordered = []  # (vs_atomic, set, batch, len, page) of the ordered path's rows
    ratios = {}  # set → [(ratio, batch, len, page, peer)]
    for r in rows:
        s = r["set"]
        b, length = int(r["batch"]), int(r["seq_len"])
        hq, hkv, d = int(r["q_heads"]), int(r["kv_heads"]), int(r["head_dim"])
        ps, dtname = r["page_size"], r["dtype"]
        flops = backward_flops(s, b, length, hq, d)
        key = (s, b, length, hq, hkv, d, dtname)
        if key not in peer_res:
            peer_res[key] = measure(*key)
        pname, pu = peer_res[key]
        pus = "error" if pu is None else f"{pu:.1f}"
        ptf = "-" if pu is None else f"{tflops(flops, pu):.1f}"
        path = r.get("path", "-")
        head = f"| {s} | {path} | {b} | {length} | {ps} | {hq}/{hkv} | {d} | {query_rows(s, b, length)} |"
        if grid:
            print(f"{head} {'failed' if compared else '-'} | - | - | {pname} | {pus} | {ptf} | - | - |", flush=True)
            continue
        if not r.get("median_us"):
            print(f"{head} {r.get('check') or 'failed'} | - | - | {pname} | {pus} | {ptf} | - | "
                  f"{r.get('check') or '-'} |", flush=True)
            continue
        ru = float(r["median_us"])
        rtf = tflops(flops, ru)
        try:
            csv_tf = float(r["tflops"])
            if abs(csv_tf - rtf) > 0.01 * max(rtf, 1e-9) + 0.01:
                notes.append(f"{s} batch {b} len {length} page {ps}: rudnn-bench says {csv_tf} TFLOP/s, this "
                             f"script's FLOP count gives {rtf:.3f} (the ratio uses the times)")
        except (KeyError, TypeError, ValueError):
            pass
        ratio = None if pu is None else pu / ru  # = rudnn TFLOP/s / peer TFLOP/s (same FLOPs)
        if ratio is not None and path in ("atomic", "-"):
            ratios.setdefault(s, []).append((ratio, b, length, ps, pname))
        vs = r.get("vs_atomic") or ""
        if path == "ordered" and vs:
            ordered.append((float(vs), s, b, length, ps))
        chk = f"{r['check']} ({r['max_err']})" if r.get("check") else "-"
        print(f"{head} {ru:.1f} | {rtf:.1f} | {vs or '-'} | {pname} | {pus} | {ptf} | "
              f"{'-' if ratio is None else f'{ratio:.2f}x'} | {chk} |", flush=True)

    # The peer's rows in rudnn-bench's columns.
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for (s, b, length, hq, hkv, d, dtname), (pname, pu) in peer_res.items():
        if pu is None:
            continue
        w.writerow([s, b, length, "", hq, hkv, d, query_rows(s, b, length), dtname, f"torch-{pname}", "cuda:0",
                    f"{pu:.2f}", f"{tflops(backward_flops(s, b, length, hq, d), pu):.3f}", "", "", ""])
    try:
        with open(os.path.join(args.log, "torch-paged-backward.csv"), "w") as f:
            f.write(out.getvalue())
    except OSError as e:
        notes.append(f"the peer's CSV not written: {e}")

    print("\nSummary:")
    for s in SETS:
        vals = ratios.get(s)
        if not vals:
            continue
        worst = min(vals)
        peers = sorted({v[4] for v in vals})
        print(f"- {s}: {len(vals)} rows (atomic path); rudnn/peer TFLOP/s ({', '.join(peers)}): geomean "
              f"{geomean([v[0] for v in vals]):.2f}x, worst {worst[0]:.2f}x (batch {worst[1]}, len {worst[2]}, "
              f"page {worst[3]})")
    pre = ratios.get("prefill", [])
    geo = geomean([v[0] for v in pre])
    proxy = [v for v in pre if v[4] != "flash_attn_varlen"]
    why = f" (peer here: {', '.join(sorted({v[4] for v in proxy}))}, a stand-in for FlashAttention-2)" if proxy else ""
    print(f"\nTargets (issue 15, {args.dtype}, Hq = {args.q_heads}, Hkv = {args.kv_heads}, D = {args.head_dim}):")
    print(target_line(f"prefill backward ≥ {TARGET}× FlashAttention-2's varlen backward on the same tokens "
                      f"(contiguous layout), geomean over {len(pre)} rows{why}",
                      geo and f"{geo:.2f}×", geo is not None and geo >= TARGET))
    ogeo = geomean([v[0] for v in ordered])
    print(target_line(f"ordered path ≤ {ORDERED_TARGET:.2f}× the atomic path's time, geomean over {len(ordered)} rows",
                      ogeo and f"{ogeo:.2f}×", ogeo is not None and ogeo <= ORDERED_TARGET))
    if not grid:
        checked = [r for r in rows if r.get("check") not in (None, "", "-", "skipped", "off", "0")]
        if checked:
            ok = sum(r["check"] == "ok" for r in checked)
            print(f"- output checks (rudnn-bench, FP64 reference): {ok}/{len(checked)} ok")
        elif rows:
            print("- output checks (rudnn-bench): not run")
    for n in notes:
        print(f"note: {n}")
    if error:
        print(f"\nrudnn-bench paged-backward failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
