"""numdiff.testing (torch.testing): assert_close's per-dtype tolerances, containers and messages
match PyTorch's; make_tensor draws in range; assert_allclose is the deprecated form."""

from __future__ import annotations

import math

import pytest

import numdiff
from numdiff.testing import assert_allclose, assert_close, make_tensor

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype, delta, close", [
    ("float32", 5e-6, True), ("float32", 5e-5, False), ("float64", 5e-8, True), ("float64", 5e-7, False),
    ("int64", 0, True), ("int64", 1, False),
])
def test_default_tolerances_follow_the_dtype_as_in_pytorch(dtype, delta, close):
    base = [1.0, 2.0, 3.0]
    ours = [numdiff.tensor(v, dtype=getattr(numdiff, dtype)) for v in (base, [b + delta for b in base])]
    theirs = [torch.tensor(v, dtype=getattr(torch, dtype)) for v in (base, [b + delta for b in base])]
    for check, pair in ((assert_close, ours), (torch.testing.assert_close, theirs)):
        if close:
            check(*pair)
        else:
            with pytest.raises(AssertionError):
                check(*pair)


def test_the_mismatch_message_names_count_worst_index_and_allowed_tolerance():
    with pytest.raises(AssertionError) as ours:
        assert_close(numdiff.tensor([1.0, 2.0, 3.0]), numdiff.tensor([1.0, 2.5, 3.0]))
    assert "Mismatched elements: 1 / 3 (33.3%)" in str(ours.value)
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in str(ours.value)


@pytest.mark.parametrize("actual, expected, attribute", [
    (numdiff.ones(2), numdiff.ones(3), "shape"),
    (numdiff.ones(2), numdiff.ones(2, dtype=numdiff.float64), "dtype"),
])
def test_shape_and_dtype_must_match(actual, expected, attribute):
    with pytest.raises(AssertionError, match=f"The values for attribute '{attribute}' do not match"):
        assert_close(actual, expected)


def test_containers_numbers_nan_and_explicit_tolerances():
    assert_close({"w": [numdiff.ones(2), 3.0]}, {"w": [numdiff.ones(2), 3.0]})
    with pytest.raises(AssertionError, match=r"item \['w'\]\[1\]"):
        assert_close({"w": [numdiff.ones(2), 3.0]}, {"w": [numdiff.ones(2), 3.5]})
    nan = numdiff.tensor([math.nan])
    with pytest.raises(AssertionError):
        assert_close(nan, nan)
    assert_close(nan, nan, equal_nan=True)
    assert_close(numdiff.tensor([1.0]), numdiff.tensor([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(ValueError, match="both 'rtol' and 'atol' must be either specified or omitted"):
        assert_close(numdiff.ones(1), numdiff.ones(1), rtol=0.1)
    with pytest.raises(AssertionError, match="expected is a Tensor but actual is a list"):
        assert_close([1.0], numdiff.ones(1))
    with pytest.raises(AssertionError, match="custom"):
        assert_close(numdiff.ones(1), numdiff.zeros(1), msg="custom")


def test_assert_allclose_is_deprecated_casts_expected_and_matches_nan():
    with pytest.warns(FutureWarning, match="use assert_close"):
        assert_allclose(numdiff.tensor([1.0, math.nan]), [1.0, math.nan])


def test_make_tensor_draws_inside_the_range_with_the_dtype_asked():
    numdiff.manual_seed(0)
    t = make_tensor(3, 4, dtype=numdiff.float64, low=-1, high=2, requires_grad=True)
    assert t.shape == (3, 4) and t.dtype == numdiff.float64 and t.requires_grad
    assert float(t.min()) >= -1 and float(t.max()) < 2
    ints = make_tensor((50,), dtype=numdiff.int64, low=0, high=3)
    assert set(ints.tolist()) <= {0, 1, 2}
    with pytest.raises(ValueError, match="make_tensor: low=2.0 and high=1.0"):
        make_tensor(2, dtype=numdiff.float32, low=2, high=1)


def test_version_module_has_pytorchs_fields():
    assert numdiff.version.__version__ == numdiff.__version__
    assert numdiff.version.cuda is None and numdiff.version.hip is None
