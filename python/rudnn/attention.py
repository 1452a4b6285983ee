"""Attention (SPEC §5): torch.ops.rudnn.attention, softmax(scale · Q Kᵀ + bias, masked) V with
grouped-query heads. Forward only: the library's dense attention has no backward (paged attention's
does)."""

import torch

from . import _C
from ._bridge import arg, empty, option, place, prepare, prepare_optional
from ._library import define
from .errors import AttentionSetupError, raise_if_failed

_F = "attention"
# rudnn::attention::AttentionStrategy's numbers; "default" is the library's default_strategy().
STRATEGIES = {"default": -1, "flash_blackbox_accelerated": 0, "flash_unit": 1, "fallback": 2, "autotune": 3}


# torch leaves out arguments equal to the schema's defaults: the kernels repeat them.
def _attention(query, key, value, mask=None, attn_bias=None, scale=None, causal=False, strategy="default"):
    chosen = option(_F, "strategy", strategy, STRATEGIES)
    q, k, v = prepare(_F, "query", query), prepare(_F, "key", key), prepare(_F, "value", value)
    m, b = prepare_optional(_F, "mask", mask), prepare_optional(_F, "attn_bias", attn_bias)
    where = place(_F, query=q, key=k, value=v, mask=m, attn_bias=b)
    out = empty(_output_shape(q, v), q.dtype, q)
    raise_if_failed(_C.attention(where, arg(q), arg(k), arg(v), arg(m), arg(b), scale, causal, chosen, arg(out)))
    return out


def _attention_fake(query, key, value, mask=None, attn_bias=None, scale=None, causal=False, strategy="default"):
    if query.dim() != 4 or value.dim() != 4:
        raise AttentionSetupError("ShapeMismatch", "query" if query.dim() != 4 else "value", "rank 4",
                                  f"rank {query.dim() if query.dim() != 4 else value.dim()}")
    return query.new_empty(_output_shape(query, value))


def _output_shape(query, value):
    """[B, Hq, Tq, Dv]; a rank the library rejects gets (0,) and the library names it."""
    return (*query.shape[:-1], value.shape[-1]) if query.dim() == 4 and value.dim() == 4 else (0,)


attention_op = define(
    "attention(Tensor query, Tensor key, Tensor value, Tensor? mask=None, Tensor? attn_bias=None, "
    "float? scale=None, bool causal=False, str strategy=\"default\") -> Tensor", _attention, _attention_fake, _F)


def attention(query, key, value, mask=None, attn_bias=None, scale=None, causal=False, strategy="default"):
    """query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] → [B, Hq, Tq, Dv].

    ``mask`` (uint8 or bool, [B or 1, Hq or 1, Tq, Tk]): nonzero/True *excludes* a key — the
    opposite of ``F.scaled_dot_product_attention``'s boolean mask. ``attn_bias`` is added to the
    scaled scores. ``causal`` is bottom-right aligned. ``strategy``: one of ``STRATEGIES``.
    """
    return attention_op(query, key, value, mask, attn_bias, scale, causal, strategy)
