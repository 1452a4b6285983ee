#!/usr/bin/env python3
"""rudnn's gated delta rule against PyTorch on the same GPU (issue 6 item 7; run by scripts/gpu-check).

Measures the device copy bandwidth, runs `rudnn-bench gated-delta` (prefill: chunk_gated_delta_rule;
decode: gated_delta_rule steps from a state), then PyTorch references at the same shapes:
  prefill  the chunked WY form of templates/rudnn/gated_delta/chunked.cuh's header, vectorized over
           (batch, head, chunk) for the in-chunk parts and a loop over chunks for the state, in FP32
  decode   one step of the recurrence per token, in FP32
(first checked against a plain step-by-step recurrence in FP64 on a small shape), and prints a
markdown table (speed = torch time / rudnn time: > 1 means rudnn is faster) and the Targets of
issue 6 marked met / not met. Fails soft (one line, exit 0) without PyTorch or CUDA.
"""
import argparse
import math
import os
import sys

from bench_torch_util import copy_bandwidth, default_log_dir, require_torch_cuda, run_rudnn_bench, target_line, time_ms

NAME = "bench_gated_delta_torch"


def make_inputs(torch, b, h, t, k, v, dtype, with_state):
    """The benchmark's inputs: q, k ~ U(±√(3/K)), v ~ U(−1, 1), log_decay ~ U(−0.5, 0), beta ~ U(0, 1),
    state ~ U(−0.1, 0.1) (FP32)."""
    a = math.sqrt(3.0 / k)

    def u(shape, lo, hi):
        return torch.empty(shape, device="cuda", dtype=dtype).uniform_(lo, hi)

    q, kk, vv = u((b, h, t, k), -a, a), u((b, h, t, k), -a, a), u((b, h, t, v), -1, 1)
    beta, g = u((b, h, t), 0, 1), u((b, h, t), -0.5, 0)
    s0 = torch.empty(b, h, k, v, device="cuda", dtype=torch.float32).uniform_(-0.1, 0.1) if with_state else None
    return q, kk, vv, beta, g, s0


def chunked_reference(torch, q, k, v, beta, g, scale, chunk, s0=None):
    """Gated delta rule, C steps at a time in the WY form, FP32. Per chunk with start state S (K×V),
    γ = cumsum(g), A_ij = β_i e^{γ_i−γ_j} k_i·k_j (j < i), T = (I + A)⁻¹:
      U = T diag(β) V − T diag(β e^γ) K S,  O = diag(e^γ) Q̂ S + (Q̂ Kᵀ ⊙ M) U  (M_ij = e^{γ_i−γ_j}, j ≤ i),
      S ← e^{γ_last} S + Kᵀ diag(e^{γ_last−γ}) U.
    The tail chunk is zero-padded (k = v = β = g = 0 steps change nothing)."""
    f = torch.nn.functional
    B, H, T, K = q.shape
    V = v.shape[-1]
    C = chunk
    N = (T + C - 1) // C
    pad = N * C - T
    qc = f.pad(q.float() * scale, (0, 0, 0, pad)).reshape(B, H, N, C, K)
    kc = f.pad(k.float(), (0, 0, 0, pad)).reshape(B, H, N, C, K)
    vc = f.pad(v.float(), (0, 0, 0, pad)).reshape(B, H, N, C, V)
    bc = f.pad(beta.float(), (0, pad)).reshape(B, H, N, C)
    gam = f.pad(g.float(), (0, pad)).reshape(B, H, N, C).cumsum(-1)
    diff = gam[..., :, None] - gam[..., None, :]
    ones = torch.ones(C, C, device=q.device, dtype=torch.bool)
    strict, incl = torch.tril(ones, -1), torch.tril(ones)
    # Masked before exp: e^{γ_i−γ_j} for j > i could overflow.
    decay_strict = torch.exp(diff.masked_fill(~strict, float("-inf")))
    decay_incl = torch.exp(diff.masked_fill(~incl, float("-inf")))
    a = bc[..., :, None] * decay_strict * (kc @ kc.transpose(-1, -2))
    eye = torch.eye(C, device=q.device, dtype=torch.float32)
    tinv = torch.linalg.solve_triangular(eye + a, eye.expand_as(a), upper=False, unitriangular=True)
    eg = torch.exp(gam)
    u_base = tinv @ (bc[..., None] * vc)
    w = tinv @ ((bc * eg)[..., None] * kc)
    p = (qc @ kc.transpose(-1, -2)) * decay_incl
    k_tail = kc * torch.exp(gam[..., -1:] - gam)[..., None]
    s = torch.zeros(B, H, K, V, device=q.device, dtype=torch.float32) if s0 is None else s0.clone()
    out = torch.empty(B, H, N, C, V, device=q.device, dtype=torch.float32)
    for n in range(N):
        un = u_base[:, :, n] - w[:, :, n] @ s
        out[:, :, n] = eg[:, :, n, :, None] * (qc[:, :, n] @ s) + p[:, :, n] @ un
        s = eg[:, :, n, -1, None, None] * s + k_tail[:, :, n].transpose(-1, -2) @ un
    return out.reshape(B, H, N * C, V)[:, :, :T].to(q.dtype), s


def recurrent_reference(torch, q, k, v, beta, g, scale, s0=None, compute=None):
    """The recurrence step by step: S ← e^{g_t} S; u = β_t (v_t − Sᵀ k_t); S ← S + k_t uᵀ; o_t = Sᵀ q̂_t."""
    compute = compute or torch.float32
    B, H, T, K = q.shape
    V = v.shape[-1]
    s = torch.zeros(B, H, K, V, device=q.device, dtype=compute) if s0 is None else s0.to(compute).clone()
    outs = []
    for t in range(T):
        kt, qt = k[:, :, t].to(compute), q[:, :, t].to(compute) * scale
        s = s * torch.exp(g[:, :, t].to(compute))[..., None, None]
        ut = beta[:, :, t].to(compute)[..., None] * (v[:, :, t].to(compute) - torch.einsum("bhkv,bhk->bhv", s, kt))
        s = s + kt[..., :, None] * ut[..., None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", s, qt))
    return torch.stack(outs, dim=2).to(q.dtype), s


def self_check(torch):
    """The chunked reference against the FP64 recurrence (a tail chunk, K ≠ V, a start state)."""
    q, k, v, beta, g, s0 = make_inputs(torch, 2, 3, 150, 32, 16, torch.float64, True)
    want_o, want_s = recurrent_reference(torch, q, k, v, beta, g, 0.3, s0, compute=torch.float64)
    got_o, got_s = chunked_reference(torch, q.float(), k.float(), v.float(), beta.float(), g.float(), 0.3, 64, s0)
    eo = ((got_o.double() - want_o).norm() / want_o.norm()).item()
    es = ((got_s.double() - want_s).norm() / want_s.norm()).item()
    return max(eo, es)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rudnn-bench", required=True)
    ap.add_argument("--log", default=default_log_dir())
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--key-dim", type=int, default=128)
    ap.add_argument("--value-dim", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=64)
    ap.add_argument("--decode-batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--budget-ms", type=int, default=1500, help="rudnn-bench's cap per slow step")
    ap.add_argument("--timeout", type=int, default=180, help="seconds for rudnn-bench")
    ap.add_argument("--copy-mib", type=int, default=2048, help="size of the copy-bandwidth measurement")
    ap.add_argument("--tag", default="", help="names this run in the title and the CSV (e.g. autotune, for a run "
                    "under RUDNN_AUTOTUNE=full: the kernel column then names the tile Autotune picked)")
    args = ap.parse_args()
    B, H, T, K, V, C, DB = (args.batch, args.heads, args.seq, args.key_dim, args.value_dim, args.chunk,
                            args.decode_batch)

    tag = f" ({args.tag})" if args.tag else ""
    print(f"### Gated delta rule (issue 6): rudnn vs PyTorch, bf16{tag}\n")
    torch = require_torch_cuda(NAME)
    if torch is None:
        return 0
    cmd = [args.rudnn_bench, "gated-delta", "--device", "cuda:0", "--batch", str(B), "--heads", str(H), "--seq",
           str(T), "--key-dim", str(K), "--value-dim", str(V), "--chunk", str(C), "--decode-batch", str(DB),
           "--dtype", "bf16", "--iters", str(args.iters), "--runs", str(args.runs), "--budget-ms", str(args.budget_ms)]
    csv = "rudnn-bench-gated-delta" + (f"-{args.tag}" if args.tag else "") + ".csv"
    rows, error = run_rudnn_bench(cmd, os.path.join(args.log, csv), args.timeout)
    rudnn = {r["mode"]: r for r in rows}

    bw = copy_bandwidth(torch, args.copy_mib * 1024**2)
    try:
        check = self_check(torch)
        check_text = f"rel L2 {check:.1e}" + ("" if check < 1e-4 else " (MISMATCH: the torch timings below are of a "
                                                                        "wrong reference)")
    except Exception as e:  # noqa: BLE001 (report, keep rudnn's numbers)
        check_text = f"failed: {type(e).__name__}: {str(e)[:200]}"
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; device copy bandwidth: {bw:.0f} GB/s; "
          f"torch chunked reference vs FP64 recurrence: {check_text}\n")

    scale = 1.0 / math.sqrt(K)
    bf16 = torch.bfloat16
    state_bytes = 4 * H * K * V  # per sequence, FP32
    modes = {
        "prefill": dict(shape=f"B={B} T={T} H={H} K={K} V={V} C={C}", tokens=B * T,
                        floor=B * T * H * 2 * (2 * K + 2 * V + 2) + B * state_bytes, torch_ms=None),
        "decode": dict(shape=f"B={DB} T=1 H={H} K={K} V={V}", tokens=DB,
                       floor=DB * H * 2 * (2 * K + 2 * V + 2) + 2 * DB * state_bytes, torch_ms=None),
    }
    notes = []
    try:  # prefill: B·T tokens, no initial state (as rudnn-bench)
        q, k, v, beta, g, _ = make_inputs(torch, B, H, T, K, V, bf16, False)
        modes["prefill"]["torch_ms"] = time_ms(torch, lambda: chunked_reference(torch, q, k, v, beta, g, scale, C),
                                               iters=max(1, args.iters // 5), runs=min(args.runs, 5), warmup=1)
        del q, k, v, beta, g
    except Exception as e:  # noqa: BLE001
        notes.append(f"the torch prefill reference failed: {type(e).__name__}: {str(e)[:200]}")
    try:  # decode: DB sequences, one step from a state (read and written)
        q, k, v, beta, g, s0 = make_inputs(torch, DB, H, 1, K, V, bf16, True)
        modes["decode"]["torch_ms"] = time_ms(torch, lambda: recurrent_reference(torch, q, k, v, beta, g, scale, s0),
                                              iters=args.iters, runs=args.runs)
        del q, k, v, beta, g, s0
    except Exception as e:  # noqa: BLE001
        notes.append(f"the torch decode reference failed: {type(e).__name__}: {str(e)[:200]}")
    torch.cuda.empty_cache()

    print("| mode | shape | rudnn µs | torch µs | speed rudnn/torch | rudnn Mtok/s | rudnn GB/s (floor) | % copy BW | "
          "rudnn kernel |")
    print("|---|---|---|---|---|---|---|---|---|")
    rudnn_ms = {}
    for mode, m in modes.items():
        tu = None if m["torch_ms"] is None else 1000 * m["torch_ms"]
        tus = "error" if tu is None else f"{tu:.1f}"
        r = rudnn.get(mode)
        if r is None:
            print(f"| {mode} | {m['shape']} | failed | {tus} | - | - | - | - | - |")
            continue
        ru = float(r["median_us"])
        rudnn_ms[mode] = ru / 1000
        gbs = m["floor"] / (ru * 1e-6) / 1e9
        ratio = "-" if tu is None else f"{tu / ru:.2f}x"
        print(f"| {mode} | {m['shape']} | {ru:.1f} | {tus} | {ratio} | {m['tokens'] / ru:.2f} | {gbs:.0f} | "
              f"{100 * gbs / bw:.0f}% | {r.get('kernel') or '-'} |")

    print("\nTargets (issue 6):")
    pre = rudnn_ms.get("prefill")
    sp = pre and modes["prefill"]["torch_ms"] and modes["prefill"]["torch_ms"] / pre
    print(target_line("chunked prefill ≥ 5× the PyTorch chunked reference", sp and f"{sp:.2f}×", sp and sp >= 5))
    floor_ms = modes["prefill"]["floor"] / (bw * 1e9) * 1e3
    x = pre and pre / floor_ms
    print(target_line(f"chunked prefill within 2× of the memory-traffic floor ({floor_ms * 1e3:.0f} µs at the copy "
                      "bandwidth)", x and f"{x:.2f}× the floor", x and x <= 2))
    dec = rudnn_ms.get("decode")
    frac = dec and 100 * (2 * DB * state_bytes) / (dec * 1e-3) / 1e9 / bw
    print(target_line(f"decode step ≥ 70% of HBM bandwidth on the state read/write (measured copy bandwidth "
                      f"{bw:.0f} GB/s; H200 nominal 4800)", frac and f"{frac:.0f}%", frac and frac >= 70))
    for n in notes:
        print(f"note: {n}")
    if error:
        print(f"\nrudnn-bench gated-delta failed: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
