"""What a compiled call is keyed and guarded by: the key parts of its tensors and Python values,
the global modes it runs under, and whether it changed tensors outside what a trace records
(compiled.py's CompiledFunction and Trace read these)."""

from __future__ import annotations

from typing import Any

from numdiff._device import get_default_device, set_default_device
from numdiff._dtype import get_default_dtype, set_default_dtype
from numdiff.autograd import anomaly
from numdiff.autograd.grad_mode import _state
from numdiff.backend import is_host, is_numpy, to_host
from numdiff.tensor import Tensor


def value_bytes(t: Tensor) -> bytes:
    """The bytes of a tensor's values, copied to the host first when it lives on a GPU."""
    data = t._data
    return to_host(data).tobytes()


def tensor_key(t: Tensor) -> tuple:
    data = t._data
    if is_host(data):
        return (data.shape, data.dtype, t._requires_grad)
    return (data.shape, data.dtype, t._requires_grad, str(data.device))


def tensor_state(t: Tensor) -> tuple:
    """What a replay could not redo about a tensor: its array and .grad objects, requires_grad and
    version (a write by an op the trace recorded is redone by the write-back)."""
    return t._data, t._grad, t._requires_grad, t._version_counter[0]


def changed_outside_the_graph(reachable: list, written: dict) -> bool:
    for t, (data, grad, requires_grad, version) in reachable:
        if id(data) in written:
            continue
        now = tensor_state(t)
        if now[0] is not data or now[1] is not grad or now[2:] != (requires_grad, version):
            return True
    return False


def global_state() -> tuple:
    """The global modes a call runs under (grad mode is also part of the key)."""
    return _state.enabled, get_default_dtype(), get_default_device(), anomaly.is_enabled()


def restore_global_state(state: tuple) -> None:
    _state.enabled, dtype, device, anomaly_enabled = state
    set_default_dtype(dtype)
    set_default_device(device)
    anomaly.set_detect_anomaly(anomaly_enabled, anomaly.is_check_nan_enabled())


def slot_of(t: Tensor, tensors: list, captured: list) -> tuple:
    for slot, candidate in enumerate(tensors):
        if candidate is t:
            return ("input", slot)
    return ("captured", next(i for i, c in enumerate(captured) if c is t))


def tensor_at(slot: tuple, tensors: list, captured: list) -> Tensor:
    kind, index = slot
    return tensors[index] if kind == "input" else captured[index]


def nested_tensors(args: tuple, kwargs: dict) -> bool:
    stack = [a for a in args if not isinstance(a, Tensor)] + list(kwargs.values())
    while stack:
        value = stack.pop()
        if isinstance(value, Tensor):
            return True
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return False


def hashable(value: Any) -> Any:
    """A key part equal for equal values: NumPy arrays by their bytes (repr elides long ones)."""
    if is_numpy(value):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if type(value) in (list, tuple):
        return (type(value), tuple(hashable(item) for item in value))
    if type(value) is dict:
        return (dict, tuple((hashable(k), hashable(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)
