"""A DeepSeek-V3-style MoE layer with rudnn swapped in, against the same layer in plain PyTorch,
forward and one training step's gradients.

    python examples/python/deepseek_moe.py [--device cpu|cuda] [--dtype float32|bfloat16]

The routed experts run as one torch.ops.rudnn.moe_layer call — grouped sigmoid routing with a
selection bias (DeepSeek's auxiliary-loss-free balancing), compact dispatch, SwiGLU experts,
weighted combine — and its backward gives the gradients of the input, the router logits and every
expert weight. The shared expert and the router projection stay in PyTorch. Then the same routed
experts through the layer's steps as separate ops (the selection, the router weights, dispatch, the
experts, combine), as a model that puts its own pieces between them would write it.
"""

import argparse

import torch
import torch.nn.functional as F

import rudnn


class MoeLayer(torch.nn.Module):
    def __init__(self, hidden=128, inter=64, experts=32, groups=8, selected_groups=4, top_k=4, scale=2.5):
        super().__init__()
        self.groups, self.selected_groups, self.top_k, self.scale = groups, selected_groups, top_k, scale
        self.router = torch.nn.Linear(hidden, experts, bias=False)
        self.bias = torch.nn.Parameter(torch.randn(experts) * 0.01, requires_grad=False)  # selection only
        self.gate = torch.nn.Parameter(torch.randn(experts, inter, hidden) * hidden ** -0.5)
        self.up = torch.nn.Parameter(torch.randn(experts, inter, hidden) * hidden ** -0.5)
        self.down = torch.nn.Parameter(torch.randn(experts, hidden, inter) * inter ** -0.5)
        self.shared = torch.nn.Sequential(torch.nn.Linear(hidden, 2 * inter, bias=False), torch.nn.SiLU(),
                                          torch.nn.Linear(2 * inter, hidden, bias=False))

    def routed_rudnn(self, x, logits):
        return rudnn.moe.swiglu_moe_grouped(x, logits, self.gate, self.up, self.down, self.bias.float(),
                                            top_k=self.top_k, groups=self.groups,
                                            selected_groups=self.selected_groups, scale=self.scale)

    def routed_rudnn_steps(self, x, logits):
        """The same through the steps: the selection (not differentiated), the selected experts' weights
        as a function of the logits (the router's gradient), dispatch, the experts, combine."""
        _, indices = rudnn.moe.route_sigmoid_grouped(logits.detach(), self.bias.float(), top_k=self.top_k,
                                                     groups=self.groups, selected_groups=self.selected_groups,
                                                     scale=self.scale)
        weights = rudnn.moe.router_weights(logits, indices, "sigmoid", renormalize=True, scale=self.scale)
        dispatched = rudnn.moe.dispatch(x, indices, self.gate.shape[0])
        rows = rudnn.moe.swiglu_experts(dispatched, self.gate, self.up, self.down)
        return rudnn.moe.combine(rows, dispatched, weights)

    def routed_torch(self, x, logits):
        """The same routing and experts token by token: the selection by sigmoid + bias within the best
        groups (sum of each group's two best), the weights sigmoid(logit) renormalized × scale."""
        scores = torch.sigmoid(logits.float())
        choice = scores + self.bias.float()
        grouped = choice.view(len(x), self.groups, -1)
        best_groups = grouped.topk(2, -1).values.sum(-1).topk(self.selected_groups, -1).indices
        keep = torch.zeros_like(grouped[..., 0], dtype=torch.bool).scatter_(1, best_groups, True)
        choice = choice.masked_fill(~keep.repeat_interleave(grouped.shape[-1], 1), float("-inf"))
        experts = choice.topk(self.top_k, -1).indices
        weights = scores.gather(1, experts)
        weights = weights / weights.sum(-1, keepdim=True) * self.scale
        out = torch.zeros_like(x, dtype=torch.float32)
        for j in range(self.top_k):
            e = experts[:, j]
            h = F.silu(torch.einsum("tih,th->ti", self.gate[e].float(), x.float()))
            h = h * torch.einsum("tih,th->ti", self.up[e].float(), x.float())
            out = out + weights[:, j, None] * torch.einsum("thi,ti->th", self.down[e].float(), h)
        return out.to(x.dtype)

    def forward(self, x, routed_by):
        logits = self.router(x)
        routed = {"layer": self.routed_rudnn, "steps": self.routed_rudnn_steps, "torch": self.routed_torch}[routed_by]
        return x + self.shared(x) + routed(x, logits)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    torch.manual_seed(0)
    layer = MoeLayer().to(device=device, dtype=dtype)
    x = torch.randn(24, 128, device=device, dtype=dtype)
    target = torch.randn_like(x)

    results = {}
    for routed_by in ("layer", "steps", "torch"):
        layer.zero_grad()
        out = layer(x, routed_by)
        F.mse_loss(out.float(), target.float()).backward()
        results[routed_by] = (out.detach(), {n: p.grad.clone() for n, p in layer.named_parameters() if p.grad is not None})
    theirs, their_grads = results["torch"]
    for routed_by, how in (("layer", "one moe_layer call"), ("steps", "dispatch → experts → combine")):
        ours, our_grads = results[routed_by]
        print(f"MoE layer [24, 128] {args.dtype} on {device}, 32 experts in 8 groups, top-4 of 4 groups, {how}: "
              f"max |rudnn − torch| = {(ours.float() - theirs.float()).abs().max().item():.3e}")
        for name in ("router.weight", "gate", "up", "down"):
            diff = (our_grads[name].float() - their_grads[name].float()).abs().max().item()
            size = their_grads[name].float().abs().max().item()
            print(f"  d{name:<14} max |rudnn − torch| = {diff:.3e} (largest gradient {size:.3e})")

if __name__ == "__main__":
    main()
