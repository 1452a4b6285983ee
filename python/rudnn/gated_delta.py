"""The gated delta rule (SPEC §7): torch.ops.rudnn.chunk_gated_delta_rule (prefill, C steps at a time)
and torch.ops.rudnn.gated_delta_rule (decode, one step at a time). Forward only: the library has no
gated delta backward."""

import torch

from . import _C
from ._bridge import arg, empty, place, prepare, prepare_optional
from ._library import define
from .errors import GatedDeltaError, raise_if_failed

_F = "gated_delta"


def _run(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size):
    q, k, v = prepare(_F, "query", query), prepare(_F, "key", key), prepare(_F, "value", value)
    b, g = prepare(_F, "beta", beta), prepare(_F, "log_decay", log_decay)
    s0 = prepare_optional(_F, "initial_state", initial_state)
    where = place(_F, query=q, key=k, value=v, beta=b, log_decay=g, initial_state=s0)
    output_shape, state_shape = _shapes(q, v)
    output, final_state = empty(output_shape, q.dtype, q), empty(state_shape, torch.float32, q)
    raise_if_failed(_C.gated_delta_rule(where, arg(q), arg(k), arg(v), arg(b), arg(g), arg(s0), query_scale,
                                        chunk_size, arg(output), arg(final_state)))
    return output, final_state


def _chunk(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size):
    if chunk_size == 0:  # 0 selects the token-by-token kernel in the binding: not a chunk size
        raise GatedDeltaError("InvalidValue", "chunk_size", "1 ≤ chunk_size ≤ 1024", "0")
    return _run(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size)


def _step(query, key, value, beta, log_decay, initial_state, query_scale):
    return _run(query, key, value, beta, log_decay, initial_state, query_scale, 0)


def _shapes(query, value):
    """The output [B, H, T, V] and state [B, H, K, V] shapes; a rank the library rejects gets (0,) and
    the library names it."""
    if query.dim() != 4 or value.dim() != 4:
        return (0,), (0,)
    return (*query.shape[:-1], value.shape[-1]), (*query.shape[:2], query.shape[-1], value.shape[-1])


def _fake(query, key, value, beta, log_decay, initial_state, query_scale, *chunk_size):
    if query.dim() != 4 or value.dim() != 4:
        raise GatedDeltaError("ShapeMismatch", "query" if query.dim() != 4 else "value", "rank 4",
                              f"rank {query.dim() if query.dim() != 4 else value.dim()}")
    output_shape, state_shape = _shapes(query, value)
    return query.new_empty(output_shape), query.new_empty(state_shape, dtype=torch.float32)


_INPUTS = "Tensor query, Tensor key, Tensor value, Tensor beta, Tensor log_decay, Tensor? initial_state, float query_scale"
chunk_gated_delta_rule_op = define(f"chunk_gated_delta_rule({_INPUTS}, int chunk_size) -> (Tensor, Tensor)", _chunk,
                                   _fake, _F)
gated_delta_rule_op = define(f"gated_delta_rule({_INPUTS}) -> (Tensor, Tensor)", _step, _fake, _F)


def chunk_gated_delta_rule(query, key, value, beta, log_decay, initial_state=None, query_scale=1.0, chunk_size=64):
    """query, key [B, H, T, K], value [B, H, T, V], beta and log_decay [B, H, T] → (output [B, H, T, V],
    final_state float32 [B, H, K, V]); ``initial_state`` float32 [B, H, K, V] or None (zeros)."""
    return chunk_gated_delta_rule_op(query, key, value, beta, log_decay, initial_state, query_scale, chunk_size)


def gated_delta_rule(query, key, value, beta, log_decay, initial_state=None, query_scale=1.0):
    """The same recurrence one step at a time (decode; any length)."""
    return gated_delta_rule_op(query, key, value, beta, log_decay, initial_state, query_scale)
