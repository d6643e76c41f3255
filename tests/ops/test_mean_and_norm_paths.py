"""mean's direct Sum call and the fused-norm dtype/device test (numdiff.ops.norm._fusable): the same
numbers as the composed forms they replace, the same errors, and the composed form where the
kernels do not apply."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
from numdiff.ops.norm import _fusable, composed_grouped_norm, grouped_norm

torch = pytest.importorskip("torch")

DIMS = [None, 0, 1, -1, (0, 2), (-1, 0), [], (2, 1, 0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_is_sum_divided_by_count_bit_for_bit_and_matches_torch(dtype, dim, keepdim) -> None:
    data = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(dtype)
    x = numdiff.tensor(data)
    got = x.mean(dim, keepdim=keepdim)
    reduced = tuple(range(3)) if dim is None or dim == [] else dim
    count = math.prod(data.shape[d] for d in ((reduced,) if isinstance(reduced, int) else reduced))
    expected = x.sum(reduced, keepdim=keepdim) / count
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    want = torch.tensor(data).mean(dim if dim is not None else (), keepdim=keepdim)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7)


def test_mean_float64_gradient_matches_central_differences() -> None:
    x = numdiff.tensor(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: t.mean((0, 1)) * t.mean(1, keepdim=True).sum(), (x,))


def test_mean_of_float16_is_computed_in_float32_and_rounded_once() -> None:
    data = np.full(70_000, 2.0, np.float16)  # a float16 sum would overflow past 65504
    got = numdiff.tensor(data).mean()
    assert got.dtype == numdiff.float16
    assert float(got) == float(torch.tensor(data).mean()) == 2.0


def test_mean_bad_input_names_the_op_and_the_values() -> None:
    x = numdiff.ones(2, 3)
    with pytest.raises(IndexError, match=r"mean: dimension 2 is out of range"):
        x.mean(2)
    with pytest.raises(ValueError, match=r"mean: dim \(1, -1\) names a dimension more than once"):
        x.mean((1, -1))
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*int64"):
        numdiff.ones(2, dtype=numdiff.int64).mean()


def test_fusable_needs_one_float_dtype_and_one_device() -> None:
    x32, w32 = numdiff.ones(2, 3), numdiff.ones(3)
    assert _fusable(x32) and _fusable(x32, w32, None) and _fusable(x32, None, w32)
    assert not _fusable(x32, w32.double())
    assert not _fusable(x32, None, numdiff.ones(3, dtype=numdiff.float16))
    assert not _fusable(numdiff.ones(2, 3, dtype=numdiff.int64), None)
    assert not _fusable(x32, numdiff.empty(3, device="meta"))


def test_grouped_norm_with_a_float64_weight_takes_the_composed_form() -> None:
    data = np.random.default_rng(5).standard_normal((4, 3, 5)).astype(np.float32)
    x, weight, bias = numdiff.tensor(data), numdiff.tensor(np.linspace(0.5, 2.0, 3)), numdiff.zeros(3)
    view = (1, 4, 3, 1, 5)
    got = grouped_norm(x, view, weight, bias, 1e-5)
    expected = composed_grouped_norm(x, view, weight, bias, 1e-5)
    assert got.dtype == expected.dtype == numdiff.float64
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
