"""Attention against torch 2.13 in float64: scaled_dot_product_attention, MultiheadAttention,
TransformerEncoderLayer and TransformerEncoder (torch's state_dict loaded, eval mode), with every
gradient compared, gradcheck/gradgradcheck on tiny sizes, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.nn import functional
from numdiff.nn.modules.transformer import generate_square_subsequent_mask
from numdiff.ops.attention import attention as fused_attention
from tests.nn.parity64 import backward_both, close, compare_parameter_grads, leaf, load_from_torch

torch = pytest.importorskip("torch")









# ----------------------------------------------------------------------------- scaled_dot_product_attention
SDPA_CASES = [
    ("plain", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), None, {}),
    ("causal", (2, 4, 5), (2, 6, 5), (2, 6, 3), None, {"is_causal": True}),
    ("scale", (4, 5), (6, 5), (6, 2), None, {"scale": 0.3}),
    ("bool mask", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "bool", {}),
    ("float mask", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7), "float", {}),
    ("broadcast batch", (2, 3, 4, 5), (3, 6, 5), (1, 3, 6, 7), None, {}),
    ("gqa", (2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 7), None, {"enable_gqa": True}),
]


@pytest.mark.parametrize("case, q_shape, k_shape, v_shape, mask, kwargs", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_sdpa_matches_torch_forward_and_gradients(rng, case, q_shape, k_shape, v_shape, mask, kwargs):
    pairs = [leaf(rng.standard_normal(s)) for s in (q_shape, k_shape, v_shape)]
    if mask == "bool":
        mask_pair = leaf(rng.random((q_shape[-2], k_shape[-2])) > 0.4)
    elif mask == "float":
        mask_pair = leaf(rng.standard_normal((1, q_shape[-2], k_shape[-2])))
        pairs.append(mask_pair)
    else:
        mask_pair = (None, None)
    out = functional.scaled_dot_product_attention(*(p[0] for p in pairs[:3]), attn_mask=mask_pair[0], **kwargs)
    out_t = torch.nn.functional.scaled_dot_product_attention(*(p[1] for p in pairs[:3]), attn_mask=mask_pair[1], **kwargs)
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    for i, (mine, theirs) in enumerate(pairs):
        close(mine.grad, theirs.grad, f"grad of input {i}")


def test_sdpa_fully_masked_row_is_zero_with_finite_gradients(rng):
    q, q_t = leaf(rng.standard_normal((3, 4)))
    k, k_t = leaf(rng.standard_normal((5, 4)))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out = functional.scaled_dot_product_attention(q, k, k, attn_mask=numdiff.tensor(mask))
    out_t = torch.nn.functional.scaled_dot_product_attention(q_t, k_t, k_t, attn_mask=torch.tensor(mask))
    assert np.all(out.detach().numpy()[1] == 0)
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    assert np.all(np.isfinite(q.grad.numpy())) and np.all(q.grad.numpy()[1] == 0)
    close(k.grad, k_t.grad, "grad of key")


def test_sdpa_dropout_drops_weights_and_rescales(rng):
    q = numdiff.tensor(rng.standard_normal((1, 4)))
    k = numdiff.tensor(rng.standard_normal((200, 4)))
    v = numdiff.ones(200, 1, dtype=numdiff.float64)
    assert functional.scaled_dot_product_attention(q, k, v, dropout_p=1.0).item() == 0.0
    numdiff.manual_seed(0)
    kept = np.mean([functional.scaled_dot_product_attention(q, k, v, dropout_p=0.5).item() for _ in range(40)])
    assert 0.8 < kept < 1.2  # weights sum to 1; dropout keeps that in expectation


def test_sdpa_gradcheck_and_gradgradcheck(rng):
    q, k, v = (numdiff.tensor(rng.standard_normal((1, 2, 3)), requires_grad=True) for _ in range(3))
    mask = numdiff.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    assert gradcheck(lambda q, k, v, m: functional.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, mask))
    assert gradgradcheck(lambda q, k, v: functional.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


SDPA_BAD = [
    ((4, 5), (6, 3), (6, 2), {}, ValueError, r"expected query \(\.\.\., L, E\), key \(\.\.\., S, E\)"),
    ((4, 5), (6, 5), (6, 2), {"attn_mask": np.ones((4, 6), bool), "is_causal": True}, ValueError, "explicit attn_mask should not be set"),
    ((4, 5), (6, 5), (6, 2), {"attn_mask": np.zeros((3, 6))}, ValueError, r"attn_mask of shape \(3, 6\) does not broadcast"),
    ((3, 4, 5), (2, 6, 5), (2, 6, 2), {"enable_gqa": True}, ValueError, "with enable_gqa the query's 3 heads must be a multiple of the key's 2"),
    ((4, 5), (6, 5), (6, 2), {"dropout_p": 1.5}, ValueError, r"dropout_p must be in \[0, 1\], got 1.5"),
    ((5,), (6, 5), (6, 2), {}, ValueError, r"query needs at least 2 dims"),
]


@pytest.mark.parametrize("q_shape, k_shape, v_shape, kwargs, error, message", SDPA_BAD)
def test_sdpa_bad_input_names_the_op_and_shapes(q_shape, k_shape, v_shape, kwargs, error, message):
    args = [numdiff.zeros(*s, dtype=numdiff.float64) for s in (q_shape, k_shape, v_shape)]
    kwargs = {k: numdiff.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with pytest.raises(error, match="scaled_dot_product_attention: " + message):
        functional.scaled_dot_product_attention(*args, **kwargs)
    with pytest.raises(TypeError, match="must share a dtype"):
        functional.scaled_dot_product_attention(numdiff.zeros(2, 3), *args[1:2] * 2)


# ----------------------------------------------------------------------------- MultiheadAttention


def _mha_pair(*args, **kwargs):
    return load_from_torch(nn.MultiheadAttention(*args, **kwargs).double(), torch.nn.MultiheadAttention(*args, **kwargs).double())


MHA_CASES = [
    ("default", {}, {}),
    ("batch_first", {"batch_first": True}, {}),
    ("kdim/vdim + bias_kv + zero_attn", {"kdim": 3, "vdim": 2, "add_bias_kv": True, "add_zero_attn": True}, {}),
    ("no bias", {"bias": False}, {"average_attn_weights": False}),
    ("no weights", {}, {"need_weights": False}),
    ("bool masks", {}, {"masks": "bool"}),
    ("float masks", {}, {"masks": "float"}),
    ("per-head mask", {}, {"masks": "3d"}),
    ("causal hint", {"batch_first": True}, {"masks": "causal", "need_weights": False, "is_causal": True}),
]


@pytest.mark.parametrize("case, ctor, call", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(rng, case, ctor, call):
    ours, theirs = _mha_pair(4, 2, **ctor)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    batch, rows, cols = 2, 3, 5
    call = dict(call)
    masks = call.pop("masks", None)
    if masks == "causal":
        cols = rows
    shapes = [(rows, batch, 4), (cols, batch, ctor.get("kdim", 4)), (cols, batch, ctor.get("vdim", 4))]
    if ctor.get("batch_first"):
        shapes = [(s[1], s[0], s[2]) for s in shapes]
    pairs = [leaf(rng.standard_normal(s)) for s in shapes]
    extra, extra_t = {}, {}
    if masks in ("bool", "float", "3d"):
        padding = np.zeros((batch, cols), bool)
        padding[0, 1] = True
        mask_shape = (batch * 2, rows, cols) if masks == "3d" else (rows, cols)
        attn = rng.random(mask_shape) > 0.7 if masks == "bool" else rng.standard_normal(mask_shape)
        if masks != "bool":
            padding = np.where(padding, -np.inf, 0.0)
        for name, value in (("key_padding_mask", padding), ("attn_mask", attn)):
            extra[name], extra_t[name] = leaf(value, requires_grad=False)
    elif masks == "causal":
        extra["attn_mask"] = generate_square_subsequent_mask(rows, dtype=numdiff.float64)
        extra_t["attn_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(rows, dtype=torch.float64)
    out, weights = ours(*(p[0] for p in pairs), **extra, **call)
    out_t, weights_t = theirs(*(p[1] for p in pairs), **extra_t, **call)
    close(out, out_t, "output")
    assert (weights is None) == (weights_t is None)
    outs, outs_t = [out], [out_t]
    if weights is not None:
        close(weights, weights_t, "attention weights")
        outs.append(weights)
        outs_t.append(weights_t)
    backward_both(rng, outs, outs_t)
    for i, (mine, expected) in enumerate(pairs):
        close(mine.grad, expected.grad, f"grad of input {i}")
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("causal_hint", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_multihead_attention_padding_mask_is_shared_by_the_heads_and_matches_torch(monkeypatch, rng, batch_first, causal_hint, kind):
    # Heads split from the packed projection are copied to the fused op anyway, so they go in (H, N)
    # order and every head of a sequence reads one (L, S) mask, not an (N * H, L, S) copy of it; with
    # a causal hint the kernel hides the future itself (in row blocks: 40 rows) and adds only padding.
    import numdiff.nn._attention as attention_module

    seen = []

    def spy(q, k, v, bias=None, scale=None, causal=False):
        seen.append((tuple(bias.shape) if bias is not None else None, causal))
        return fused_attention(q, k, v, bias, scale, causal)

    monkeypatch.setattr(attention_module, "attention", spy)
    ours, theirs = _mha_pair(8, 2, batch_first=batch_first)
    batch, rows = 3, 40
    x, x_t = leaf(rng.standard_normal((batch, rows, 8) if batch_first else (rows, batch, 8)))
    padding = np.zeros((batch, rows), bool)
    padding[1, -4:] = True
    padding = padding if kind == "bool" else np.where(padding, -np.inf, 0.0)
    extra, extra_t = {}, {}
    extra["key_padding_mask"], extra_t["key_padding_mask"] = leaf(padding, requires_grad=False)
    if causal_hint:
        future = np.triu(np.ones((rows, rows), bool), 1)
        future = future if kind == "bool" else np.where(future, -np.inf, 0.0)
        extra["attn_mask"], extra_t["attn_mask"] = leaf(future, requires_grad=False)
    out = ours(x, x, x, need_weights=False, is_causal=causal_hint, **extra)[0]
    out_t = theirs(x_t, x_t, x_t, need_weights=False, is_causal=causal_hint, **extra_t)[0]
    close(out, out_t, "output")
    assert seen == [((batch, rows, rows), causal_hint)]
    backward_both(rng, [out], [out_t])
    close(x.grad, x_t.grad, "grad of the input")
    compare_parameter_grads(ours, theirs)


SHARED_INPUT_CASES = [
    ("self, seq-first, weights", "self", {}, {}),
    ("self, batch_first, causal", "self", {"batch_first": True}, {"masks": "causal", "need_weights": False, "is_causal": True}),
    ("self, padding + per-head mask", "self", {}, {"masks": "3d", "need_weights": False}),
    ("self, bias_kv + zero_attn", "self", {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}, {}),
    ("self, unbatched", "self", {"batch_first": True}, {"unbatched": True, "need_weights": False}),
    ("memory, batch_first", "memory", {"batch_first": True}, {"need_weights": False}),
    ("memory, padding, per-head weights", "memory", {"bias": False}, {"masks": "bool", "average_attn_weights": False}),
]


@pytest.mark.parametrize("case, shared, ctor, call", SHARED_INPUT_CASES, ids=[c[0] for c in SHARED_INPUT_CASES])
def test_multihead_attention_with_shared_inputs_matches_torch(rng, case, shared, ctor, call):
    """Self-attention (one tensor as query, key and value) and attention over a memory (key is value)
    project through the packed weight in one or two GEMMs; values and every gradient match torch."""
    ours, theirs = _mha_pair(6, 3, **ctor)
    call = dict(call)
    masks, unbatched = call.pop("masks", None), call.pop("unbatched", False)
    batch, rows = 2, 4
    cols = rows if shared == "self" else 5
    extra, extra_t = {}, {}
    if masks == "causal":
        extra["attn_mask"] = generate_square_subsequent_mask(rows, dtype=numdiff.float64)
        extra_t["attn_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(rows, dtype=torch.float64)
    elif masks:
        padding = np.zeros((batch, cols), bool)
        padding[1, 2] = True
        attn = rng.random((rows, cols)) > 0.7 if masks == "bool" else rng.standard_normal((batch * 3, rows, cols))
        if masks != "bool":
            padding = np.where(padding, -np.inf, 0.0)
        for name, value in (("key_padding_mask", padding), ("attn_mask", attn)):
            extra[name], extra_t[name] = leaf(value, requires_grad=False)

    def shaped(seq):
        if unbatched:
            return (seq, 6)
        return (batch, seq, 6) if ctor.get("batch_first") else (seq, batch, 6)

    x, x_t = leaf(rng.standard_normal(shaped(rows)))
    memory, memory_t = (x, x_t) if shared == "self" else leaf(rng.standard_normal(shaped(cols)))
    out, weights = ours(x, memory, memory, **extra, **call)
    out_t, weights_t = theirs(x_t, memory_t, memory_t, **extra_t, **call)
    close(out, out_t, "output")
    outs, outs_t = [out], [out_t]
    if weights_t is not None:
        close(weights, weights_t, "attention weights")
        outs.append(weights)
        outs_t.append(weights_t)
    backward_both(rng, outs, outs_t)
    close(x.grad, x_t.grad, "grad of the query")
    if shared == "memory":
        close(memory.grad, memory_t.grad, "grad of the memory")
    compare_parameter_grads(ours, theirs)


def _linear_nodes(out):
    """How many Linear nodes the graph behind `out` holds (each one GEMM forward)."""
    seen, stack, count = set(), [out.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        count += node.name() == "LinearBackward"
        stack.extend(edge[0] for edge in node.next_functions)
    return count


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_projects_self_attention_in_one_gemm(batch_first):
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    x, memory, other = (numdiff.randn(3, 5, 8, requires_grad=True) for _ in range(3))
    # in-projection + out-projection: one for self-attention, two over a memory, three otherwise.
    assert _linear_nodes(mha(x, x, x, need_weights=False)[0]) == 2
    assert _linear_nodes(mha(x, memory, memory, need_weights=False)[0]) == 3
    assert _linear_nodes(mha(x, memory, other, need_weights=False)[0]) == 4


def test_multihead_attention_packed_projection_gradcheck(rng):
    mha = nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = numdiff.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    memory = numdiff.tensor(rng.standard_normal((2, 2, 4)), requires_grad=True)
    weight, bias = mha.in_proj_weight, mha.in_proj_bias
    assert gradcheck(lambda x, w, b: mha(x, x, x)[0], (x, weight, bias))
    assert gradcheck(lambda x, m, w: mha(x, m, m, need_weights=False)[0], (x, memory, weight))


def test_multihead_attention_unbatched_matches_torch(rng):
    ours, theirs = _mha_pair(4, 2)
    x, x_t = leaf(rng.standard_normal((3, 4)))
    padding = np.array([False, True, False])
    out, weights = ours(x, x, x, key_padding_mask=numdiff.tensor(padding))
    out_t, weights_t = theirs(x_t, x_t, x_t, key_padding_mask=torch.tensor(padding))
    close(out, out_t, "output")
    close(weights, weights_t, "weights")


def test_multihead_attention_init_and_dropout_in_training(rng):
    mha = nn.MultiheadAttention(6, 3, dropout=0.5).double()
    bound = math.sqrt(6.0 / (6 + 18))
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= bound
    assert np.all(mha.in_proj_bias.detach().numpy() == 0) and np.all(mha.out_proj.bias.detach().numpy() == 0)
    x = numdiff.tensor(rng.standard_normal((4, 1, 6)))
    numdiff.manual_seed(0)
    _, trained = mha(x, x, x)
    _, evaluated = mha.eval()(x, x, x)
    assert not np.allclose(trained.detach().numpy(), evaluated.detach().numpy())
    np.testing.assert_allclose(evaluated.detach().numpy().sum(-1), 1.0)


def test_multihead_attention_gradcheck_and_gradgradcheck(rng):
    mha = nn.MultiheadAttention(2, 2, kdim=3).double()
    q = numdiff.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    k = numdiff.tensor(rng.standard_normal((3, 1, 3)), requires_grad=True)
    assert gradcheck(lambda q, k, w: mha(q, k, k[..., :2])[0], (q, k, mha.k_proj_weight))
    square = nn.MultiheadAttention(2, 2).double()
    assert gradgradcheck(lambda q: square(q, q, q, need_weights=False)[0], (q,))


MHA_BAD = [
    ({}, ((3, 2, 5), (3, 2, 4), (3, 2, 4)), {}, ValueError, r"expected query of shape \(L, N, E\) or \(L, E\) unbatched with E=4, got \(3, 2, 5\)"),
    ({}, ((3, 2, 4), (5, 2, 4), (4, 2, 4)), {}, ValueError, "key and value must have the same sequence length"),
    ({}, ((3, 2, 4), (5, 4), (5, 4)), {}, ValueError, "must all be batched or all unbatched"),
    ({"kdim": 3}, ((3, 2, 4), (5, 2, 4), (5, 2, 4)), {}, ValueError, r"expected key features 3 and value features 4, got key \(5, 2, 4\)"),
    ({}, ((3, 2, 4), (5, 2, 4), (5, 2, 4)), {"attn_mask": (3, 4)}, ValueError, r"attn_mask should have shape \(3, 5\) or \(4, 3, 5\), got \(3, 4\)"),
    ({}, ((3, 2, 4), (5, 2, 4), (5, 2, 4)), {"key_padding_mask": (2, 4)}, ValueError, r"key_padding_mask should have shape \(2, 5\), got \(2, 4\)"),
    ({}, ((3, 2, 4), (5, 2, 4), (5, 2, 4)), {"is_causal": True}, RuntimeError, "need attn_mask if specifying the is_causal hint"),
]


@pytest.mark.parametrize("ctor, shapes, call, error, message", MHA_BAD)
def test_multihead_attention_bad_input_names_the_layer(ctor, shapes, call, error, message):
    mha = nn.MultiheadAttention(4, 2, **ctor)
    call = {k: numdiff.zeros(*v) if isinstance(v, tuple) else v for k, v in call.items()}
    with pytest.raises(error, match=r"MultiheadAttention\(\): " + message if "attn_mask" in message or "padding" in message else message):
        mha(*(numdiff.zeros(*s) for s in shapes), **call)


def test_multihead_attention_bad_constructor():
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads, got embed_dim=5 and num_heads=2"):
        nn.MultiheadAttention(5, 2)


def _op_names(output):
    names, seen, stack = [], set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(getattr(getattr(node, "function", None), "op_name", None))
        stack.extend(getattr(node, "next_nodes", ()))
    return names


def test_sdpa_runs_one_fused_attention_op_and_matches_torch_with_a_mask_and_causal():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)) for _ in range(3))
    mask = rng.standard_normal((4, 4))
    for kwargs, kwargs_t in (({"attn_mask": numdiff.tensor(mask)}, {"attn_mask": torch.tensor(mask)}), ({"is_causal": True}, {"is_causal": True})):
        tensors = [numdiff.tensor(a, requires_grad=True) for a in (q, k, v)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        out = numdiff.nn.functional.scaled_dot_product_attention(*tensors, **kwargs)
        expected = torch.nn.functional.scaled_dot_product_attention(*theirs, **kwargs_t)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
        assert _op_names(out).count("attention") == 1 and "softmax" not in _op_names(out)
        out.square().sum().backward()
        expected.square().sum().backward()
        for mine, reference in zip(tensors, theirs):
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_sdpa_with_dropout_or_a_mask_that_needs_grad_is_composed():
    q = numdiff.randn(2, 3, 4, dtype=numdiff.float64, requires_grad=True)
    mask = numdiff.zeros(3, 3, dtype=numdiff.float64, requires_grad=True)
    out = numdiff.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert "attention" not in _op_names(out)
    out.sum().backward()
    assert mask.grad is not None and mask.grad.shape == (3, 3)
    assert "attention" not in _op_names(numdiff.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5))


def test_sdpa_under_vmap_matches_a_loop_over_the_batch():
    q = numdiff.randn(3, 2, 4, 5, dtype=numdiff.float64)
    mask = numdiff.tensor(np.tril(np.ones((4, 4), dtype=bool)))
    batched = numdiff.func.vmap(lambda a: functional.scaled_dot_product_attention(a, a, a, attn_mask=mask))(q)
    looped = numdiff.stack([functional.scaled_dot_product_attention(q[i], q[i], q[i], attn_mask=mask) for i in range(3)])
    np.testing.assert_allclose(batched.numpy(), looped.numpy(), rtol=1e-12, atol=1e-12)
