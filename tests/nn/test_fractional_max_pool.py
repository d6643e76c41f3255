"""fractional_max_pool2d / nn.FractionalMaxPool2d against torch for given _random_samples: values,
indices and gradients; a float64 gradient check; the errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as nf

_CASES = [
    ((2, 3, 9, 8), 3, (4, 5), None),
    ((2, 2, 7, 7), 2, None, (0.5, 0.5)),
    ((3, 10, 11), (2, 3), (5, 4), None),  # unbatched
    ((1, 1, 5, 5), 1, 5, None),
    ((1, 2, 6, 6), (2, 2), 1, None),
    ((1, 2, 30, 20), (3, 2), (11, 17), None),
]


@pytest.mark.parametrize(("shape", "kernel", "output_size", "output_ratio"), _CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_indices_and_gradient_match_torch(shape, kernel, output_size, output_ratio, dtype):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:3] = (0.0, -1e30, 1e30)
    x.reshape(-1)[-4:] = 0.0  # ties: the first in the window wins
    samples = rng.random((shape[0] if len(shape) == 4 else 1, shape[-3], 2)).astype(dtype)
    ours_x, theirs_x = numdiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, got_index = nf.fractional_max_pool2d(ours_x, kernel, output_size, output_ratio, True, numdiff.tensor(samples))
    expected, expected_index = torch.nn.functional.fractional_max_pool2d(
        theirs_x, kernel, output_size, output_ratio, True, torch.tensor(samples)
    )
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(got_index.numpy(), expected_index.numpy())
    assert str(got_index.dtype) == "numdiff.int64"
    g = rng.standard_normal(tuple(expected.shape)).astype(dtype)
    got.backward(numdiff.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-6)


def test_module_takes_its_samples_and_a_single_ratio_as_torch():
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8))
    x[0, 1, 2, 2] = np.nan
    samples = np.random.default_rng(4).random((2, 3, 2))
    ours = numdiff.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True, _random_samples=numdiff.tensor(samples))
    theirs = torch.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True, _random_samples=torch.tensor(samples))
    (got, got_index), (expected, expected_index) = ours(numdiff.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(got_index.numpy(), expected_index.numpy())


def test_gradient_passes_gradcheck_and_draws_its_own_windows():
    x = numdiff.tensor(np.random.default_rng(5).standard_normal((1, 2, 7, 6)), requires_grad=True)
    samples = numdiff.tensor([[[0.3, 0.8], [0.9, 0.1]]], dtype=numdiff.float64)
    assert numdiff.autograd.gradcheck(lambda t: nf.fractional_max_pool2d(t, 2, (4, 3), _random_samples=samples), (x,))
    drawn = nf.fractional_max_pool2d(x, 2, output_size=(4, 3))  # no samples: numdiff's generator
    assert tuple(drawn.shape) == (1, 2, 4, 3)


def test_bad_arguments_name_the_function_and_the_values():
    x = numdiff.ones(1, 2, 5, 5)
    with pytest.raises(ValueError, match="fractional_max_pool2d requires specifying either an output_size or an output_ratio"):
        nf.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="fractional_max_pool2d: pool height 3 too large relative to input height 5 for an output height of 4"):
        nf.fractional_max_pool2d(x, 3, (4, 2))
    with pytest.raises(ValueError, match=r"_random_samples must have shape \(N, C, 2\) = \(1, 2, 2\).*got \(1, 2\)"):
        nf.fractional_max_pool2d(x, 2, 3, _random_samples=numdiff.rand(1, 2))
    with pytest.raises(ValueError, match=r"output_ratio must be a number or two numbers in \(0, 1\), got 1.5"):
        nf.fractional_max_pool2d(x, 2, output_ratio=1.5)
    with pytest.raises(ValueError, match=r"3D \(C, H, W\) or 4D \(N, C, H, W\) input, got shape \(5, 5\)"):
        nf.fractional_max_pool2d(numdiff.ones(5, 5), 2, 3)
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an output size, or a pooling ratio"):
        numdiff.nn.FractionalMaxPool2d(2)
