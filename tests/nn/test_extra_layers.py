"""local_response_norm, alpha_dropout, feature_alpha_dropout, bilinear and embedding_bag (and their
layers) against PyTorch: values, gradients, edge arguments and the errors for bad ones.
(Gradient checks against central differences: tests/ops/cases_layers.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")
tnf = torch.nn.functional


def _forward_backward(ours, theirs, arrays, grad_seed=0):
    """Values and the gradients of every float input, for the same output gradient."""
    mine = [numdiff.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ref = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out, expected = ours(*mine), theirs(*ref)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(expected.shape))
    out.backward(numdiff.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-13, atol=1e-15)
    for a, b in zip(mine, ref):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 7, 3, 4), (1, 4, 2, 2, 3)])
@pytest.mark.parametrize("size", [1, 2, 5, 9])
def test_local_response_norm_matches_torch(shape, size):
    x = np.random.default_rng(size).standard_normal(shape)
    _forward_backward(lambda t: nf.local_response_norm(t, size, 0.3, 0.6, 1.5),
                      lambda t: tnf.local_response_norm(t, size, 0.3, 0.6, 1.5), [x])
    _forward_backward(numdiff.nn.LocalResponseNorm(size), torch.nn.LocalResponseNorm(size), [x])


def test_bilinear_matches_torch_with_and_without_bias():
    rng = np.random.default_rng(0)
    a, b, w, bias = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2)), rng.standard_normal((5, 3, 2)), rng.standard_normal(5)
    _forward_backward(nf.bilinear, tnf.bilinear, [a, b, w, bias])
    _forward_backward(nf.bilinear, tnf.bilinear, [a[0], b[0], w])


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_mean_and_variance_and_maps_to_two_values(name):
    fn = getattr(nf, name)
    numdiff.manual_seed(0)
    x = numdiff.randn(200, 50, 40, dtype=numdiff.float64, requires_grad=True)
    out = fn(x, 0.3, training=True)
    y = out.detach().numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1.0) < 0.01
    a = (0.7 * (1 + 0.3 * 1.7580993408473766**2)) ** -0.5
    b = a * 1.7580993408473766 * 0.3
    kept = np.isclose(y, a * x.detach().numpy() + b, rtol=1e-14)
    assert np.allclose(y[~kept], -a * 1.7580993408473766 + b)
    assert abs(kept.mean() - 0.7) < 0.01
    if name == "feature_alpha_dropout":  # one draw per (n, c)
        assert (kept == kept[:, :, :1]).all()
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0))


def test_alpha_dropout_edges():
    x = numdiff.randn(3, 4)
    assert nf.alpha_dropout(x, 0.5, training=False) is x
    assert nf.alpha_dropout(x, 0.0, training=True) is x
    np.testing.assert_array_equal(nf.alpha_dropout(x, 1.0, training=True).numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(tnf.alpha_dropout(torch.ones(3), 1.0, training=True).numpy(), np.zeros(3))
    layer = numdiff.nn.AlphaDropout(0.5).eval()
    assert layer(x) is x
    y = x.clone()
    numdiff.manual_seed(1)
    same = nf.alpha_dropout(y.clone(), 0.4, training=True)
    numdiff.manual_seed(1)
    assert nf.alpha_dropout(y, 0.4, training=True, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), same.numpy())


BAG_CASES = [
    dict(mode=mode, padding_idx=pad, include_last_offset=last)
    for mode in ("sum", "mean", "max") for pad in (None, 2) for last in (False, True)
]


@pytest.mark.parametrize("kwargs", BAG_CASES, ids=lambda k: f"{k['mode']}-pad{k['padding_idx']}-last{k['include_last_offset']}")
def test_embedding_bag_matches_torch(kwargs):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((10, 3))
    indices = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
    offsets = np.array([0, 2, 2, 5, 9])  # bag 1 is empty; with padding_idx=2, index 2 is left out
    if kwargs["include_last_offset"]:
        offsets = np.append(offsets, len(indices))
    _forward_backward(lambda i, w, o: nf.embedding_bag(i, w, o, **kwargs),
                      lambda i, w, o: tnf.embedding_bag(i, w, o, **kwargs), [indices, weight, offsets])


def test_embedding_bag_2d_input_per_sample_weights_and_layer():
    rng = np.random.default_rng(1)
    weight, rows = rng.standard_normal((10, 4)), rng.integers(0, 10, (3, 5))
    for mode in ("sum", "mean", "max"):
        _forward_backward(lambda i, w, m=mode: nf.embedding_bag(i, w, mode=m),
                          lambda i, w, m=mode: tnf.embedding_bag(i, w, mode=m), [rows, weight])
    flat, offsets, psw = rows.reshape(-1), np.array([0, 4, 11]), rng.standard_normal(15)
    _forward_backward(lambda i, w, o, p: nf.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                      lambda i, w, o, p: tnf.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                      [flat, weight, offsets, psw])
    layer = numdiff.nn.EmbeddingBag(10, 4, mode="sum", padding_idx=3)
    assert (layer.weight.detach().numpy()[3] == 0).all() and "mode='sum'" in repr(layer)
    expected = tnf.embedding_bag(torch.tensor(flat), torch.tensor(layer.weight.detach().numpy()), torch.tensor(offsets),
                                 mode="sum", padding_idx=3)
    np.testing.assert_allclose(layer(numdiff.tensor(flat), numdiff.tensor(offsets)).detach().numpy(), expected.numpy(), rtol=1e-6)


def test_compiled_embedding_bag_max_replays_the_picks():
    numdiff.manual_seed(0)
    bag = numdiff.nn.EmbeddingBag(10, 3, mode="max", dtype=numdiff.float64)
    compiled = numdiff.compile(lambda i, o: bag(i, o).sum())
    rng = np.random.default_rng(2)
    for _ in range(3):
        i, o = numdiff.tensor(rng.integers(0, 10, 8)), numdiff.tensor([0, 3, 3, 6])
        bag.zero_grad()
        compiled(i, o).backward()
        grad = bag.weight.grad.numpy().copy()
        bag.zero_grad()
        bag(i, o).sum().backward()
        np.testing.assert_array_equal(grad, bag.weight.grad.numpy())


def test_bad_arguments_name_the_function_and_the_values():
    w = numdiff.randn(10, 3)
    with pytest.raises(ValueError, match=r"embedding_bag: mode must be one of \('sum', 'mean', 'max'\), got 'min'"):
        nf.embedding_bag(numdiff.tensor([[1, 2]]), w, mode="min")
    with pytest.raises(ValueError, match=r"embedding_bag: offsets must be None for a 2-D input .* shape \(1, 2\)"):
        nf.embedding_bag(numdiff.tensor([[1, 2]]), w, numdiff.tensor([0]))
    with pytest.raises(ValueError, match=r"embedding_bag: a 1-D input needs offsets"):
        nf.embedding_bag(numdiff.tensor([1, 2]), w)
    with pytest.raises(ValueError, match=r"embedding_bag: offsets must start at 0 and not decrease up to the input's length 3, got \[0, 2, 1\]"):
        nf.embedding_bag(numdiff.tensor([1, 2, 3]), w, numdiff.tensor([0, 2, 1]))
    with pytest.raises(ValueError, match=r"embedding_bag: per_sample_weights is only supported for mode='sum', got mode='mean'"):
        nf.embedding_bag(numdiff.tensor([[1, 2]]), w, per_sample_weights=numdiff.ones(1, 2))
    with pytest.raises(ValueError, match=r"embedding_bag: per_sample_weights must have the input's shape \(1, 2\), got \(2,\)"):
        nf.embedding_bag(numdiff.tensor([[1, 2]]), w, mode="sum", per_sample_weights=numdiff.ones(2))
    with pytest.raises(IndexError, match=r"embedding_bag: indices must be in \[0, 9\] .* got values in \[1, 12\]"):
        nf.embedding_bag(numdiff.tensor([[1, 12]]), w)
    with pytest.raises(IndexError, match=r"embedding_bag: indices must be in \[0, 9\] .* got values in \[1, 12\]"):
        nf.embedding_bag(numdiff.tensor([[1, 12]]), w, mode="max")
    with pytest.raises(ValueError, match=r"local_response_norm: expects an input of at least 3 dims \(N, C, \*\), got shape \(2, 3\)"):
        nf.local_response_norm(numdiff.ones(2, 3), 2)
    with pytest.raises(ValueError, match=r"local_response_norm: size must be a positive int, got 0"):
        nf.local_response_norm(numdiff.ones(1, 2, 3), 0)
    with pytest.raises(ValueError, match=r"alpha_dropout: probability has to be between 0 and 1, but got 1.5"):
        nf.alpha_dropout(numdiff.ones(2), 1.5, training=True)
    with pytest.raises(ValueError, match=r"feature_alpha_dropout: expects an input of at least 2 dims"):
        nf.feature_alpha_dropout(numdiff.ones(2), 0.5, training=True)
    with pytest.raises(ValueError, match=r"bilinear: expects input1 \(\*, 3\) and input2 \(\*, 2\) .* got \(4, 3\) and \(5, 2\)"):
        nf.bilinear(numdiff.ones(4, 3), numdiff.ones(5, 2), numdiff.ones(6, 3, 2))
    with pytest.raises(ValueError, match=r"bilinear: weight must be 3-D \(out, in1, in2\), got shape \(3, 2\)"):
        nf.bilinear(numdiff.ones(4, 3), numdiff.ones(4, 2), numdiff.ones(3, 2))
    with pytest.raises(ValueError, match=r"embedding_bag: max mode does not support sparse weights"):
        numdiff.nn.EmbeddingBag(3, 2, mode="max", sparse=True)(numdiff.tensor([[0, 1]]))
