"""Paged attention and MLA (SPEC §8, §9): attention over a KV cache stored in fixed-size physical
pages, for packed variable-length prefill and decode rows in one call.

A ``PagedPlan`` is the schedule — each sequence's page table and valid length, each query row's
sequence and position — validated and uploaded once to a device, and reusable while the schedule
holds. Its calls are custom ops (torch.ops.rudnn.paged_attention, paged_mla, paged_append), which
find the plan by its ``id``; attention and MLA have autograd through the library's backward: the
atomic path by default (as the guide says), the deterministic ordered path with
``deterministic_backward=True``.
"""

import itertools
import operator
import weakref

import torch

from . import _C
from ._bridge import arg, empty, place, prepare
from ._library import define
from .errors import PagedAttentionError, raise_if_failed

_F = "paged_attention"
_PLANS = weakref.WeakValueDictionary()
_IDS = itertools.count(1)


class PagedPlan:
    """The schedule of paged calls on one device (and, for CUDA, the stream current when it is made:
    its calls must run on that stream).

    ``tables[s]``: sequence s's physical page ids in order (each < ``pages``); ``lengths[s]``: its
    valid KV length (≤ len(tables[s]) · page_size); ``sequence_ids[r]``, ``positions[r]``: query row
    r's sequence and absolute position (< lengths[sequence]). A row of a sequence of length L at
    position p sees keys 0..L−1, or 0..p when causal.
    """

    def __init__(self, page_size, pages, tables, lengths, sequence_ids, positions, device="cpu",
                 deterministic_backward=False):
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        where = place(_F, anchor=torch.empty(0, device=device))
        page_size, pages = (_integers(name, [value], 2**63)[0] for name, value in (("page_size", page_size),
                                                                                     ("pages", pages)))
        tables = [_integers(f"tables[{s}]", table, 2**31) for s, table in enumerate(tables)]
        lengths, sequence_ids, positions = (_integers(name, values, 2**63) for name, values in
                                            (("lengths", lengths), ("sequence_ids", sequence_ids),
                                             ("positions", positions)))
        failure, plan = _C.paged_plan(where, page_size, pages, tables, lengths, sequence_ids, positions)
        raise_if_failed(failure)
        self._plan, self.device, self.deterministic_backward = plan, device, deterministic_backward
        self.id = next(_IDS)
        _PLANS[self.id] = self

    @property
    def queries(self):
        return self._plan.queries

    def attention(self, query, key, value, scale=None, causal=True, splits=1):
        """query [queries, Hq, D]; the paged caches key [pages, page_size, Hkv, D] and value [pages,
        page_size, Hkv, Dv] → [queries, Hq, Dv]. ``scale`` defaults to 1/√D; ``splits`` in 2..=32
        is split-KV."""
        scale = query.shape[-1] ** -0.5 if scale is None else scale
        return paged_attention_op(query, key, value, self.id, scale, causal, splits)

    def mla(self, query, query_rope, latent, key_rope, scale, causal=True, splits=1):
        """Absorbed MLA: query [queries, H, R], query_rope [queries, H, P], the paged latent [pages,
        page_size, 1, R] and key_rope [pages, page_size, 1, P]; scores = scale·(query·latent +
        query_rope·key_rope), values the latent rows → [queries, H, R]."""
        return paged_mla_op(query, query_rope, latent, key_rope, self.id, scale, causal, splits)

    def append(self, key, value, key_cache, value_cache):
        """Writes key [queries, Hkv, D] and value [queries, Hkv, Dv] at each query row's position,
        into the caches in place (they must be contiguous)."""
        paged_append_op(key, value, key_cache, value_cache, self.id)


def _integers(name, values, bound):
    """A schedule field as Python ints (a tensor or any sequence of integers), each in (−bound, bound); the
    library checks the values' meaning."""
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    out = []
    for i, value in enumerate(values):
        try:
            value = operator.index(value)
        except TypeError:
            raise PagedAttentionError("InvalidValue", f"{name}[{i}]", "an integer", repr(value)) from None
        if not -bound < value < bound:
            raise PagedAttentionError("InvalidValue", f"{name}[{i}]", f"an integer of magnitude below {bound}",
                                      str(value))
        out.append(value)
    return out


def _plan(plan_id):
    plan = _PLANS.get(plan_id)
    if plan is None:
        raise PagedAttentionError("InvalidValue", "plan", "the id of a live rudnn.paged_attention.PagedPlan",
                                  str(plan_id))
    return plan


def _where(plan, **tensors):
    """The call's place: the plan's device, every tensor on it."""
    for name, tensor in tensors.items():
        if tensor.device != plan.device:
            raise PagedAttentionError("DeviceMismatch", name, f"the plan's device ({plan.device})", str(tensor.device))
    return place(_F, **tensors)


def _check_splits(splits):
    if splits < 1:
        raise PagedAttentionError("InvalidValue", "splits", "1 (unsplit) or 2..=32", str(splits))


def _paged_attention(query, key, value, plan, scale, causal, splits):
    plan = _plan(plan)
    _check_splits(splits)
    q, k, v = prepare(_F, "query", query), prepare(_F, "key", key), prepare(_F, "value", value)
    where = _where(plan, query=q, key=k, value=v)
    out = empty((*q.shape[:-1], v.shape[-1]) if q.dim() == 3 and v.dim() == 4 else (0,), q.dtype, q)
    raise_if_failed(_C.paged_attention(where, plan._plan, arg(q), arg(k), arg(v), scale, causal, splits, arg(out)))
    return out


def _paged_attention_fake(query, key, value, *args):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def _paged_mla(query, query_rope, latent, key_rope, plan, scale, causal, splits):
    plan = _plan(plan)
    _check_splits(splits)
    q, qp = prepare(_F, "query", query), prepare(_F, "query_rope", query_rope)
    latent, kp = prepare(_F, "latent", latent), prepare(_F, "key_rope", key_rope)
    where = _where(plan, query=q, query_rope=qp, latent=latent, key_rope=kp)
    out = empty(q.shape, q.dtype, q)
    raise_if_failed(_C.paged_mla(where, plan._plan, arg(q), arg(qp), arg(latent), arg(kp), scale, causal, splits,
                                 arg(out)))
    return out


def _paged_mla_fake(query, *args):
    return torch.empty_like(query, memory_format=torch.contiguous_format)


def _gradients(like, tensors, wanted):
    """Gradient buffers for the wanted inputs (None for the others), in q's dtype. The library writes
    every element: a cache slot no query row reaches gets an exact 0."""
    return [empty(t.shape, like.dtype, like) if w else None for t, w in zip(tensors, wanted)]


def _paged_attention_backward(grad_out, query, key, value, plan, scale, causal, wanted):
    plan = _plan(plan)
    q, k, v = prepare(_F, "query", query), prepare(_F, "key", key), prepare(_F, "value", value)
    dy = prepare(_F, "grad_out", grad_out)
    where = _where(plan, query=q, key=k, value=v, grad_out=dy)
    dq, dk, dv = _gradients(q, (q, k, v), wanted)
    raise_if_failed(_C.paged_attention_backward(where, plan._plan, arg(q), arg(k), arg(v), arg(dy), scale, causal,
                                                plan.deterministic_backward, arg(dq), arg(dk), arg(dv)))
    return tuple(g if g is not None else q.new_empty(0) for g in (dq, dk, dv))


def _paged_attention_backward_fake(grad_out, query, key, value, plan, scale, causal, wanted):
    return tuple(t.new_empty(t.shape if w else (0,), dtype=query.dtype) for t, w in zip((query, key, value), wanted))


def _paged_mla_backward(grad_out, query, query_rope, latent, key_rope, plan, scale, causal, wanted):
    plan = _plan(plan)
    q, qp = prepare(_F, "query", query), prepare(_F, "query_rope", query_rope)
    latent, kp = prepare(_F, "latent", latent), prepare(_F, "key_rope", key_rope)
    dy = prepare(_F, "grad_out", grad_out)
    where = _where(plan, query=q, query_rope=qp, latent=latent, key_rope=kp, grad_out=dy)
    grads = _gradients(q, (q, qp, latent, kp), wanted)
    raise_if_failed(_C.paged_mla_backward(where, plan._plan, arg(q), arg(qp), arg(latent), arg(kp), arg(dy), scale,
                                          causal, plan.deterministic_backward, *(arg(g) for g in grads)))
    return tuple(g if g is not None else q.new_empty(0) for g in grads)


def _paged_mla_backward_fake(grad_out, query, query_rope, latent, key_rope, plan, scale, causal, wanted):
    return tuple(t.new_empty(t.shape if w else (0,), dtype=query.dtype)
                 for t, w in zip((query, query_rope, latent, key_rope), wanted))


def _paged_append(key, value, key_cache, value_cache, plan):
    plan = _plan(plan)
    for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
        if not cache.is_contiguous() or cache.data_ptr() % 16:
            raise PagedAttentionError("InvalidValue", name, "a contiguous, 16-byte aligned cache (written in place)",
                                      f"strides {tuple(cache.stride())} at address {cache.data_ptr():#x}")
    k, v = prepare(_F, "key", key), prepare(_F, "value", value)
    kc, vc = prepare(_F, "key_cache", key_cache), prepare(_F, "value_cache", value_cache)
    where = _where(plan, key=k, value=v, key_cache=kc, value_cache=vc)
    raise_if_failed(_C.paged_append(where, plan._plan, arg(k), arg(v), arg(kc), arg(vc)))
    # A mutated input's version moves (as for torch's in-place ops), so a backward that saved the caches
    # before this append fails loudly instead of reading the new rows.
    for cache in (key_cache, value_cache):
        if not cache.is_inference():
            torch.autograd.graph.increment_version(cache)


_CALL = "int plan, float scale, bool causal"
paged_attention_op = define(
    f"paged_attention(Tensor query, Tensor key, Tensor value, {_CALL}, int splits) -> Tensor",
    _paged_attention, _paged_attention_fake)
paged_mla_op = define(
    f"paged_mla(Tensor query, Tensor query_rope, Tensor latent, Tensor key_rope, {_CALL}, int splits) -> Tensor",
    _paged_mla, _paged_mla_fake)
# `wanted`: which gradients to compute (the others are empty tensors and cost nothing). The plan's
# deterministic_backward picks the path when the backward runs.
paged_attention_backward_op = define(
    f"paged_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, {_CALL}, "
    "bool[3] wanted) -> (Tensor, Tensor, Tensor)", _paged_attention_backward, _paged_attention_backward_fake, _F)
paged_mla_backward_op = define(
    f"paged_mla_backward(Tensor grad_out, Tensor query, Tensor query_rope, Tensor latent, Tensor key_rope, {_CALL}, "
    "bool[4] wanted) -> (Tensor, Tensor, Tensor, Tensor)", _paged_mla_backward, _paged_mla_backward_fake, _F)
paged_append_op = define(
    "paged_append(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, int plan) -> ()",
    _paged_append, lambda *args: None)  # mutating: torch allows no autograd formula; it has no gradient


def _setup_context(ctx, inputs, output):
    # The plan is found by its id when the backward runs. In eager mode the graph keeps the plan alive until
    # then; a compiled graph (where the id may be symbolic here) does not: a plan dropped before such a
    # backward is the backward's InvalidValue naming `plan`.
    *tensors, plan, scale, causal, _ = inputs
    ctx.save_for_backward(*tensors)
    ctx.call = (plan, scale, causal)
    ctx.plan = _PLANS.get(plan) if isinstance(plan, int) else None


def _backward_with(op, count):
    def backward(ctx, grad_out):
        wanted = list(ctx.needs_input_grad[:count])
        grads = op(grad_out.contiguous(), *ctx.saved_tensors, *ctx.call, wanted)
        return tuple(g if w else None for g, w in zip(grads, wanted)) + (None,) * 4

    return backward


torch.library.register_autograd("rudnn::paged_attention", _backward_with(paged_attention_backward_op, 3),
                                setup_context=_setup_context)
torch.library.register_autograd("rudnn::paged_mla", _backward_with(paged_mla_backward_op, 4),
                                setup_context=_setup_context)
