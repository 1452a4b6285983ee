"""Paged attention and MLA (SPEC §8, §9): attention over a KV cache stored in fixed-size physical
pages, for packed variable-length prefill and decode rows in one call.

A ``PagedPlan`` is the schedule — each sequence's page table and valid length, each query row's
sequence and position — validated and uploaded once to a device, and reusable while the schedule
holds. Its calls are custom ops (torch.ops.rudnn.paged_attention, paged_mla, paged_append), which
find the plan by its ``id``; attention and MLA have autograd through the library's backward: the
atomic path by default (as the guide says), the deterministic ordered path with
``deterministic_backward=True``.
"""

import operator

import torch

from . import _C
from ._library import define
from .errors import PagedAttentionError, raise_if_failed


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
        if device.type == "cuda" and not torch.cuda.is_available():
            raise PagedAttentionError("NoDevice", "device", "a CUDA device torch can use", str(device))
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device.type not in ("cpu", "cuda"):
            raise PagedAttentionError("Unsupported", "device", "a CPU or CUDA device", str(device))
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
        page_size, pages = (_integers(name, [value], 2**63)[0] for name, value in (("page_size", page_size),
                                                                                     ("pages", pages)))
        failure, plan = _C.paged_plan(device.type == "cuda", device.index or 0, stream, page_size, pages,
                                      *_schedule(tables, lengths, sequence_ids, positions), bool(deterministic_backward))
        raise_if_failed(failure)
        # `id`: the number by which torch.ops.rudnn.paged_* find this plan while it lives (a plain
        # attribute, which torch.compile reads as a constant).
        self._plan, self.device, self.id = plan, device, plan.id

    @property
    def queries(self):
        return self._plan.queries

    @property
    def generation(self):
        """The schedule's number: 1 when made, one more at each replan."""
        return self._plan.generation

    def replan(self, tables, lengths, sequence_ids, positions, in_place=False):
        """A new schedule (the same page size, page count, device and stream) under the same ``id``, as a
        serving loop makes at every step; a ``torch.compile``'d graph, in which the id is a constant, stays
        valid (it recompiles only when shapes change). Rejected (the schedule kept) when invalid. A backward
        whose forward ran on an earlier schedule raises instead of differentiating the new one.

        ``in_place=True`` writes the schedule into this plan's own metadata buffers instead of new ones, so
        that a CUDA graph captured over this plan's calls replays with it. It must have the plan's query
        rows and sequences and tables no wider than the plan's (else ``ShapeMismatch`` naming ``host``);
        it is queued on the plan's stream without waiting for it (work queued there before reads the old
        schedule), so replay graphs on that stream, or make the replaying stream wait for the plan's
        (``stream.wait_stream(plan_stream)``); it must not run during a capture, nor while another thread
        calls the plan. A graph that captured a deterministic (ordered) backward must be captured again."""
        raise_if_failed(_C.paged_replan(self._plan, *_schedule(tables, lengths, sequence_ids, positions),
                                        bool(in_place)))

    @property
    def deterministic_backward(self):
        """The backward's path, read when a backward runs: the ordered, bitwise-deterministic one
        (True) or the atomic one (False, the default)."""
        return self._plan.deterministic_backward

    @deterministic_backward.setter
    def deterministic_backward(self, on):
        self._plan.deterministic_backward = bool(on)

    def attention(self, query, key, value, scale=None, causal=True, splits=1):
        """query [queries, Hq, D]; the paged caches key [pages, page_size, Hkv, D] and value [pages,
        page_size, Hkv, Dv] → [queries, Hq, Dv]. ``scale`` defaults to 1/√D; ``splits`` in 2..=32
        is split-KV."""
        if scale is None:  # 1/√D; a query without a positive last dim keeps 1.0 and is refused by the library
            width = query.shape[-1] if isinstance(query, torch.Tensor) and query.dim() >= 1 else 0
            scale = width ** -0.5 if width > 0 else 1.0
        return paged_attention_op(query, key, value, self.id, scale, causal, splits)[0]

    def mla(self, query, query_rope, latent, key_rope, scale, causal=True, splits=1):
        """Absorbed MLA: query [queries, H, R], query_rope [queries, H, P], the paged latent [pages,
        page_size, 1, R] and key_rope [pages, page_size, 1, P]; scores = scale·(query·latent +
        query_rope·key_rope), values the latent rows → [queries, H, R]."""
        return paged_mla_op(query, query_rope, latent, key_rope, self.id, scale, causal, splits)[0]

    def append(self, key, value, key_cache, value_cache):
        """Writes key [queries, Hkv, D] and value [queries, Hkv, Dv] at each query row's position,
        into the caches in place (they must be contiguous)."""
        paged_append_op(key, value, key_cache, value_cache, self.id)


def _schedule(tables, lengths, sequence_ids, positions):
    """The schedule's fields as lists of Python ints (the library checks their meaning)."""
    return ([_integers(f"tables[{s}]", table, 2**31) for s, table in enumerate(tables)],
            *(_integers(name, values, 2**63) for name, values in
              (("lengths", lengths), ("sequence_ids", sequence_ids), ("positions", positions))))


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


def _generation_fake():
    return torch.empty((), dtype=torch.int64)


def _paged_attention_fake(query, key, value, *args):
    return query.new_empty((*query.shape[:-1], value.shape[-1])), _generation_fake()


def _paged_mla_fake(query, *args):
    return torch.empty_like(query, memory_format=torch.contiguous_format), _generation_fake()


def _backward_fake(grad_out, generation, *args):
    """The wanted gradients in the query's dtype, the others empty."""
    *tensors, plan, scale, causal, wanted = args
    return tuple(t.new_empty(t.shape if w else (0,), dtype=tensors[0].dtype) for t, w in zip(tensors, wanted))


# The plan is found by its id (python/src/paged_plan.h). attention and MLA are differentiable in every
# tensor through their backward ops: the atomic path, or the ordered one when the plan's
# deterministic_backward is set when the backward runs. `wanted`: which gradients to compute (the
# others are empty tensors and cost nothing). The forward ops also return the schedule's generation
# (a 0-dim int64 CPU tensor), which the backward ops take back to check that the plan was not
# re-planned in between — in eager autograd and in a torch.compile'd backward alike.
_CALL = "int plan, float scale, bool causal"
paged_attention_op = define(
    f"paged_attention(Tensor query, Tensor key, Tensor value, {_CALL}, int splits) -> (Tensor, Tensor)",
    _paged_attention_fake)
paged_mla_op = define(
    f"paged_mla(Tensor query, Tensor query_rope, Tensor latent, Tensor key_rope, {_CALL}, int splits) "
    "-> (Tensor, Tensor)", _paged_mla_fake)
paged_attention_backward_op = define(
    f"paged_attention_backward(Tensor grad_out, Tensor generation, Tensor query, Tensor key, Tensor value, {_CALL}, "
    "bool[3] wanted) -> (Tensor, Tensor, Tensor)", _backward_fake)
paged_mla_backward_op = define(
    "paged_mla_backward(Tensor grad_out, Tensor generation, Tensor query, Tensor query_rope, Tensor latent, "
    f"Tensor key_rope, {_CALL}, bool[4] wanted) -> (Tensor, Tensor, Tensor, Tensor)", _backward_fake)
# Mutating: no gradient; the kernel moves the caches' version counters, as torch's in-place ops do.
paged_append_op = define(
    "paged_append(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, int plan) -> ()",
    lambda *args: None)
