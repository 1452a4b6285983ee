"""What scripts/bench_moe_torch.py and scripts/bench_gated_delta_torch.py share: a soft PyTorch/CUDA
check, CUDA-event timing, the device copy bandwidth, running rudnn-bench and reading its CSV, and the
Target lines of the issues (met / not met / not measured)."""
import csv
import io
import os
import subprocess


def require_torch_cuda(name):
    """Returns torch, or None after one clear line when PyTorch or a CUDA device is missing."""
    try:
        import torch
    except ImportError:
        print(f"{name}: skipped: PyTorch is not installed (python3 -c 'import torch' fails); no comparison made")
        return None
    if not torch.cuda.is_available():
        print(f"{name}: skipped: PyTorch sees no CUDA device (torch {torch.__version__}); no comparison made")
        return None
    return torch


def time_ms(torch, fn, iters=10, runs=7, warmup=2):
    """Median milliseconds per call of fn: runs of `iters` calls between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iters)
    times.sort()
    return times[len(times) // 2]


def copy_bandwidth(torch, nbytes=2 * 1024**3):
    """Device-to-device copy rate in GB/s, bytes read + written (the practical HBM bandwidth)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = time_ms(torch, lambda: dst.copy_(src), iters=10, runs=5, warmup=3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (ms * 1e-3) / 1e9


def run_rudnn_bench(cmd, log_path, timeout_s):
    """Runs rudnn-bench; returns (rows as dicts, error text or None). Rows printed before a failure
    or a timeout are kept (rudnn-bench flushes each CSV line)."""
    error = None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        stdout, stderr = out.stdout, out.stderr
        if out.returncode != 0:
            error = f"exit {out.returncode}: " + stderr[-2000:]
    except FileNotFoundError:
        return [], f"{cmd[0]} not found"
    except subprocess.TimeoutExpired as e:
        def text(x):
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
        stdout, stderr = text(e.stdout), text(e.stderr)
        error = f"timed out after {timeout_s} s (rows before that are kept)"
    if log_path:
        with open(log_path, "w") as f:
            f.write(" ".join(cmd) + "\n" + stdout + stderr)
    rows = list(csv.DictReader(io.StringIO(stdout))) if stdout.strip() else []
    return rows, error


def target_line(text, value, ok):
    """'- <text>: <value> → met' ; value None → not measured."""
    if value is None:
        return f"- {text}: not measured"
    return f"- {text}: {value} → {'met' if ok else 'NOT met'}"


def default_log_dir():
    return os.environ.get("OUT", ".")
