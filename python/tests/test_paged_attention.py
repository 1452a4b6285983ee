"""rudnn.paged_attention.PagedPlan — torch.ops.rudnn.paged_attention, paged_mla (with autograd: the
atomic and the deterministic backward) and paged_append — against a float64 reference that gathers
each sequence's keys through its page table."""

import pytest
import torch
from conftest import close, devices

import rudnn

PAGE_SIZE, PAGES = 4, 9
# Two sequences sharing page 2 (a shared prefix); page 8 is in no table (its gradient must be 0).
TABLES = [[0, 2, 1, 5], [2, 3, 6, 7]]
LENGTHS = [14, 11]
# Prefill rows of sequence 0, a decode row of sequence 1, and one more of sequence 0.
SEQUENCE_IDS = [0, 0, 0, 1, 0]
POSITIONS = [3, 4, 5, 10, 13]


def generation(p):
    """The generation tensor a forward op returns for `p`'s current schedule (the backward ops take it)."""
    return torch.tensor(p.generation, dtype=torch.int64)


def plan(device="cpu", deterministic=False):
    return rudnn.paged_attention.PagedPlan(PAGE_SIZE, PAGES, TABLES, LENGTHS, SEQUENCE_IDS, POSITIONS, device,
                                           deterministic_backward=deterministic)


def history(cache, sequence):
    """[L, heads, dim]: the sequence's valid keys (or values) gathered through its page table."""
    rows = [cache[TABLES[sequence][j // PAGE_SIZE], j % PAGE_SIZE] for j in range(LENGTHS[sequence])]
    return torch.stack(rows)


def reference(q, k_cache, v_cache, scale, causal, qp=None, kp=None):
    """Each query row against its sequence's keys 0..L−1 (0..position when causal), in float64."""
    outputs = []
    for r, (s, p) in enumerate(zip(SEQUENCE_IDS, POSITIONS)):
        keys, values = history(k_cache, s), history(v_cache, s)
        visible = p + 1 if causal else LENGTHS[s]
        keys, values = keys[:visible], values[:visible]
        group = q.shape[1] // keys.shape[1]
        keys, values = keys.repeat_interleave(group, 1), values.repeat_interleave(group, 1)
        scores = torch.einsum("hd,jhd->hj", q[r], keys)
        if qp is not None:
            scores = scores + torch.einsum("hd,jhd->hj", qp[r], history(kp, s)[:visible].expand(-1, q.shape[1], -1))
        outputs.append(torch.einsum("hj,jhd->hd", torch.softmax(scale * scores, -1), values))
    return torch.stack(outputs)


def leaves(*tensors):
    return [t.detach().double().cpu().requires_grad_() for t in tensors]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("causal, splits, deterministic", [(True, 1, False), (False, 3, True), (True, 2, True)])
def test_attention_and_gradients(seed, device, dtype, causal, splits, deterministic):
    tol = 3e-5 if dtype == torch.float32 else 3e-2
    q = torch.randn(5, 4, 32, dtype=dtype, device=device, requires_grad=True)
    k = torch.randn(PAGES, PAGE_SIZE, 2, 32, dtype=dtype, device=device, requires_grad=True)
    v = torch.randn(PAGES, PAGE_SIZE, 2, 16, dtype=dtype, device=device, requires_grad=True)
    out = plan(device, deterministic).attention(q, k, v, scale=0.2, causal=causal, splits=splits)
    q64, k64, v64 = leaves(q, k, v)
    expected = reference(q64, k64, v64, 0.2, causal)
    close(out, expected, tol, tol)
    grad = torch.randn(expected.shape, dtype=torch.float64)
    out.backward(grad.to(dtype).to(device))
    expected.backward(grad)
    for got, want in ((q.grad, q64.grad), (k.grad, k64.grad), (v.grad, v64.grad)):
        close(got, want, 4 * tol, 4 * tol)
    assert k.grad[8].abs().max() == 0 and v.grad[8].abs().max() == 0  # page 8 is in no table


def test_only_the_wanted_gradients(seed):
    q, k, v = torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    v.requires_grad_()
    p = plan()
    p.attention(q, k, v).sum().backward()
    q64, k64, v64 = leaves(q, k, v)
    reference(q64, k64, v64, 0.25, True).sum().backward()
    close(v.grad, v64.grad, 1e-4, 1e-4)
    # The backward op computes only what `wanted` names: the others come back empty.
    dq, dk, dv = torch.ops.rudnn.paged_attention_backward(torch.ones(5, 2, 16), generation(p), q, k, v, p.id, 0.25,
                                                          True, [False, False, True])
    assert dq.numel() == 0 and dk.numel() == 0 and dv.shape == v.shape
    close(dv, v64.grad, 1e-4, 1e-4)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("deterministic, splits", [(False, 1), (True, 4)])
def test_mla_and_gradients(seed, device, deterministic, splits):
    q, qp = torch.randn(5, 4, 32, device=device, requires_grad=True), torch.randn(5, 4, 16, device=device,
                                                                                  requires_grad=True)
    latent = torch.randn(PAGES, PAGE_SIZE, 1, 32, device=device, requires_grad=True)
    kp = torch.randn(PAGES, PAGE_SIZE, 1, 16, device=device, requires_grad=True)
    out = plan(device, deterministic).mla(q, qp, latent, kp, scale=0.15, causal=True, splits=splits)
    q64, qp64, latent64, kp64 = leaves(q, qp, latent, kp)
    expected = reference(q64, latent64, latent64, 0.15, True, qp64, kp64)
    close(out, expected, 3e-5, 3e-5)
    grad = torch.randn(expected.shape, dtype=torch.float64)
    out.backward(grad.float().to(device))
    expected.backward(grad)
    for got, want in ((q, q64), (qp, qp64), (latent, latent64), (kp, kp64)):
        close(got.grad, want.grad, 1e-4, 1e-4)


@pytest.mark.parametrize("device", devices())
def test_append_writes_the_caches_in_place(seed, device):
    k_cache, v_cache = (torch.zeros(PAGES, PAGE_SIZE, 2, d, device=device) for d in (8, 4))
    key, value = torch.randn(5, 2, 8, device=device), torch.randn(5, 2, 4, device=device)
    versions = k_cache._version, v_cache._version
    plan(device).append(key, value, k_cache, v_cache)
    for r, (s, p) in enumerate(zip(SEQUENCE_IDS, POSITIONS)):
        page, slot = TABLES[s][p // PAGE_SIZE], p % PAGE_SIZE
        assert torch.equal(k_cache[page, slot], key[r]) and torch.equal(v_cache[page, slot], value[r])
    for cache in (k_cache, v_cache):  # nothing else written
        assert int((cache != 0).any(-1).any(-1).sum()) == 5
    assert k_cache._version > versions[0] and v_cache._version > versions[1]


def test_append_after_a_forward_fails_its_backward(seed):
    """The caches' versions move: autograd refuses a backward that saved them before the append."""
    q = torch.randn(5, 2, 16)
    k = torch.randn(PAGES, PAGE_SIZE, 1, 16, requires_grad=True)
    k_cache, v_cache = k.detach().clone(), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    p = plan()
    out = p.attention(q, k_cache.requires_grad_(), v_cache)
    with torch.no_grad():
        p.append(torch.randn(5, 1, 16), torch.randn(5, 1, 16), k_cache, v_cache)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_opcheck_and_compile(seed):
    p = plan()
    q = torch.randn(5, 2, 16, requires_grad=True)
    k = torch.randn(PAGES, PAGE_SIZE, 1, 16, requires_grad=True)
    v = torch.randn(PAGES, PAGE_SIZE, 1, 16, requires_grad=True)
    torch.library.opcheck(torch.ops.rudnn.paged_attention.default, (q, k, v, p.id, 0.25, True, 1))
    torch.library.opcheck(torch.ops.rudnn.paged_attention_backward.default,
                          (torch.randn(5, 2, 16), generation(p), q.detach(), k.detach(), v.detach(), p.id, 0.25,
                           True, [True, False, True]))
    mla = (torch.randn(5, 2, 16, requires_grad=True), torch.randn(5, 2, 8, requires_grad=True),
           torch.randn(PAGES, PAGE_SIZE, 1, 16, requires_grad=True), torch.randn(PAGES, PAGE_SIZE, 1, 8))
    torch.library.opcheck(torch.ops.rudnn.paged_mla.default, (*mla, p.id, 0.2, True, 2))
    torch.library.opcheck(torch.ops.rudnn.paged_mla_backward.default,
                          (torch.randn(5, 2, 16), generation(p), *(t.detach() for t in mla), p.id, 0.2, True,
                           [True, True, False, True]))
    torch.library.opcheck(torch.ops.rudnn.paged_append.default,
                          (torch.randn(5, 1, 16), torch.randn(5, 1, 16), k.detach().clone(), v.detach().clone(), p.id))
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v: p.attention(q, k, v).square().sum(), fullgraph=True, backend="aot_eager")
    loss = compiled(q, k, v)
    loss.backward()
    q64, k64, v64 = leaves(q, k, v)
    expected = reference(q64, k64, v64, 0.25, True).square().sum()
    expected.backward()
    close(loss, expected, 1e-4, 1e-4)
    close(k.grad, k64.grad, 1e-4, 1e-4)
    # A second plan (another schedule over the same pages) through the same compiled function.
    other = rudnn.paged_attention.PagedPlan(PAGE_SIZE, PAGES, TABLES[::-1], LENGTHS[::-1], [1, 1, 1, 0, 1],
                                            POSITIONS, "cpu")
    q.grad = k.grad = v.grad = None
    compiled_other = torch.compile(lambda q, k, v: other.attention(q, k, v).square().sum(), fullgraph=True,
                                   backend="aot_eager")
    compiled_other(q, k, v).backward()
    assert q.grad is not None and torch.isfinite(k.grad).all()


def test_a_wrong_rank_in_the_deterministic_backward_is_an_error():
    p = plan(deterministic=True)
    with pytest.raises(rudnn.PagedAttentionError) as error:
        torch.ops.rudnn.paged_attention_backward(torch.randn(5, 16), generation(p), torch.randn(5, 16),
                                                 torch.randn(PAGES, PAGE_SIZE, 1, 16),
                                                 torch.randn(PAGES, PAGE_SIZE, 1, 16), p.id, 0.25, True,
                                                 [True, True, True])
    assert error.value.kind == "ShapeMismatch", str(error.value)


@pytest.mark.parametrize("make, kind, argument", [
    (lambda: rudnn.paged_attention.PagedPlan(4, 9, [[0, 1, 9]], [10], [0], [8]), "InvalidValue", "tables[0][2]"),
    (lambda: rudnn.paged_attention.PagedPlan(4, 9, [[0, 1]], [10], [0], [8]), "InvalidValue", "lengths[0]"),
    (lambda: rudnn.paged_attention.PagedPlan(4, 9, [[0, 1, 2]], [10], [0], [10]), "InvalidValue", "positions[0]"),
    (lambda: rudnn.paged_attention.PagedPlan(4, 9, [[0, 2**40]], [5], [0], [1]), "InvalidValue", "tables[0][1]"),
    (lambda: rudnn.paged_attention.PagedPlan(4, 9, [[0, 1]], [5.5], [0], [1]), "InvalidValue", "lengths[0]"),
    (lambda: plan().attention(torch.randn(4, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                              torch.randn(PAGES, PAGE_SIZE, 1, 16)), "ShapeMismatch", "query"),
    (lambda: plan().attention(torch.randn(5, 3, 16), torch.randn(PAGES, PAGE_SIZE, 2, 16),
                              torch.randn(PAGES, PAGE_SIZE, 2, 16)), "ShapeMismatch", "key"),
    (lambda: plan().attention(torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                              torch.randn(PAGES, PAGE_SIZE, 1, 16), splits=64), "InvalidValue", "splits"),
    (lambda: plan().append(torch.randn(5, 1, 16), torch.randn(5, 1, 16),
                           torch.zeros(PAGE_SIZE, PAGES, 1, 16).transpose(0, 1), torch.zeros(PAGES, PAGE_SIZE, 1, 16)),
     "InvalidValue", "key_cache"),
    (lambda: torch.ops.rudnn.paged_attention(torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                                             torch.randn(PAGES, PAGE_SIZE, 1, 16), 10**9, 0.25, True, 1),
     "InvalidValue", "plan"),
    # Wrong ranks where a kept workspace reads a dim: the family's error, never a crash.
    (lambda: plan().attention(torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.tensor(1.0),
                              splits=2), "ShapeMismatch", "value"),
    (lambda: plan().attention(torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                              torch.randn(PAGES, PAGE_SIZE, 16), splits=2), "ShapeMismatch", "value"),
    (lambda: plan().mla(torch.tensor(1.0), torch.randn(5, 2, 8), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                        torch.randn(PAGES, PAGE_SIZE, 1, 8), 0.2, splits=2), "ShapeMismatch", "query"),
    (lambda p=plan(): torch.ops.rudnn.paged_attention(torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                                                      torch.randn(PAGES, PAGE_SIZE, 1, 16), p.id, 0.25, True, 0),
     "InvalidValue", "splits"),
    (lambda: rudnn.paged_attention.PagedPlan(4.0, 9, [[0]], [1], [0], [0]), "InvalidValue", "page_size[0]"),
    # MLA's value cache is the latent: a split call names it so, as an unsplit one does.
    (lambda: plan().mla(torch.randn(5, 2, 16), torch.randn(5, 2, 8), torch.randn(PAGES, PAGE_SIZE, 16),
                        torch.randn(PAGES, PAGE_SIZE, 1, 8), 0.2, splits=2), "ShapeMismatch", "latent"),
    # The default scale (1/√D) needs a last dim: a query without one is the library's error, not Python's.
    (lambda: plan().attention(torch.randn(5, 2, 0), torch.randn(PAGES, PAGE_SIZE, 1, 0),
                              torch.randn(PAGES, PAGE_SIZE, 1, 16)), "EmptyDimension", "query"),
    (lambda: plan().attention(torch.tensor(1.0), torch.randn(PAGES, PAGE_SIZE, 1, 16),
                              torch.randn(PAGES, PAGE_SIZE, 1, 16)), "ShapeMismatch", "query"),
    # One tensor as both caches (written in place): the value rows would overwrite the key rows.
    (lambda cache=torch.zeros(PAGES, PAGE_SIZE, 1, 16): plan().append(torch.randn(5, 1, 16), torch.randn(5, 1, 16),
                                                                      cache, cache), "InvalidValue", "value_cache"),
    (lambda cache=torch.zeros(2, PAGES, PAGE_SIZE, 1, 16): plan().append(
        torch.randn(5, 1, 16), torch.randn(5, 1, 16), cache[0], cache[0, :, :, :, :]), "InvalidValue", "value_cache"),
])
def test_errors(make, kind, argument):
    with pytest.raises(rudnn.PagedAttentionError) as error:
        make()
    assert error.value.kind == kind and error.value.argument == argument, str(error.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a CUDA device")
def test_a_cuda_plan_without_a_gpu_is_a_typed_error():
    with pytest.raises(rudnn.PagedAttentionError) as error:
        rudnn.paged_attention.PagedPlan(4, 2, [[0]], [4], [0], [1], device="cuda")
    assert error.value.kind == "NoDevice" and error.value.argument == "device", str(error.value)


def test_threads_share_a_plan_and_its_split_workspace(seed):
    """Split-KV calls from several threads on one plan: one call at a time through its workspace."""
    import concurrent.futures

    p = plan()
    k, v = torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    queries = [torch.randn(5, 2, 16) for _ in range(6)]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        outputs = list(pool.map(lambda q: p.attention(q, k, v, splits=3), queries))
    for q, out in zip(queries, outputs):
        close(out, reference(q.double(), k.double(), v.double(), 0.25, True), 3e-5, 3e-5)


# Another schedule over the same pages: the tables swapped, so the prefill rows now read the other history.
SWAPPED = (TABLES[::-1], LENGTHS[::-1], [0, 0, 0, 1, 1], POSITIONS)


def test_replan_matches_a_new_plan_and_keeps_the_compiled_graph(seed):
    """replan swaps the schedule under the same id: results bitwise equal to a plan made for the new
    schedule (split and unsplit), and the compiled function (whose graph holds the id as a constant) is
    not recompiled."""
    p = plan()
    q = torch.randn(5, 2, 16)
    k, v = torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    compiles = []

    def backend(graph, inputs):
        compiles.append(graph)
        return graph

    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v: p.attention(q, k, v, splits=2), fullgraph=True, backend=backend)
    before = compiled(q, k, v)
    assert torch.equal(before, p.attention(q, k, v, splits=2))
    assert p.generation == 1
    p.replan(*SWAPPED)
    assert p.generation == 2
    fresh = rudnn.paged_attention.PagedPlan(PAGE_SIZE, PAGES, *SWAPPED)
    expected = fresh.attention(q, k, v, splits=2)
    assert torch.equal(compiled(q, k, v), expected)
    assert torch.equal(p.attention(q, k, v), fresh.attention(q, k, v))
    assert not torch.equal(expected, before)
    assert len(compiles) == 1


def test_replan_rejects_a_bad_schedule_and_keeps_the_old_one(seed):
    p = plan()
    q, k, v = torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    before = p.attention(q, k, v)
    with pytest.raises(rudnn.PagedAttentionError) as error:
        p.replan([[0, 2, 1, PAGES]], [14], [0], [3])
    assert error.value.kind == "InvalidValue" and "tables" in error.value.argument
    with pytest.raises(rudnn.PagedAttentionError) as error:
        p.replan(TABLES, LENGTHS, SEQUENCE_IDS, [3, 4, 5, 10, "13"])
    assert error.value.argument == "positions[4]"
    assert p.generation == 1
    assert torch.equal(p.attention(q, k, v), before)


# The next decode step of SWAPPED's schedule: every sequence one key longer (within its table), its
# rows one position on; then a schedule whose tables are all 3 pages, narrower than the plan's 4
# (padded by the update).
NEXT_STEP = (TABLES[::-1], [12, 15], [0, 0, 0, 1, 1], [4, 5, 6, 11, 14])
NARROWER = ([TABLES[1][:3], TABLES[0][:3]], [12, 12], [0, 0, 0, 1, 1], [4, 5, 6, 11, 11])


@pytest.mark.parametrize("splits", [1, 2])
def test_replan_in_place_matches_a_new_plan(seed, splits):
    """replan(in_place=True) writes the schedule into the plan's own buffers (what a CUDA graph captured
    over the plan's calls replays with): results bitwise equal to a plan made for it, the generation one
    on, a narrower table padded."""
    p = plan()
    q, k, v = torch.randn(5, 2, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    before = p.attention(q, k, v, splits=splits)
    for generation, schedule in ((2, SWAPPED), (3, NEXT_STEP), (4, NARROWER)):
        p.replan(*schedule, in_place=True)
        assert p.generation == generation
        expected = rudnn.paged_attention.PagedPlan(PAGE_SIZE, PAGES, *schedule).attention(q, k, v, splits=splits)
        assert torch.equal(p.attention(q, k, v, splits=splits), expected)
        assert not torch.equal(expected, before)
        before = expected


@pytest.mark.parametrize("in_place", [False, True])
def test_a_compiled_backward_after_a_replan_is_an_error(seed, in_place):
    """The forward op returns its schedule's generation and the backward op checks it, so a torch.compile'd
    backward (whose saved data would be constants of the trace) refuses a replan made between forward and
    backward as the eager one does; a replan after the backward is fine."""
    p = plan()
    q = torch.randn(5, 2, 16, requires_grad=True)
    k, v = torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v: p.attention(q, k, v).square().sum(), fullgraph=True, backend="aot_eager")
    compiled(q, k, v).backward()  # generation 1 throughout
    p.replan(*SWAPPED, in_place=in_place)
    compiled(q, k, v).backward()  # generation 2 throughout: the same compiled graphs
    loss = compiled(q, k, v)
    p.replan(*NEXT_STEP, in_place=in_place)
    with pytest.raises(rudnn.PagedAttentionError) as error:
        loss.backward()
    assert error.value.argument == "plan" and "generation 2" in error.value.expected, str(error.value)
    assert "generation 3" in error.value.actual
    with pytest.raises(rudnn.PagedAttentionError) as error:  # not the forward's generation tensor
        torch.ops.rudnn.paged_attention_backward(torch.ones(5, 2, 16), torch.zeros(2, dtype=torch.int64), q.detach(),
                                                 k, v, p.id, 0.25, True, [True, False, False])
    assert error.value.argument == "generation" and "0-dim" in error.value.expected, str(error.value)


def test_replan_in_place_rejects_a_schedule_that_does_not_fit(seed):
    """The plan's query rows and sequences, tables no wider than its own: else ShapeMismatch naming host,
    and the schedule stays; a backward across an in-place replan raises as across any replan."""
    p = plan()
    q = torch.randn(5, 2, 16, requires_grad=True)
    k, v = torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    before = p.attention(q, k, v)
    for schedule, what in (((TABLES, LENGTHS, SEQUENCE_IDS[:4], POSITIONS[:4]), "query rows"),
                           (([TABLES[0]], [14], [0] * 5, [3, 4, 5, 10, 13]), "sequences"),
                           (([TABLES[0] + [8], TABLES[1]], LENGTHS, SEQUENCE_IDS, POSITIONS),
                            "page tables of at most")):
        with pytest.raises(rudnn.PagedAttentionError) as error:
            p.replan(*schedule, in_place=True)
        assert error.value.kind == "ShapeMismatch" and error.value.argument == "host", error.value
        assert what in error.value.expected
    assert p.generation == 1
    assert torch.equal(p.attention(q, k, v), before)
    loss = before.sum()
    p.replan(*SWAPPED, in_place=True)
    with pytest.raises(rudnn.PagedAttentionError) as error:
        loss.backward()
    assert error.value.argument == "plan"


def test_a_backward_after_a_replan_is_an_error(seed):
    """The gradient of the forward's schedule, or an error: never the gradient of the new schedule."""
    p = plan()
    q = torch.randn(5, 2, 16, requires_grad=True)
    k, v = torch.randn(PAGES, PAGE_SIZE, 1, 16), torch.randn(PAGES, PAGE_SIZE, 1, 16)
    loss = p.attention(q, k, v).sum()
    p.replan(*SWAPPED)
    with pytest.raises(rudnn.PagedAttentionError) as error:
        loss.backward()
    assert error.value.kind == "InvalidValue" and error.value.argument == "plan"
    assert "generation 1" in error.value.expected and "generation 2" in error.value.actual
