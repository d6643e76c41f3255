"""The fast paths of roll, cumsum and the gather family: each runs as one primitive (no gather or
scatter-add standing in for a copy), and the values and gradients stay NumPy's and torch's."""

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck


def _float64(*shape: int, seed: int = 0) -> numdiff.Tensor:
    data = np.random.default_rng(seed).standard_normal(shape)
    return numdiff.tensor(data, requires_grad=True)


@pytest.mark.parametrize(
    ("shape", "shifts", "dims"),
    [((3, 5), 2, 1), ((2, 3, 4), (-1, 5), (0, 2)), ((4, 6), (3, -3, 1), (1, 1, 0)), ((2, 7), -9, -1)],
)
def test_roll_is_one_op_whose_gradient_is_a_roll(shape, shifts, dims) -> None:
    x = _float64(*shape)
    y = x.roll(shifts, dims)
    assert y.grad_fn.name() == "RollBackward"
    np.testing.assert_array_equal(y.detach().numpy(), np.roll(x.detach().numpy(), shifts, dims))
    assert gradcheck(lambda t: t.roll(shifts, dims), (x,))
    assert gradgradcheck(lambda t: t.roll(shifts, dims), (x,))


def test_roll_by_whole_turns_is_a_copy() -> None:
    x = _float64(3, 4)
    y = x.roll((3, -8), (0, 1))
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy())
    assert y.data_ptr() != x.data_ptr()
