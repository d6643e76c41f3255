"""PyTorch's small top-level utilities that programs call in passing: type promotion queries
(result_type, promote_types, can_cast), the random state (get_rng_state, seed), spectral windows
(hann_window, ...), vander, combinations, unravel_index, histogram, and process-wide switches numdiff
accepts (float32 matmul precision, anomaly mode, interop threads). `FUNCTIONS` joins numdiff's
namespace; the Tensor's in-place random fills are in numdiff._tensor_fills.
"""

from __future__ import annotations

import itertools
import math
import pickle
from typing import Any

import numpy as np

from numdiff import _dtype, _random, creation
from numdiff._ground.args import is_int
from numdiff.autograd import anomaly
from numdiff.ops import arithmetic, indexing, shape
from numdiff.ops._util import ensure_tensor
from numdiff.tensor import Tensor


def result_type(tensor: Any, other: Any) -> _dtype.dtype:
    """The dtype an arithmetic op on `tensor` and `other` (tensors or numbers) returns, with
    PyTorch's categories: dimensioned tensors outrank 0-d ones, which outrank Python numbers."""
    if not isinstance(tensor, Tensor) and not isinstance(other, Tensor):
        return _dtype.promote(_number_dtype(tensor), _number_dtype(other))
    probes = [_probe(v) for v in (tensor, other)]
    return arithmetic.add(*probes).dtype


def _probe(value: Any) -> Any:
    if isinstance(value, Tensor):
        return creation.zeros((1,) * value.ndim, dtype=value.dtype)
    return value


def _number_dtype(value: Any) -> _dtype.dtype:
    if isinstance(value, bool):
        return _dtype.bool_
    if isinstance(value, int):
        return _dtype.int64
    if isinstance(value, float):
        return _dtype.get_default_dtype()
    raise TypeError(f"result_type: expected a Tensor or a number, got {type(value).__name__}")


def promote_types(type1: Any, type2: Any) -> _dtype.dtype:
    """The smallest dtype both `type1` and `type2` convert to without losing their category."""
    return _dtype.promote(_dtype.to_dtype(type1), _dtype.to_dtype(type2))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow `from_` -> `to` in an op's output: not floating to
    integral, and not a number to bool."""
    source, target = _dtype.to_dtype(from_), _dtype.to_dtype(to)
    if source.is_floating_point and not target.is_floating_point:
        return False
    return not (source is not _dtype.bool_ and target is _dtype.bool_)


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor, for set_rng_state."""
    return _state_tensor(_random.default_generator)


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator to a state from get_rng_state."""
    _restore_state(_random.default_generator, new_state)


def _state_tensor(generator: _random.Generator) -> Tensor:
    blob = pickle.dumps((generator.numpy.bit_generator.state, generator.initial_seed()))
    return creation.tensor(np.frombuffer(blob, dtype=np.uint8).copy(), dtype=_dtype.uint8)


def _restore_state(generator: _random.Generator, state: Any) -> None:
    if not isinstance(state, Tensor) or state.dtype is not _dtype.uint8 or state.ndim != 1:
        raise TypeError("set_rng_state: expected the uint8 tensor that get_rng_state returned")
    try:
        bit_state, seed = pickle.loads(state.numpy().tobytes())  # noqa: S301 - numdiff's own state bytes
        restored = np.random.default_rng()
        restored.bit_generator.state = bit_state
    except Exception as error:
        raise ValueError(f"set_rng_state: the tensor is not a numdiff generator state ({error})") from None
    with generator._lock:
        generator._rng, generator._seed = restored, seed


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    value = int(np.random.SeedSequence().entropy % (2**63))
    _random.manual_seed(value)
    return value


def initial_seed() -> int:
    """The seed the default generator was last seeded with (a fresh one if never seeded)."""
    current = _random.default_generator.initial_seed()
    return seed() if current is None else current


_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted for PyTorch code: numdiff's float32 matmuls always run in full float32 ("highest")."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"set_float32_matmul_precision: expected 'highest', 'high' or 'medium', got {precision!r}")
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision() -> str:
    """The precision last set with set_float32_matmul_precision ("highest" by default)."""
    return _MATMUL_PRECISION[0]


def is_anomaly_enabled() -> bool:
    """Whether autograd's anomaly detection is on (numdiff.autograd.detect_anomaly)."""
    return anomaly.is_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Switch autograd's anomaly detection on or off for this thread."""
    anomaly.set_detect_anomaly(bool(enabled), bool(check_nan))  # turns it on at construction, as PyTorch's


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection, when on, checks backward's gradients for NaN (check_nan)."""
    return anomaly.is_check_nan_enabled()


_INTEROP_THREADS = [1]


def set_num_interop_threads(num: int) -> None:
    """Accepted for PyTorch code: numdiff runs no inter-op thread pool (ops run in the caller's thread)."""
    if not is_int(num) or num < 1:
        raise ValueError(f"set_num_interop_threads: expected a positive int, got {num!r}")
    _INTEROP_THREADS[0] = int(num)


def get_num_interop_threads() -> int:
    """The value given to set_num_interop_threads (1 by default: no inter-op pool)."""
    return _INTEROP_THREADS[0]


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding `s`, in the default float dtype unless `dtype` is given."""
    return creation.tensor(s, dtype=dtype or _dtype.get_default_dtype(), device=device, requires_grad=requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None, requires_grad: bool = False) -> Tensor:
    """`obj` as a tensor, sharing memory where it can unless `copy` is True (False refuses a copy)."""
    if copy and isinstance(obj, Tensor):
        out = obj.detach().clone().to(dtype=dtype or obj.dtype, device=device or obj.device)
        return out.requires_grad_(True) if requires_grad else out
    if copy:
        return creation.tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    out = creation.as_tensor(obj, dtype=dtype, device=device)
    if copy is False and isinstance(obj, Tensor) and out is not obj and out._data is not obj._data:
        raise ValueError("asarray: copy=False, but the dtype or device asked for needs a copy")
    if requires_grad:
        out.requires_grad_(True)
    return out


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of `size` (numdiff lays it out contiguously whatever `stride` says)."""
    if len(tuple(size)) != len(tuple(stride)):
        raise ValueError(f"empty_strided: size {tuple(size)} and stride {tuple(stride)} must have the same length")
    return creation.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def typename(obj: Any) -> str:
    """PyTorch's type name: a tensor's type() ('torch.FloatTensor', as PyTorch code compares it), else the class's qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    kind = type(obj)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _window(name: str, length: int, periodic: bool, dtype: Any, device: Any, requires_grad: bool, make) -> Tensor:
    if not is_int(length) or length < 0:
        raise ValueError(f"{name}: window_length must be a non-negative int, got {length!r}")
    target = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not target.is_floating_point:
        raise TypeError(f"{name}: expected a floating point dtype, got {target!r}")
    if length == 0:
        values = np.zeros(0)
    elif length == 1:
        values = np.ones(1)
    else:
        n = length + 1 if periodic else length
        values = make(np.arange(n, dtype=np.float64), n)[:length]
    return creation.tensor(values, dtype=target, device=device, requires_grad=requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: 0.5 - 0.5 * np.cos(2 * math.pi * k / (n - 1)))  # fmt: skip


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """The Hamming window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: alpha - beta * np.cos(2 * math.pi * k / (n - 1)))  # fmt: skip


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: 0.42 - 0.5 * np.cos(2 * math.pi * k / (n - 1)) + 0.08 * np.cos(4 * math.pi * k / (n - 1)))  # fmt: skip


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """The Bartlett (triangular) window: 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1))  # fmt: skip


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, layout: Any = None) -> Tensor:
    """The Kaiser window: I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta))  # fmt: skip


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - PyTorch's name
    """The Vandermonde matrix of the 1-D `x`: columns x^(N-1) ... x^0 (or increasing powers)."""
    x = ensure_tensor("vander", x, "x")
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {tuple(x.shape)}")
    columns = x.shape[0] if N is None else N
    if not is_int(columns) or columns < 0:
        raise ValueError(f"vander: N must be a non-negative int, got {N!r}")
    if x.dtype is _dtype.bool_:
        x = x.long()
    powers = creation.arange(columns, device=x.device)
    if not increasing:
        powers = shape.flip(powers, (0,))
    if columns == 0:
        return creation.empty((x.shape[0], 0), dtype=x.dtype, device=x.device)
    return arithmetic.pow(shape.unsqueeze(x, 1), powers if not x.is_floating_point() else powers.to(x.dtype))


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-`r` combinations of the elements of the 1-D `input`, one per row (differentiable)."""
    input = ensure_tensor("combinations", input)
    if input.ndim != 1:
        raise ValueError(f"combinations: input must be 1-D, got shape {tuple(input.shape)}")
    if not is_int(r) or r < 0:
        raise ValueError(f"combinations: r must be a non-negative int, got {r!r}")
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(choose(range(input.shape[0]), r))
    if not rows or r == 0:
        return creation.empty((0,) if r == 0 else (0, r), dtype=input.dtype, device=input.device)
    index = creation.tensor(np.array(rows, dtype=np.int64).reshape(-1), device=input.device)
    return shape.reshape(indexing.index_select(input, 0, index), (len(rows), r))


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of `shape` of each flat index in `indices`."""
    dims = (shape,) if is_int(shape) else tuple(shape)
    if any(not is_int(d) or d < 0 for d in dims):
        raise ValueError(f"unravel_index: shape must hold non-negative ints, got {shape!r}")
    flat = ensure_tensor("unravel_index", indices, "indices") if isinstance(indices, Tensor) else creation.tensor(indices)
    if flat.is_floating_point() or flat.dtype is _dtype.bool_:
        raise TypeError(f"unravel_index: indices must be integers, got {flat.dtype}")
    values = flat.numpy().astype(np.int64)
    size = int(np.prod(dims))
    if values.size and (values.max() >= size or values.min() < -size):
        raise IndexError(f"unravel_index: an index is out of range for shape {dims} of {size} elements")
    coordinates = np.unravel_index(np.where(values < 0, values + size, values), dims)
    return tuple(creation.tensor(c.astype(np.int64), device=flat.device) for c in coordinates)


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None, weight: Tensor | None = None, density: bool = False) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(hist, bin_edges) of the values of a floating `input`: `bins` equal bins over `range` (or
    the data's extent), or the given edges."""
    input = ensure_tensor("histogram", input)
    if not input.is_floating_point():
        raise TypeError(f"histogram: input must be a floating point tensor, got {input.dtype}")
    edges = bins.numpy() if isinstance(bins, Tensor) else bins
    hist, bin_edges = np.histogram(input.detach().numpy().reshape(-1), bins=edges, range=range,
                                   weights=None if weight is None else weight.detach().numpy().reshape(-1), density=density)  # fmt: skip
    return (creation.tensor(hist, dtype=input.dtype, device=input.device),
            creation.tensor(bin_edges, dtype=input.dtype, device=input.device))  # fmt: skip


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch's switch for flushing subnormal floats to zero on the CPU. numdiff's kernels do not
    read the CPU's FTZ/DAZ flags from Python, so it sets nothing and returns False, as PyTorch does on a
    CPU without the mode (programs read the result to know whether it took)."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal: mode must be a bool, got {type(mode).__name__}")
    return False


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of an object with the buffer protocol (bytes, bytearray, array,
    mmap): no copy, so writes through either show in the other where the buffer is writable."""
    target = _dtype.to_dtype(dtype)
    size = memoryview(buffer).nbytes
    if not is_int(offset) or not 0 <= offset < max(size, 1) or not is_int(count) or count == 0 or count < -1:
        raise ValueError(f"frombuffer: offset ({offset}) must be in [0, {size}) and count ({count}) -1 or positive")
    if count == -1 and (size - offset) % target.itemsize:
        raise ValueError(f"frombuffer: the buffer's {size - offset} bytes from offset {offset} are not a multiple of {target}'s {target.itemsize}")
    if count != -1 and offset + count * target.itemsize > size:
        raise ValueError(f"frombuffer: {count} elements of {target} from offset {offset} pass the buffer's {size} bytes")
    data = np.frombuffer(buffer, dtype=target.numpy, count=count, offset=offset)
    out = Tensor._wrap(data, None, None)
    return out.requires_grad_(True) if requires_grad else out


FUNCTIONS = {
    fn.__name__: fn
    for fn in (result_type, promote_types, can_cast, get_rng_state, set_rng_state, seed, initial_seed,
               set_float32_matmul_precision, get_float32_matmul_precision, is_anomaly_enabled, set_anomaly_enabled,
               is_anomaly_check_nan_enabled,
               set_num_interop_threads, get_num_interop_threads, scalar_tensor, asarray, empty_strided, typename,
               hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window, vander, combinations,
               unravel_index, histogram, set_flush_denormal, frombuffer)
}  # fmt: skip
