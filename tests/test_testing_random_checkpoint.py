"""numdiff.testing.assert_close against torch.testing's verdicts, numdiff.random.fork_rng, and
numdiff.utils.checkpoint: the same values and gradients as running without it, dropout included."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn as nn
from numdiff.utils.checkpoint import checkpoint, checkpoint_sequential

PAIRS = [
    ([1.0, 2.0], [1.0, 2.0 + 1e-6], {}),
    ([1.0, 2.0], [1.0, 2.1], {}),
    ([1.0, float("nan")], [1.0, float("nan")], {}),
    ([1.0, float("nan")], [1.0, float("nan")], {"equal_nan": True}),
    ([1.0, 2.0], [1.0, 2.05], {"rtol": 0.1, "atol": 0.0}),
    ([1, 2], [1, 3], {}),
    ([float("inf")], [float("inf")], {}),
]


@pytest.mark.parametrize("actual, expected, kwargs", PAIRS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_assert_close_gives_torchs_verdict(actual, expected, kwargs, dtype):
    is_float = isinstance(actual[0], float)

    def verdict(lib):
        make = (lambda v: lib.tensor(v, dtype=getattr(lib, dtype))) if is_float else lib.tensor
        try:
            lib.testing.assert_close(make(actual), make(expected), **kwargs)
        except AssertionError:
            return False
        return True

    assert verdict(numdiff) == verdict(torch)


def test_assert_close_checks_dtype_shape_and_containers():
    with pytest.raises(AssertionError, match="dtype"):
        numdiff.testing.assert_close(numdiff.ones(2), numdiff.ones(2, dtype=numdiff.float64))
    numdiff.testing.assert_close(numdiff.ones(2), numdiff.ones(2, dtype=numdiff.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="shape"):
        numdiff.testing.assert_close(numdiff.ones(2), numdiff.ones(3))
    numdiff.testing.assert_close({"a": [numdiff.ones(2), 1.0]}, {"a": [numdiff.ones(2), 1.0]})
    with pytest.raises(AssertionError, match="custom"):
        numdiff.testing.assert_close(numdiff.ones(1), numdiff.zeros(1), msg="custom")
    with pytest.raises(ValueError, match="rtol and atol"):
        numdiff.testing.assert_close(numdiff.ones(1), numdiff.ones(1), rtol=1e-3)
    sample = numdiff.testing.make_tensor(3, 4, dtype=numdiff.int64, low=0, high=3)
    assert tuple(sample.shape) == (3, 4) and set(sample.unique().tolist()) <= {0, 1, 2}


def test_fork_rng_restores_the_generator():
    numdiff.manual_seed(5)
    with numdiff.random.fork_rng():
        inside = numdiff.rand(3)
    assert numdiff.equal(numdiff.rand(3), inside)


def _model():
    numdiff.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


@pytest.mark.parametrize("form", ["checkpoint", "sequential", "closure"])
def test_checkpoint_gives_the_values_and_gradients_of_a_plain_run(form):
    model = _model()
    x = numdiff.randn(5, 4, requires_grad=True)
    state = numdiff.get_rng_state()
    plain = model(x).pow(2).sum()
    plain.backward()
    expected = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    numdiff.set_rng_state(state)
    if form == "checkpoint":
        out = checkpoint(model, x, use_reentrant=False)
    elif form == "sequential":
        out = checkpoint_sequential(model, 3, x)
    else:
        out = checkpoint(lambda inp, scale: model(inp) * scale, x, 1.0, use_reentrant=True)
    checked = out.pow(2).sum()
    checked.backward()
    assert checked.item() == pytest.approx(plain.item(), rel=1e-6)
    got = [p.grad for p in model.parameters()] + [x.grad]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_reaches_parameters_when_no_input_requires_grad():
    model = _model()
    checkpoint(model, numdiff.randn(3, 4)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(TypeError, match="checkpoint: expected a callable"):
        checkpoint(3, numdiff.ones(1))


def test_assert_close_messages_name_the_worst_element_and_the_item():
    with pytest.raises(AssertionError) as ours:
        numdiff.testing.assert_close({"a": [numdiff.tensor([1.0, 2.0])]}, {"a": [numdiff.tensor([1.0, 3.0])]})
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close({"a": [torch.tensor([1.0, 2.0])]}, {"a": [torch.tensor([1.0, 3.0])]})
    for line in ("Mismatched elements: 1 / 2 (50.0%)", "Greatest absolute difference: 1.0 at index (1,)",
                 "The failure occurred for item ['a'][0]"):  # fmt: skip
        assert line in str(ours.value) and line in str(theirs.value)
    with pytest.raises(ValueError, match="`low` must be less than `high`"):
        numdiff.testing.make_tensor(2, dtype=numdiff.float32, low=3, high=1)


def test_assert_close_fails_on_all_nan_and_strides_and_refuses_mixed_types_as_torch():
    for lib in (numdiff, torch):
        with pytest.raises(AssertionError, match="Greatest absolute difference: nan at index"):
            lib.testing.assert_close(lib.tensor([float("nan"), 1.0]), lib.tensor([float("nan"), 1.0]))
        with pytest.raises(AssertionError, match="not close"):  # numdiff raised ValueError (All-NaN slice)
            lib.testing.assert_close(lib.tensor([float("nan")]), lib.tensor([float("nan")]))
        with pytest.raises(AssertionError, match=r"'stride\(\)' do not match"):
            lib.testing.assert_close(lib.ones(2, 3).t(), lib.ones(3, 2), check_stride=True)
        lib.testing.assert_close(lib.ones(2, 3).t(), lib.ones(3, 2).t().contiguous().t(), check_stride=True)
        with pytest.raises(TypeError, match="No comparison pair"):
            lib.testing.assert_close(lib.tensor(1.0), 1.0)
        lib.testing.assert_close(np.ones(2), np.ones(2))
