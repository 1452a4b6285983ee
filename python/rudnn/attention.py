"""Attention (SPEC §5): torch.ops.rudnn.attention, softmax(scale · Q Kᵀ + bias, masked) V with
grouped-query heads. Forward only: the library's dense attention has no backward (paged attention's
does)."""

from ._library import define
from .errors import AttentionSetupError

# The strategy option's values (python/src/attention.cpp); "default" is the library's default_strategy().
STRATEGIES = ("default", "flash_blackbox_accelerated", "flash_unit", "fallback", "autotune")


def _attention_fake(query, key, value, mask=None, attn_bias=None, scale=None, causal=False, strategy="default"):
    if query.dim() != 4 or value.dim() != 4:
        raise AttentionSetupError("ShapeMismatch", "query" if query.dim() != 4 else "value", "rank 4",
                                  f"rank {query.dim() if query.dim() != 4 else value.dim()}")
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


attention_op = define(
    "attention(Tensor query, Tensor key, Tensor value, Tensor? mask=None, Tensor? attn_bias=None, "
    "float? scale=None, bool causal=False, str strategy=\"default\") -> Tensor", _attention_fake)


def attention(query, key, value, mask=None, attn_bias=None, scale=None, causal=False, strategy="default"):
    """query [B, Hq, Tq, D], key [B, Hkv, Tk, D], value [B, Hkv, Tk, Dv] → [B, Hq, Tq, Dv].

    ``mask`` (uint8 or bool, [B or 1, Hq or 1, Tq, Tk]): nonzero/True *excludes* a key — the
    opposite of ``F.scaled_dot_product_attention``'s boolean mask. ``attn_bias`` is added to the
    scaled scores. ``causal`` is bottom-right aligned. ``strategy``: one of ``STRATEGIES``.
    """
    return attention_op(query, key, value, mask, attn_bias, scale, causal, strategy)
