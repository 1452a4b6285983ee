#!/usr/bin/env python3
"""rudnn's paged attention and MLA against FlashInfer (or torch SDPA) on the same GPU (issue 13 item 6; run by scripts/gpu-check).

Runs `rudnn-bench paged` (decode, split-KV decode, mixed prefill + decode, MLA decode unsplit and
split; rudnn-bench checks every row's output against an FP64 reference and measures a device copy in
the same run), then the same layouts with a peer: FlashInfer's BatchDecodeWithPagedKVCacheWrapper
(decode and split rows: FlashInfer picks its own split), BatchPrefillWithPagedKVCacheWrapper (mixed,
causal) and BatchMLAPagedAttentionWrapper (MLA) over the same page size and scattered physical pages
when `import flashinfer` works; else torch SDPA over K/V already gathered to dense tensors (the
gather is not timed, so this peer is a dense-attention floor, not a paged kernel): decode as Hkv
heads of `group` query rows each, mixed as a causal GQA call (enable_gqa) plus the decode call, MLA
as one head of H query rows over the concatenated latent + rope keys. Prints a markdown table (GB/s
counts the K/V or latent + rope bytes each row must read plus q and out; % copy is against
rudnn-bench's own copy measurement; speed = peer time / rudnn time: > 1 means rudnn is faster) and a
short summary. Fails soft (one line, exit 0) without PyTorch or CUDA.
"""
import argparse
import math
import os
import sys

from bench_torch_util import copy_bandwidth, default_log_dir, require_torch_cuda, run_rudnn_bench, time_ms

NAME = "bench_paged_torch"


def dtype_of(torch, name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def page_table(torch, lengths, page_size):
    """FlashInfer's CSR page table over a random permutation of the physical pages: (pages,
    indptr, indices, last_page_len), int32 on the GPU."""
    counts = [(n + page_size - 1) // page_size for n in lengths]
    pages = sum(counts)
    indices = torch.randperm(pages, device="cuda", dtype=torch.int64).to(torch.int32)
    indptr = torch.tensor([0] + list(_cumsum(counts)), dtype=torch.int32, device="cuda")
    last = torch.tensor([n - (c - 1) * page_size for n, c in zip(lengths, counts)], dtype=torch.int32, device="cuda")
    return pages, indptr, indices, last


def _cumsum(xs):
    total = 0
    for x in xs:
        total += x
        yield total


def _plan(wrapper, *args, dt, **kw):
    """plan() across FlashInfer versions: q_data_type/kv_data_type, else the older data_type."""
    try:
        return wrapper.plan(*args, q_data_type=dt, kv_data_type=dt, **kw)
    except TypeError:
        return wrapper.plan(*args, data_type=dt, **kw)


class Peer:
    def __init__(self, torch, flashinfer):
        self.torch = torch
        self.fi = flashinfer
        self.name = "flashinfer" if flashinfer else "sdpa(dense)"
        self.workspace = (torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda") if flashinfer else None)

    # Each builder returns a callable of one peer call on fresh random inputs of the row's layout.
    def decode(self, b, length, ps, hq, hkv, d, dt):
        torch = self.torch
        if self.fi:
            pages, indptr, indices, last = page_table(torch, [length] * b, ps)
            k = torch.randn(pages, ps, hkv, d, dtype=dt, device="cuda")
            v = torch.randn(pages, ps, hkv, d, dtype=dt, device="cuda")
            q = torch.randn(b, hq, d, dtype=dt, device="cuda")
            try:
                w = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD", use_tensor_cores=hq // hkv >= 4)
            except TypeError:
                w = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD")
            _plan(w, indptr, indices, last, hq, hkv, d, ps, dt=dt)
            return lambda: w.run(q, (k, v))
        g = hq // hkv
        q = torch.randn(b, hkv, g, d, dtype=dt, device="cuda")
        k = torch.randn(b, hkv, length, d, dtype=dt, device="cuda")
        v = torch.randn(b, hkv, length, d, dtype=dt, device="cuda")
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda: sdpa(q, k, v)  # the row at position L - 1 sees every key: no mask

    def mixed(self, prefill_seqs, prefill_len, decode_rows, decode_len, ps, hq, hkv, d, dt):
        torch = self.torch
        if self.fi:
            lengths = [prefill_len] * prefill_seqs + [decode_len] * decode_rows
            pages, indptr, indices, last = page_table(torch, lengths, ps)
            rows = [prefill_len] * prefill_seqs + [1] * decode_rows
            qo = torch.tensor([0] + list(_cumsum(rows)), dtype=torch.int32, device="cuda")
            k = torch.randn(pages, ps, hkv, d, dtype=dt, device="cuda")
            v = torch.randn(pages, ps, hkv, d, dtype=dt, device="cuda")
            q = torch.randn(sum(rows), hq, d, dtype=dt, device="cuda")
            w = self.fi.BatchPrefillWithPagedKVCacheWrapper(self.workspace, "NHD")
            _plan(w, qo, indptr, indices, last, hq, hkv, d, ps, dt=dt, causal=True)
            return lambda: w.run(q, (k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        qp = torch.randn(prefill_seqs, hq, prefill_len, d, dtype=dt, device="cuda")
        kp = torch.randn(prefill_seqs, hkv, prefill_len, d, dtype=dt, device="cuda")
        vp = torch.randn(prefill_seqs, hkv, prefill_len, d, dtype=dt, device="cuda")
        dec = self.decode(decode_rows, decode_len, ps, hq, hkv, d, dt) if decode_rows else (lambda: None)

        def both():
            sdpa(qp, kp, vp, is_causal=True, enable_gqa=hq != hkv)
            dec()
        return both

    def mla(self, b, length, ps, h, r, p, dt):
        torch = self.torch
        scale = 1.0 / math.sqrt(r + p)  # rudnn-bench's scale
        if self.fi:
            pages, indptr, indices, _ = page_table(torch, [length] * b, ps)
            ckv = torch.randn(pages, ps, r, dtype=dt, device="cuda")
            kpe = torch.randn(pages, ps, p, dtype=dt, device="cuda")
            qn = torch.randn(b, h, r, dtype=dt, device="cuda")
            qpe = torch.randn(b, h, p, dtype=dt, device="cuda")
            qo = torch.arange(0, b + 1, dtype=torch.int32, device="cuda")
            kv_len = torch.full((b,), length, dtype=torch.int32, device="cuda")
            w = self.fi.mla.BatchMLAPagedAttentionWrapper(self.workspace, backend="auto")
            w.plan(qo, indptr, indices, kv_len, h, r, p, ps, True, scale, dt, dt)
            return lambda: w.run(qn, qpe, ckv, kpe)
        q = torch.randn(b, 1, h, r + p, dtype=dt, device="cuda")
        k = torch.randn(b, 1, length, r + p, dtype=dt, device="cuda")
        v = k[..., :r]  # the latent rows are the values
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda: sdpa(q, k, v, scale=scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--sets", default="decode,split,mixed,mla,mla_split")
    ap.add_argument("--batch", default="1,16,64,256", help="comma list (rudnn-bench --batch)")
    ap.add_argument("--seq-len", default="1024,4096,32768", help="comma list (rudnn-bench --seq-len)")
    ap.add_argument("--page-size", default="1,16,64", help="comma list (rudnn-bench --page-size)")
    ap.add_argument("--splits", default="auto")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget-ms", type=int, default=100, help="rudnn-bench --budget-ms (caps each row's timing)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds for rudnn-bench")
    ap.add_argument("--peer", choices=["auto", "flashinfer", "sdpa"], default="auto")
    ap.add_argument("--tag", default="", help="names this run in the title and the CSV (e.g. wgmma, for a run "
                    "under RUDNN_WGMMA=1)")
    args = ap.parse_args()

    tag = f" ({args.tag})" if args.tag else ""
    print(f"### Paged attention (issue 13): rudnn vs FlashInfer (else torch SDPA on dense K/V), bf16, causal{tag}\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    fi = None
    if args.peer != "sdpa":
        try:
            import flashinfer  # noqa: F401
            import flashinfer.mla  # noqa: F401
            fi = flashinfer
        except Exception as e:  # noqa: BLE001 (any import failure: fall back)
            if args.peer == "flashinfer":
                print(f"{NAME}: flashinfer cannot be imported ({type(e).__name__}: {str(e)[:160]})")
                return 0
            print(f"note: flashinfer cannot be imported ({type(e).__name__}); the peer is torch SDPA on dense K/V\n")
    cmd = [args.rudnn_bench, "paged", "--device", "cuda:0", "--dtype", "bf16", "--sets", args.sets,
           "--splits", args.splits, "--iters", str(args.iters), "--runs", str(args.runs),
           "--budget-ms", str(args.budget_ms)]
    for opt, values in (("--batch", args.batch), ("--seq-len", args.seq_len), ("--page-size", args.page_size)):
        for v in values.split(","):
            cmd += [opt, v]
    csv = "rudnn-bench-paged" + (f"-{args.tag}" if args.tag else "") + ".csv"
    rows, error = run_rudnn_bench(cmd, os.path.join(args.log, csv), args.timeout)
    peer = Peer(torch, fi)
    bw = copy_bandwidth(torch, 1024**3)
    rudnn_bw = rows[0]["copy_gb_per_s"] if rows else "-"
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}"
          f"{'; flashinfer ' + getattr(fi, '__version__', '?') if fi else ''}; device copy bandwidth: "
          f"{rudnn_bw} GB/s (rudnn-bench), {bw:.0f} GB/s (torch)\n")
    print(f"| set | batch | len | page | splits | rudnn µs | rudnn GB/s | % copy | merge % | TFLOP/s | {peer.name} µs "
          "| peer GB/s | speed rudnn/peer | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    peer_us = {}  # split rows reuse their unsplit layout's peer time
    speeds, pct = {}, {}
    for r in rows:
        s = r["set"]
        b, length, ps = int(r["batch"]), int(r["seq_len"]), int(r["page_size"])
        hq, hkv, d, rope = int(r["q_heads"]), int(r["kv_heads"]), int(r["head_dim"]), int(r["rope_dim"])
        dt = dtype_of(torch, r["dtype"])
        base = {"split": "decode", "mla_split": "mla"}.get(s, s)
        key = (base, b, length, ps, int(r["prefill_seqs"]), int(r["prefill_len"]))
        if key not in peer_us:
            try:
                if base == "decode":
                    fn = peer.decode(b, length, ps, hq, hkv, d, dt)
                elif base == "mixed":
                    fn = peer.mixed(int(r["prefill_seqs"]), int(r["prefill_len"]), b, length, ps, hq, hkv, d, dt)
                else:
                    fn = peer.mla(b, length, ps, hq, d, rope, dt)
                peer_us[key] = 1000 * time_ms(torch, fn, iters=args.iters, runs=args.runs)
            except Exception as e:  # noqa: BLE001 (report, keep rudnn's number)
                peer_us[key] = None
                print(f"note: {peer.name} {base} batch {b} len {length} page {ps} failed: {type(e).__name__}: "
                      f"{str(e)[:160]}")
            fn = None
            torch.cuda.empty_cache()
        ru, pu = float(r["median_us"]), peer_us[key]
        gbps = float(r["gb_per_s"])
        ratio = None if pu is None else pu / ru
        speeds.setdefault(s, []).append(ratio)
        if r["pct_copy"]:
            pct.setdefault(s, []).append((float(r["pct_copy"]), b, length, ps))
        merge = r["merge_pct"] or "-"
        print(f"| {s} | {b if s != 'mixed' else str(r['prefill_seqs']) + '×' + r['prefill_len'] + ' + ' + str(b)} | "
              f"{length} | {ps} | {r['splits']} | {ru:.1f} | {gbps:.0f} | {r['pct_copy'] or '-'} | {merge} | "
              f"{r['tflops']} | {'error' if pu is None else f'{pu:.1f}'} | "
              f"{'-' if pu is None else f'{gbps * ru / pu:.0f}'} | {'-' if ratio is None else f'{ratio:.2f}x'} | "
              f"{r['check']} ({r['max_err']}) |", flush=True)

    print("\nSummary:")
    for s in ("decode", "split", "mixed", "mla", "mla_split"):
        vals = [v for v in speeds.get(s, []) if v is not None]
        if not speeds.get(s):
            continue
        geo = math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None
        p = sorted(pct.get(s, []))
        spread = (f"; % of copy bandwidth {p[0][0]:.0f}% (batch {p[0][1]}, len {p[0][2]}, page {p[0][3]}) .. "
                  f"{p[-1][0]:.0f}% (batch {p[-1][1]}, len {p[-1][2]}, page {p[-1][3]})") if p else ""
        print(f"- {s}: {len(speeds[s])} rows; speed vs {peer.name}: "
              f"{'not measured' if geo is None else f'geomean {geo:.2f}x, worst {min(vals):.2f}x'}{spread}")
    failed = [r for r in rows if r["check"] not in ("ok", "")]
    print(f"- output checks (rudnn-bench, FP64 reference): {len(rows) - len(failed)}/{len(rows)} ok")
    if error:
        print(f"\nrudnn-bench paged failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
