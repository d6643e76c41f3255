"""Anomaly detection: find the first op whose gradient is NaN or Inf, and the user line that made it."""

from __future__ import annotations

import os
import sys
import threading
import warnings

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _State(threading.local):
    enabled = False
    check_nan = True  # off: creation sites are still recorded, gradients are not checked


_state = _State()


class AnomalyError(RuntimeError):
    """Backward produced a NaN or Inf gradient while anomaly detection was on."""


def is_enabled() -> bool:
    return _state.enabled


def is_check_nan_enabled() -> bool:
    return _state.check_nan


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """``set_detect_anomaly(True)`` turns detection on now; as a context manager, for a block.

    While on, every recorded op remembers the file:line of user code that created it, and backward
    raises `AnomalyError` at the first op whose input gradient holds a NaN or Inf (unless
    ``check_nan=False``, which keeps the creation sites and skips the check).
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled, _state.check_nan = self._previous


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """``with detect_anomaly():`` turns detection on for the block (see `set_detect_anomaly`), as
    PyTorch's context manager does: on entering, not at construction, with PyTorch's warning that
    it slows every op down."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._previous = (_state.enabled, _state.check_nan)

    def __enter__(self) -> None:
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            stacklevel=2,
        )
        self._previous = (_state.enabled, _state.check_nan)
        _state.enabled, _state.check_nan = True, bool(self.check_nan)

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled, _state.check_nan = self._previous


def creation_site() -> str:
    """The file:line of the innermost frame outside the numdiff package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def check_gradients(node: object, grads: tuple) -> None:
    """Raise `AnomalyError` if any gradient `node` produced has a NaN or Inf."""
    for index, grad in enumerate(grads):
        if grad is None or type(getattr(grad, "grads", None)) is list:
            # An output port hands on its slots object (custom_function._OutputGrads): the gradient
            # in it was checked where the node that made it returned it.
            continue
        data = np.asarray(grad._data) if hasattr(grad._data, "__array__") else grad._data
        if not np.all(np.isfinite(data)):
            kind = "NaN" if np.isnan(data).any() else "Inf"
            site = getattr(node, "creation_site", None) or "<recorded before anomaly detection>"
            raise AnomalyError(
                f"Function {node.name()} returned {kind} values in its gradient for input {index} "
                f"(shape {tuple(data.shape)}). The op was created at {site}."
            )
