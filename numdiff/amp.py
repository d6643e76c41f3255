"""Automatic mixed precision, as torch.amp: ``autocast`` runs the matmul-like ops in a lower
precision (bfloat16 on the CPU, float16 on CUDA by default) and the precision-sensitive ones in
float32, and ``GradScaler`` scales the loss so that float16 gradients do not underflow.

autocast is a level of the interpreter stack (numdiff.autograd.transform_state): while it is on,
each op call passes it first, and it casts the op's floating inputs by the op's policy before the
op runs at the level below. float64 inputs are never cast, as in PyTorch. The casts are ops
themselves, so gradients flow back to the float32 weights in float32. A function compiled with
numdiff.compile runs its ops in their own dtypes under autocast (its traced graph has no casts);
its cache keys on the autocast settings, so no graph traced under one setting runs under another.

    >>> with numdiff.autocast("cpu"):
    ...     y = numdiff.nn.Linear(4, 2)(numdiff.randn(3, 4))
    >>> y.dtype
    numdiff.bfloat16
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

from numdiff import _dtype
from numdiff.autograd.grad_mode import no_grad
from numdiff.autograd.transform_state import Interpreter, pop, push
from numdiff.tensor import Tensor

# The ops whose inputs autocast lowers (numdiff's registered op names), and those it raises to
# float32 on each device, after PyTorch's lists.
# The recurrent sequence ops have float32/float64 kernels only: they run in float32 (their input
# projections, linear ops, run lowered).
LOWER = frozenset({"matmul", "linear", "conv2d", "conv_transpose2d", "attention", "coo_mm"})
_SEQUENCES = frozenset({"lstm_sequence", "gru_sequence", "rnn_sequence"})
FLOAT32 = {
    "cpu": frozenset({"binary_cross_entropy", "cross_entropy", "nll_loss", "prod", "cumprod", "solve_triangular",
                      "linalg_cholesky", "linalg_det", "linalg_eigh_vectors", "linalg_eigvalsh", "linalg_inv",
                      "linalg_logabsdet", "linalg_matrix_exp", "linalg_pinv", "linalg_qr_q", "linalg_qr_r",
                      "linalg_solve", "linalg_svd_u", "linalg_svd_vh", "linalg_svdvals"}) | _SEQUENCES,
    "cuda": frozenset({"acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
                       "rsqrt", "sinh", "tan", "pow", "softplus", "softmax", "log_softmax", "sum", "prod", "cumprod", "cumsum",
                       "binary_cross_entropy", "cross_entropy", "nll_loss", "logcumsumexp"}) | _SEQUENCES,
}  # fmt: skip
DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
_LOWERED = (_dtype.float32, _dtype.float16, _dtype.bfloat16)


class _Settings(threading.local):
    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {"cpu": False, "cuda": False}
        self.dtype: dict[str, Any] = dict(DEFAULT_DTYPES)
        self.level: _AutocastLevel | None = None
        self.key: tuple = ()  # state_key's value, remade where the settings change

    def remake_key(self) -> None:
        # Only the devices with autocast on: a dtype set for a device whose autocast is off casts
        # nothing, so it cannot change what a trace records.
        self.key = tuple((kind, self.dtype[kind].name) for kind in sorted(self.enabled) if self.enabled[kind])


_settings = _Settings()


class _AutocastLevel(Interpreter):
    """The interpreter level that casts op inputs while autocast is on in this thread."""

    def apply(self, cls: Any, inputs: tuple, attrs: dict) -> Any:
        name = getattr(cls, "op_name", None)
        if name is not None:
            inputs = _cast_inputs(name, inputs)
        return super().apply(cls, inputs, attrs)


def _cast_inputs(name: str, inputs: tuple) -> tuple:
    device_type = next((t.device.type for t in inputs if isinstance(t, Tensor)), None)
    if device_type is None or not _settings.enabled.get(device_type, False):
        return inputs
    if name in LOWER:
        target = _settings.dtype[device_type]
    elif name in FLOAT32.get(device_type, ()):
        target = _dtype.float32
    else:
        return inputs
    return tuple(t.to(target) if isinstance(t, Tensor) and t.dtype in _LOWERED and t.dtype is not target else t for t in inputs)


def casts_on(tensor: Tensor) -> bool:
    """Whether autocast is on for `tensor`'s device in this thread: the ops of LOWER then take
    operands of mixed float dtypes (this level casts them to one), so their argument checks let
    such operands through, as PyTorch's do under autocast."""
    return _settings.level is not None and _settings.enabled.get(tensor.device.type, False)


def computes_in_float32(name: str, tensor: Tensor) -> bool:
    """Whether autocast, on for `tensor`'s device in this thread, runs op `name` in float32 (the ops
    of FLOAT32): its result is then float32 for a half operand, as PyTorch's autocast gives."""
    device_type = tensor.device.type
    return (_settings.level is not None and _settings.enabled.get(device_type, False)
            and name in FLOAT32.get(device_type, ()))


def _device_type(device_type: Any) -> str:
    kind = str(device_type).split(":")[0]
    if kind not in DEFAULT_DTYPES:
        raise ValueError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r}")
    return kind


class autocast:  # noqa: N801 - PyTorch's name
    """A context manager (and decorator) that runs ops in mixed precision on `device_type`.

    `dtype` is the lower precision (bfloat16 on the CPU and float16 on CUDA by default);
    ``enabled=False`` switches autocast off inside an enclosing autocast region.
    """

    def __init__(self, device_type: str = "cpu", dtype: Any = None, enabled: bool = True, cache_enabled: bool | None = None) -> None:
        self.device_type = _device_type(device_type)
        self.fast_dtype = _dtype.to_dtype(dtype) if dtype is not None else DEFAULT_DTYPES[self.device_type]
        if self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            raise ValueError(f"autocast: dtype must be bfloat16 or float16, got {self.fast_dtype!r}")
        self.enabled = bool(enabled)
        self._saved: list[tuple[bool, Any, _AutocastLevel | None]] = []

    def __enter__(self) -> autocast:
        kind = self.device_type
        self._saved.append((_settings.enabled[kind], _settings.dtype[kind], _settings.level))
        _settings.enabled[kind], _settings.dtype[kind] = self.enabled, self.fast_dtype
        _settings.remake_key()
        if self.enabled and _settings.level is None:
            _settings.level = _AutocastLevel()
            push(_settings.level)
        return self

    def __exit__(self, *exc_info: object) -> None:
        enabled, dtype, level = self._saved.pop()
        kind = self.device_type
        if level is None and _settings.level is not None:
            pop(_settings.level)
            _settings.level = None
        _settings.enabled[kind], _settings.dtype[kind] = enabled, dtype
        _settings.remake_key()

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return function(*args, **kwargs)

        return wrapped


def state_key() -> tuple:
    """This thread's autocast settings, for caches of traced code (numdiff.compile keys on them):
    the devices with autocast on and their dtypes, () when it is off everywhere. Kept up to date by
    autocast's enter and exit, so that a compiled call reads it without building it.

    >>> state_key()
    ()
    """
    return _settings.key


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for `device_type` (CUDA when not given, as PyTorch's) in this thread."""
    return _settings.enabled[_device_type(device_type or "cuda")]


def is_autocast_cpu_enabled() -> bool:
    """Whether autocast is on for the CPU in this thread."""
    return _settings.enabled["cpu"]


def get_autocast_dtype(device_type: str) -> Any:
    """The lower-precision dtype autocast uses on `device_type`."""
    return _settings.dtype[_device_type(device_type)]


def get_autocast_cpu_dtype() -> Any:
    """The lower-precision dtype autocast uses on the CPU."""
    return _settings.dtype["cpu"]


class GradScaler:
    """Scales the loss before backward (``scaler.scale(loss).backward()``) so small float16
    gradients stay representable, then unscales them in ``step``, which skips the optimizer step
    when any gradient is inf or NaN; ``update`` halves the scale after such a step and doubles it
    after `growth_interval` good ones."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:  # fmt: skip
        if not growth_factor > 1.0 or not 0.0 < backoff_factor < 1.0 or growth_interval < 1:
            raise ValueError("GradScaler: growth_factor must be > 1, backoff_factor in (0, 1), growth_interval >= 1")
        self.device = str(device)
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor, self._growth_interval = growth_factor, backoff_factor, growth_interval
        self._growth_tracker = 0
        self._unscaled: dict[int, bool] = {}  # optimizer id -> whether it found inf/NaN
        self._found_inf_this_step = False

    def is_enabled(self) -> bool:
        """Whether scaling is on (with enabled=False every method passes values through)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale factor (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs: Any) -> Any:
        """`outputs` (a tensor, or a list or tuple of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list or tuple of them, got {type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide `optimizer`'s gradients by the scale, in place (once per step)."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("GradScaler.unscale_: already called on this optimizer since the last update()")
        found_inf = False
        inverse = 1.0 / self._scale
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inverse)
                    if not bool(p.grad.isfinite().all()):
                        found_inf = True
        self._unscaled[id(optimizer)] = found_inf

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale the gradients (unless unscale_ did) and step, or skip the step if any is inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        if self._unscaled[id(optimizer)]:
            self._found_inf_this_step = True
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Adjust the scale after a step: back off after inf/NaN, grow after growth_interval good steps."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif self._found_inf_this_step or any(self._unscaled.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                self._scale = grown if math.isfinite(grown) else self._scale
                self._growth_tracker = 0
        self._unscaled.clear()
        self._found_inf_this_step = False

    def state_dict(self) -> dict[str, Any]:
        """The scale and growth state, for checkpoints."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}  # fmt: skip

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state from state_dict()."""
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (saved from a disabled scaler?)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


__all__ = [
    "GradScaler", "autocast", "get_autocast_cpu_dtype", "get_autocast_dtype", "is_autocast_cpu_enabled",
    "is_autocast_enabled",
]  # fmt: skip


def __dir__() -> list[str]:
    return sorted(__all__)
