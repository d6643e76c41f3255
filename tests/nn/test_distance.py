"""normalize, cosine_similarity, pairwise_distance and their layers: PyTorch's values and gradients
(a zero vector included), float64 gradient checks, and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")
tf = torch.nn.functional

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
A[1] = 0.0  # a zero vector: its norm is held at eps, its gradient is finite


def _values_and_gradients(fn, *arrays, library):
    leaves = [library.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    out.sum().backward()
    return [out.detach().numpy()] + [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize(
    "name, arguments, kwargs",
    [
        ("normalize", (A,), {}),
        ("normalize", (A,), {"p": 1, "dim": 0}),
        ("normalize", (A,), {"p": float("inf")}),
        ("cosine_similarity", (A, B), {}),
        ("cosine_similarity", (A[:, :1], B), {"dim": 0}),
        # broadcast along `dim` itself: normalizing before broadcasting gave |cos| > 1
        ("cosine_similarity", (A[:, :1], B), {}),
        ("cosine_similarity", (A, B[:1, :1]), {"dim": 1}),
        ("cosine_similarity", (A[:1, :], B[:, :1]), {"dim": -1}),
        ("cosine_similarity", (A[0, 0], B), {"dim": 0}),
        ("pairwise_distance", (A, B), {}),
        ("pairwise_distance", (A, B), {"p": 1, "keepdim": True}),
        ("pairwise_distance", (A[0], B[0]), {}),
    ],
)
def test_matches_torch_values_and_gradients(name, arguments, kwargs):
    ours = _values_and_gradients(lambda *t: getattr(nf, name)(*t, **kwargs), *arguments, library=numdiff)
    theirs = _values_and_gradients(lambda *t: getattr(tf, name)(*t, **kwargs), *arguments, library=torch)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def test_float64_gradient_checks():
    x, y = (numdiff.tensor(RNG.standard_normal((3, 4)), requires_grad=True) for _ in range(2))
    assert numdiff.autograd.gradcheck(lambda t: nf.normalize(t, dim=1), (x,))
    assert numdiff.autograd.gradcheck(lambda s, t: nf.cosine_similarity(s, t), (x, y))
    assert numdiff.autograd.gradcheck(lambda s, t: nf.pairwise_distance(s, t, p=3.0), (x, y))


def test_layers_match_torch():
    a, b = A.astype(np.float32), B.astype(np.float32)
    pairs = [(numdiff.nn.CosineSimilarity(dim=0), torch.nn.CosineSimilarity(dim=0)),
             (numdiff.nn.PairwiseDistance(p=1.0, keepdim=True), torch.nn.PairwiseDistance(p=1.0, keepdim=True))]  # fmt: skip
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        expected = theirs(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_allclose(ours(numdiff.tensor(a), numdiff.tensor(b)).numpy(), expected, rtol=1e-6, atol=1e-6)


def test_bad_input_names_the_function_and_the_values():
    with pytest.raises(TypeError, match="normalize: input must be a floating point tensor, got dtype numdiff.int64"):
        nf.normalize(numdiff.tensor([[1, 2]]))
    with pytest.raises(TypeError, match="cosine_similarity: x2 must be a Tensor, got list"):
        nf.cosine_similarity(numdiff.ones(2, 3), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)|\(4,\).*\(2, 3\)"):
        nf.pairwise_distance(numdiff.ones(2, 3), numdiff.ones(4))
