"""set_detect_anomaly: the first op whose gradient holds NaN/Inf is named, with the file:line of the
user code that created it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import numdiff
from numdiff.autograd import AnomalyError, set_detect_anomaly

# The gradients here divide by zero on purpose.
pytestmark = pytest.mark.filterwarnings(
    "ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)


def _here() -> int:
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


def test_anomaly_names_the_op_and_the_user_line_that_created_it():
    x = numdiff.tensor([0.0, 4.0], requires_grad=True)
    with set_detect_anomaly(True):
        line = _here() + 1
        root = x.sqrt()
        loss = (root * 0.0 + root).sum()
        with pytest.raises(AnomalyError) as info:
            loss.backward()
    message = str(info.value)
    assert "SqrtBackward" in message
    assert f"{__file__}:{line}" in message
    assert "Inf" in message


def test_anomaly_reports_nan_as_nan():
    x = numdiff.tensor([0.0], requires_grad=True)
    with set_detect_anomaly(True):
        line = _here() + 1
        y = x.sqrt() * 0.0
        with pytest.raises(AnomalyError, match=r"SqrtBackward returned NaN") as info:
            y.sum().backward()
    assert f"test_anomaly.py:{line}" in str(info.value)


def test_anomaly_error_is_a_runtime_error():
    assert issubclass(AnomalyError, RuntimeError)


def test_without_anomaly_detection_the_bad_gradient_goes_through_silently():
    x = numdiff.tensor([0.0, 4.0], requires_grad=True)
    x.sqrt().sum().backward()
    assert np.isinf(x.grad.numpy()[0]) and x.grad.numpy()[1] == 0.25


def test_anomaly_as_a_function_stays_on_until_switched_off():
    set_detect_anomaly(True)
    try:
        assert numdiff.autograd.anomaly.is_enabled()
        x = numdiff.tensor([0.0], requires_grad=True)
        with pytest.raises(AnomalyError):
            x.sqrt().sum().backward()
    finally:
        set_detect_anomaly(False)
    assert not numdiff.autograd.anomaly.is_enabled()


def test_anomaly_context_restores_the_previous_setting():
    with set_detect_anomaly(True):
        with set_detect_anomaly(False):
            assert not numdiff.autograd.anomaly.is_enabled()
        assert numdiff.autograd.anomaly.is_enabled()
    assert not numdiff.autograd.anomaly.is_enabled()


def test_op_recorded_before_detection_is_still_named():
    x = numdiff.tensor([0.0], requires_grad=True)
    y = x.sqrt()
    with (
        set_detect_anomaly(True),
        pytest.raises(AnomalyError, match="SqrtBackward.*before anomaly detection"),
    ):
        y.sum().backward()


def test_finite_gradients_pass_with_detection_on():
    x = numdiff.tensor([1.0, 4.0], requires_grad=True)
    with set_detect_anomaly(True):
        x.sqrt().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.25])


def test_detect_anomaly_is_torchs_context_manager():
    """`with torch.autograd.detect_anomaly():` takes no mode: it turns detection on for the block only,
    with PyTorch's warning, and check_nan=False keeps creation sites without checking gradients."""
    assert not numdiff.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with numdiff.autograd.detect_anomaly():
            assert numdiff.is_anomaly_enabled() and numdiff.is_anomaly_check_nan_enabled()
            x = numdiff.tensor([0.0, 1.0], requires_grad=True)
            with pytest.raises(AnomalyError, match="Sqrt|sqrt"):
                (x.sqrt() * 0.0).sum().backward()
    assert not numdiff.is_anomaly_enabled()
    with pytest.warns(UserWarning), numdiff.autograd.detect_anomaly(check_nan=False):
        assert not numdiff.is_anomaly_check_nan_enabled()
        x = numdiff.tensor([0.0, 1.0], requires_grad=True)
        (x.sqrt() * 0.0).sum().backward()  # no check: the NaN reaches .grad, as in PyTorch
        assert np.isnan(x.grad.numpy()[0])
    assert numdiff.is_anomaly_check_nan_enabled() and not numdiff.is_anomaly_enabled()


def test_anomaly_passes_a_function_with_several_outputs_and_still_names_its_nan():
    # The output ports of a several-output node hand on a slots object, not a tensor: anomaly
    # detection raised AttributeError on it instead of running backward.
    class Two(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2, x.log()

        @staticmethod
        def backward(ctx, a, b):
            (x,) = ctx.saved_tensors
            return a * 2 + b / x

    x = numdiff.tensor([1.0, 2.0], requires_grad=True)
    with set_detect_anomaly(True):
        a, b = Two.apply(x)
        (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 2.5])
    zero = numdiff.tensor([0.0, 2.0], requires_grad=True)
    with set_detect_anomaly(True), pytest.raises(AnomalyError, match="TwoBackward returned Inf"):
        a, b = Two.apply(zero)
        (a.sum() + b.sum()).backward()
