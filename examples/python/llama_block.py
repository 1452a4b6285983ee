"""A Llama-style decoder block with rudnn swapped in, against the same block in plain PyTorch.

    python examples/python/llama_block.py [--device cpu|cuda] [--dtype float32|bfloat16]

rms_norm and attention (causal, grouped-query) run through torch.ops.rudnn for a prefill of a few
tokens; then one decode step per sequence runs paged attention over a KV cache in pages
(rudnn.paged_attention.PagedPlan, with paged_append writing the new token's key and value). The
projections, RoPE and the MLP stay in PyTorch. Prints the largest difference from the PyTorch block.
"""

import argparse

import torch
import torch.nn.functional as F

import rudnn


class Block(torch.nn.Module):
    def __init__(self, hidden=256, heads=4, kv_heads=2, inter=512):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.norm1 = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.norm2 = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.q = torch.nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.kv = torch.nn.Linear(hidden, 2 * kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.gate_up = torch.nn.Linear(hidden, 2 * inter, bias=False)
        self.down = torch.nn.Linear(inter, hidden, bias=False)

    def rms_norm(self, x, gamma, use_rudnn):
        if use_rudnn:
            return rudnn.normalization.rms_norm(x, gamma.float(), 1e-6)
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma.float()).to(x.dtype)

    def rope(self, x, positions):  # x [..., T, D]
        half = self.head_dim // 2
        freq = positions[:, None].float() * (10000.0 ** (-torch.arange(half, device=x.device) / half))
        cos, sin = freq.cos().to(x.dtype), freq.sin().to(x.dtype)
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def project(self, h, positions):  # h [B, T, hidden] → q [B, Hq, T, D], k, v [B, Hkv, T, D]
        batch, steps, _ = h.shape
        q = self.q(h).view(batch, steps, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(h).view(batch, steps, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return self.rope(q, positions), self.rope(k, positions), v

    def finish(self, x, attended, use_rudnn):  # attended [B, T, Hq·D]
        x = x + self.o(attended)
        up_gate = self.gate_up(self.rms_norm(x, self.norm2, use_rudnn))
        gate, up = up_gate.chunk(2, -1)
        return x + self.down(F.silu(gate) * up)

    def prefill(self, x, use_rudnn):  # x [B, T, hidden]
        positions = torch.arange(x.shape[1], device=x.device)
        q, k, v = self.project(self.rms_norm(x, self.norm1, use_rudnn), positions)
        if use_rudnn:
            a = rudnn.attention.attention(q, k, v, causal=True)
        else:
            group = self.heads // self.kv_heads
            a = F.scaled_dot_product_attention(q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1),
                                               is_causal=True)
        return self.finish(x, a.transpose(1, 2).flatten(2), use_rudnn), a, k, v


def difference(a, b):
    return (a.float() - b.float()).abs().max().item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    torch.manual_seed(0)
    block = Block().to(device=device, dtype=dtype)
    batch, steps, page_size = 2, 11, 4
    x = torch.randn(batch, steps, 256, device=device, dtype=dtype)

    with torch.no_grad():
        ours, ours_attention, k, v = block.prefill(x, use_rudnn=True)
        theirs, their_attention, _, _ = block.prefill(x, use_rudnn=False)
        print(f"prefill  [{batch}, {steps}, 256] {args.dtype} on {device}: max |rudnn − torch| = "
              f"{difference(ours, theirs):.3e} (block), {difference(ours_attention, their_attention):.3e} (attention)")

        # Decode: the prefill's keys and values in a paged cache (sequence b in pages b·3 .. b·3 + 2),
        # then one new token per sequence at position `steps`.
        pages = 3 * batch
        tables = [[3 * b + i for i in range(3)] for b in range(batch)]
        key_cache = torch.zeros(pages, page_size, block.kv_heads, block.head_dim, device=device, dtype=dtype)
        value_cache = torch.zeros_like(key_cache)
        # One plan, as a serving loop keeps it: the prefill's schedule, then re-planned for each decode step
        # (the same id: a torch.compile'd step would not recompile).
        plan = rudnn.paged_attention.PagedPlan(page_size, pages, tables, [steps] * batch,
                                               [b for b in range(batch) for _ in range(steps)],
                                               list(range(steps)) * batch, device)
        plan.append(k.permute(0, 2, 1, 3).flatten(0, 1), v.permute(0, 2, 1, 3).flatten(0, 1), key_cache, value_cache)
        token = torch.randn(batch, 1, 256, device=device, dtype=dtype)
        plan.replan(tables, [steps + 1] * batch, list(range(batch)), [steps] * batch)
        position = torch.tensor([steps], device=device)
        q, k_new, v_new = block.project(block.rms_norm(token, block.norm1, True), position)
        plan.append(k_new[:, :, 0], v_new[:, :, 0], key_cache, value_cache)
        a = plan.attention(q[:, :, 0], key_cache, value_cache, causal=True)
        ours = block.finish(token, a.flatten(1)[:, None], use_rudnn=True)
        # PyTorch: the whole sequence again, the new token's row.
        theirs, their_attention, _, _ = block.prefill(torch.cat([x, token], 1), use_rudnn=False)
        print(f"decode   one token after {steps} (paged, {page_size}-token pages): max |rudnn − torch| = "
              f"{difference(ours[:, 0], theirs[:, -1]):.3e} (block), "
              f"{difference(a, their_attention[:, :, -1]):.3e} (attention)")


if __name__ == "__main__":
    main()
