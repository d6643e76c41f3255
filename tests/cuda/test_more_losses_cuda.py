"""The losses composed in numdiff.nn._likelihood_losses and _margin_losses (and huber_loss) give
the CPU's values and gradients on CUDA: they are built from ops that have CUDA kernels."""

import warnings

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nnf
from tests.nn.test_more_losses import CASES, _call, _case


def _value_and_grads(device, name, kwargs, with_grad, without_grad):
    inputs = [numdiff.tensor(a).to(device).requires_grad_() for a in with_grad]
    constants = [numdiff.tensor(a).to(device) for a in without_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = _call(nnf, name, [*inputs, *constants], kwargs, "sum")
    loss.backward()
    return float(loss.detach().cpu()), [t.grad.cpu().numpy() for t in inputs]


@pytest.mark.parametrize("name", CASES)
def test_loss_on_the_device_matches_the_cpu(name):
    kwargs, with_grad, without_grad = _case(name, np.random.default_rng(0))
    value, grads = _value_and_grads("cuda", name, kwargs, with_grad, without_grad)
    expected_value, expected_grads = _value_and_grads("cpu", name, kwargs, with_grad, without_grad)
    assert value == pytest.approx(expected_value, rel=1e-12)
    for mine, theirs in zip(grads, expected_grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-11, atol=1e-13)
