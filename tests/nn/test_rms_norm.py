"""RMSNorm and functional.rms_norm: against a NumPy reference, PyTorch's module, central
differences in float64, and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf
from numdiff.autograd.gradcheck import gradcheck
from tests.nn.helpers import check_module_parity

torch = pytest.importorskip("torch")


def _reference(x: np.ndarray, count: int, weight: np.ndarray | None, eps: float) -> np.ndarray:
    dims = tuple(range(x.ndim - count, x.ndim))
    out = x / np.sqrt((x * x).mean(axis=dims, keepdims=True) + eps)
    return out if weight is None else out * weight


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "normalized"), [((5, 4), 4), ((2, 3, 4), (3, 4)), ((4,), [4])])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_matches_numpy(dtype, shape, normalized, eps, with_weight):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    count = 1 if isinstance(normalized, int) else len(normalized)
    weight = rng.standard_normal(shape[len(shape) - count :]).astype(dtype) if with_weight else None
    ours = nf.rms_norm(numdiff.tensor(x), normalized, None if weight is None else numdiff.tensor(weight), eps)
    expected = _reference(x, count, weight, np.finfo(dtype).eps if eps is None else eps)
    assert ours.dtype == numdiff.tensor(x).dtype
    np.testing.assert_allclose(ours.numpy(), expected, rtol=10 * np.finfo(dtype).eps, atol=10 * np.finfo(dtype).eps)


def test_rms_norm_gradients_match_central_differences():
    rng = np.random.default_rng(1)
    x = numdiff.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    w = numdiff.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(lambda a, b: nf.rms_norm(a, (2, 4), b, 1e-2), (x, w))
    assert gradcheck(lambda a: nf.rms_norm(a, 4), (x,))


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_module_matches_torch(eps, affine):
    rng = np.random.default_rng(2)
    ours = numdiff.nn.RMSNorm([3, 4], eps=eps, elementwise_affine=affine)
    theirs = torch.nn.RMSNorm([3, 4], eps=eps, elementwise_affine=affine)
    if affine:
        ours.weight.data = numdiff.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    check_module_parity(ours, theirs, rng.standard_normal((2, 3, 4)).astype(np.float32), rng=rng, rtol=1e-5, atol=1e-6)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_rms_norm_refuses_bad_shapes_and_integer_input_naming_them():
    x = numdiff.ones(2, 3)
    with pytest.raises(ValueError, match=r"rms_norm: given normalized_shape=\[4\].*got input of shape \(2, 3\)"):
        nf.rms_norm(x, [4])
    with pytest.raises(ValueError, match=r"rms_norm: weight must have shape \(3,\), got \(2,\)"):
        nf.rms_norm(x, 3, numdiff.ones(2))
    with pytest.raises(TypeError, match=r"rms_norm: expected 'input' to be a floating point tensor, got dtype numdiff.int64"):
        nf.rms_norm(numdiff.tensor([[3, 4]]), 2)
    with pytest.raises(ValueError, match=r"rms_norm: given normalized_shape=\[2, 3\]"):
        numdiff.nn.RMSNorm((2, 3))(numdiff.ones(3, 2))
