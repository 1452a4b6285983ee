"""The gated delta rule (SPEC §7): torch.ops.rudnn.chunk_gated_delta_rule (prefill, C steps at a time)
and torch.ops.rudnn.gated_delta_rule (decode, one step at a time). Forward only: the library has no
gated delta backward."""

import torch

from ._library import define
from .errors import GatedDeltaError


def _fake(query, key, value, beta, log_decay, initial_state, query_scale, *chunk_size):
    if query.dim() != 4 or value.dim() != 4:
        raise GatedDeltaError("ShapeMismatch", "query" if query.dim() != 4 else "value", "rank 4",
                              f"rank {query.dim() if query.dim() != 4 else value.dim()}")
    # The output [B, H, T, V] and the final state float32 [B, H, K, V].
    return (query.new_empty((*query.shape[:-1], value.shape[-1])),
            query.new_empty((*query.shape[:2], query.shape[-1], value.shape[-1]), dtype=torch.float32))


_INPUTS = "Tensor query, Tensor key, Tensor value, Tensor beta, Tensor log_decay, Tensor? initial_state, float query_scale"
chunk_gated_delta_rule_op = define(f"chunk_gated_delta_rule({_INPUTS}, int chunk_size) -> (Tensor, Tensor)", _fake)
gated_delta_rule_op = define(f"gated_delta_rule({_INPUTS}) -> (Tensor, Tensor)", _fake)


def chunk_gated_delta_rule(query, key, value, beta, log_decay, initial_state=None, query_scale=1.0, chunk_size=64):
    """query, key [B, H, T, K], value [B, H, T, V], beta and log_decay [B, H, T] → (output [B, H, T, V],
    final_state float32 [B, H, K, V]); ``initial_state`` float32 [B, H, K, V] or None (zeros)."""
    return chunk_gated_delta_rule_op(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size)


def gated_delta_rule(query, key, value, beta, log_decay, initial_state=None, query_scale=1.0):
    """The same recurrence one step at a time (decode; any length)."""
    return gated_delta_rule_op(query, key, value, beta, log_decay, initial_state, query_scale)
