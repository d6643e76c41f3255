"""The device seam: everything that differs by device, behind one set of names.

Code outside this module and the kernel packages does not test an array's type; it asks here:

- which kernels run on an array: ``backend_for(array)`` and a launcher by name, with the same
  arguments on every device::

      backend_for(out).gemm_nn(a, b, out)                  # numdiff.kernels.matmul on the CPU,
                                                            # numdiff.cuda.kernels.matmul on a GPU
      backend_for(x).conv2d_forward(x, w, bias, out, stride, padding, dilation, groups)
      backend_for(g).rule_backward(rule, needed, values, attrs)   # an elementwise rule's gradients

- where an array lives and how values cross: :func:`is_host` (a NumPy array, the CPU's own),
  :func:`to_host` (a NumPy array of the values, copied from a device), :func:`like_host` (host
  values moved to another array's device), and per backend :meth:`Backend.to_host`,
  :meth:`Backend.from_host`, :meth:`Backend.device_of`, and :func:`move_array` (an array copied
  to a named device, allocating there);
- whether a value is NumPy data at all (:func:`is_numpy`: user data, a key, a file's contents).

Each backend lists its own kernels (module -> launcher names) in :data:`CPU` and :data:`CUDA`
below; a conformance test checks that the two lists name the same launchers with the same
parameters. A launcher's module is imported on first use, so importing numdiff never imports
numba.cuda. tests/structure/test_device_seam.py fails on a new array-type test outside the seam.
"""

from __future__ import annotations

import importlib
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._device import device
from numdiff.meta.array import META as _META_DEVICE
from numdiff.meta.array import MetaArray

__all__ = ["CPU", "CUDA", "META", "Backend", "backend_for", "holds_values", "is_host", "is_numpy", "like_host", "move_array", "to_host"]


class Backend(ABC):
    """One device's kernel launchers, read as attributes: ``backend.gemm_nn(a, b, out)``.

    >>> backend_for(np.zeros(2)).name
    'cpu'
    >>> sorted(CPU.kernel_names())[:3]
    ['adagrad_update', 'adam_update', 'adaptive_avg_pool2d_backward']
    """

    def __init__(self, name: str, kernel_modules: dict[str, tuple[str, ...]]) -> None:
        self.name = name
        self._module_of = {kernel: module for module, kernels in kernel_modules.items() for kernel in kernels}

    def __getattr__(self, kernel: str) -> Callable[..., Any]:
        # Only called for names not yet resolved: import the module, then keep the function as a
        # plain attribute so later calls cost one attribute read.
        module = self.__dict__.get("_module_of", {}).get(kernel)
        if module is None:
            raise AttributeError(
                f"the {self.__dict__.get('name', '?')} backend has no kernel {kernel!r}; it has: "
                f"{', '.join(sorted(self.__dict__.get('_module_of', ())))}"
            )
        launcher = getattr(importlib.import_module(module), kernel)
        setattr(self, kernel, launcher)
        return launcher

    def kernel_names(self) -> tuple[str, ...]:
        """The names of this backend's kernel launchers."""
        return tuple(self._module_of)

    def kernels(self) -> dict[str, Callable[..., Any]]:
        """Every kernel launcher by name (importing the modules that hold them)."""
        return {kernel: getattr(self, kernel) for kernel in self._module_of}

    def module_of(self, kernel: str) -> str:
        """The module that defines launcher `kernel` on this device."""
        return self._module_of[kernel]

    @abstractmethod
    def to_host(self, array: Any) -> np.ndarray:
        """`array` as a NumPy array (itself on the CPU, a copy from a GPU)."""

    @abstractmethod
    def from_host(self, host: np.ndarray, like: Any) -> Any:
        """`host` moved to the device (and GPU) that `like` lives on."""

    @abstractmethod
    def device_of(self, array: Any) -> device:
        """The device `array` lives on."""

    def __repr__(self) -> str:
        return f"<numdiff backend {self.name!r}: {len(self._module_of)} kernels>"


class _HostBackend(Backend):
    def to_host(self, array: Any) -> np.ndarray:
        return array

    def from_host(self, host: np.ndarray, like: Any) -> Any:
        return host

    def device_of(self, array: Any) -> device:
        return _HOST


class _CudaBackend(Backend):
    def to_host(self, array: Any) -> np.ndarray:
        return array.to_host()

    def from_host(self, host: np.ndarray, like: Any) -> Any:
        return like.from_host(np.ascontiguousarray(host))

    def device_of(self, array: Any) -> device:
        return array.device


class _MetaBackend(Backend):
    """The meta device's launchers: CPU's names and parameters, no work (numdiff.meta.kernels)."""

    def __init__(self, name: str, twin: Backend) -> None:
        super().__init__(name, {})
        self._twin = twin

    def __getattr__(self, kernel: str) -> Callable[..., Any]:
        kernels = importlib.import_module("numdiff.meta.kernels")
        launcher = getattr(kernels, kernel, None)
        if launcher is None:
            launcher = kernels.writes_nothing(getattr(self.__dict__["_twin"], kernel))
        setattr(self, kernel, launcher)
        return launcher

    def kernel_names(self) -> tuple[str, ...]:
        return self._twin.kernel_names()

    def kernels(self) -> dict[str, Callable[..., Any]]:
        return {kernel: getattr(self, kernel) for kernel in self.kernel_names()}

    def module_of(self, kernel: str) -> str:
        return "numdiff.meta.kernels"

    def to_host(self, array: Any) -> np.ndarray:
        return array.to_host()  # raises: a meta array has no values

    def from_host(self, host: np.ndarray, like: Any) -> Any:
        return MetaArray(np.shape(host), np.asarray(host).dtype)

    def device_of(self, array: Any) -> device:
        return _META_DEVICE


_HOST = device("cpu")

CPU = _HostBackend(
    "cpu",
    {
        "numdiff.kernels.matmul": ("gemm_nn", "gemm_nt", "gemm_tn", "bgemm_nn", "bgemm_nt", "bgemm_tn"),
        "numdiff.kernels.conv": ("conv2d_forward", "conv2d_backward_input", "conv2d_backward_weight"),
        "numdiff.kernels.pool": (
            "max_pool2d_forward",
            "adaptive_max_pool2d_forward",
            "max_pool_backward",
            "max_pool_gather",
        ),
        "numdiff.kernels.avg_pool": (
            "avg_pool2d_forward",
            "avg_pool2d_backward",
            "adaptive_avg_pool2d_forward",
            "adaptive_avg_pool2d_backward",
        ),
        "numdiff.kernels.attention": ("attention_forward", "attention_backward"),
        "numdiff.kernels.norm": ("group_norm_forward", "group_norm_backward", "group_norm_moments"),
        "numdiff.kernels.norm_running": ("running_stat_update",),
        "numdiff.kernels.softmax": ("softmax_forward", "softmax_backward"),
        "numdiff.kernels.recurrent": ("lstm_sequence_forward", "lstm_sequence_backward", "gru_sequence_forward", "gru_sequence_backward", "rnn_sequence_forward", "rnn_sequence_backward"),
        "numdiff.kernels.optim": ("sgd_update", "adam_update", "rmsprop_update", "adagrad_update"),
        "numdiff.kernels.elementwise": ("rule_forward", "rule_backward"),
        "numdiff.kernels.sparse": ("coo_spmm", "coo_sddmm", "csr_spmm", "csr_sddmm"),
        "numdiff.kernels.triangular": ("triangular_solve", "cholesky_batched", "lu_solve_batched"),
        "numdiff.kernels.scatter": ("add_at", "scaled_row_scatter"),
        "numdiff.kernels.reduce_sum": ("sum_dims",),
        "numdiff.kernels.resample": ("axis_blend_forward", "axis_blend_adjoint"),
        "numdiff.kernels.scan": ("cumsum_lanes", "cumprod_lanes", "cumprod_backward_lanes"),
        "numdiff.kernels.linalg_small": (
            "cholesky_backward_batched", "lu_factor_batched", "lu_substitute_batched", "slogdet_batched",
        ),
    },
)
"""Host arrays (numpy.ndarray): Numba ``@njit`` kernels in numdiff.kernels."""

CUDA = _CudaBackend(
    "cuda",
    {
        "numdiff.cuda.kernels.matmul": ("gemm_nn", "gemm_nt", "gemm_tn", "bgemm_nn", "bgemm_nt", "bgemm_tn"),
        "numdiff.cuda.kernels.conv": ("conv2d_forward", "conv2d_backward_input", "conv2d_backward_weight"),
        "numdiff.cuda.kernels.pool": (
            "max_pool2d_forward",
            "adaptive_max_pool2d_forward",
            "max_pool_backward",
            "max_pool_gather",
        ),
        "numdiff.cuda.kernels.avg_pool": (
            "avg_pool2d_forward",
            "avg_pool2d_backward",
            "adaptive_avg_pool2d_forward",
            "adaptive_avg_pool2d_backward",
        ),
        "numdiff.cuda.kernels.attention": ("attention_forward", "attention_backward"),
        "numdiff.cuda.kernels.norm": ("group_norm_forward", "group_norm_backward", "group_norm_moments"),
        "numdiff.cuda.kernels.norm_running": ("running_stat_update",),
        "numdiff.cuda.kernels.softmax": ("softmax_forward", "softmax_backward"),
        "numdiff.cuda.kernels.recurrent": ("lstm_sequence_forward", "lstm_sequence_backward", "gru_sequence_forward", "gru_sequence_backward", "rnn_sequence_forward", "rnn_sequence_backward"),
        "numdiff.cuda.kernels.optim": ("sgd_update", "adam_update", "rmsprop_update", "adagrad_update"),
        "numdiff.cuda.kernels.elementwise": ("rule_forward", "rule_backward"),
        "numdiff.cuda.kernels.sparse": ("coo_spmm", "coo_sddmm", "csr_spmm", "csr_sddmm"),
        "numdiff.cuda.kernels.linalg": (
            "triangular_solve", "cholesky_batched", "lu_solve_batched", "cholesky_backward_batched",
            "lu_factor_batched", "lu_substitute_batched", "slogdet_batched",
        ),
        "numdiff.cuda._indexing": ("add_at", "scaled_row_scatter"),
        "numdiff.cuda._functions": ("sum_dims",),
        "numdiff.cuda.kernels.resample": ("axis_blend_forward", "axis_blend_adjoint"),
        "numdiff.cuda.kernels.scan": ("cumsum_lanes", "cumprod_lanes", "cumprod_backward_lanes"),
    },
)
"""numdiff.cuda's CudaArray: numba-cuda ``@cuda.jit`` kernels in numdiff.cuda.kernels."""

META = _MetaBackend("meta", CPU)
"""numdiff.meta's MetaArray (shapes and dtypes, no storage): CPU's launchers, computing nothing."""

_BY_ARRAY_TYPE: dict[type, Backend] = {np.ndarray: CPU, MetaArray: META}


def backend_for(array: Any) -> Backend:
    """The backend whose kernels run on `array`'s device, keyed by the array's type.

    >>> backend_for(np.ones(3)) is CPU
    True
    """
    backend = _BY_ARRAY_TYPE.get(type(array))
    if backend is not None:
        return backend
    # A CudaArray exists only once numdiff.cuda.array is imported: register its type then.
    cuda_array = sys.modules.get("numdiff.cuda.array")
    if cuda_array is not None and type(array) is cuda_array.CudaArray:
        _BY_ARRAY_TYPE[cuda_array.CudaArray] = CUDA
        return CUDA
    raise TypeError(
        f"no numdiff backend runs on arrays of type {type(array).__module__}.{type(array).__qualname__}: "
        "kernels take numpy.ndarray (cpu), numdiff.cuda.array.CudaArray (cuda) or numdiff.meta.array.MetaArray (meta)"
    )


def is_host(array: Any) -> bool:
    """Whether `array` is a host array (exactly numpy.ndarray, what the CPU kernels take); False for
    a device array such as numdiff.cuda's CudaArray, and for numbers.

    >>> is_host(np.zeros(2)), is_host(2.0)
    (True, False)
    """
    return type(array) is np.ndarray


def holds_values(array: Any) -> bool:
    """Whether `array` has values to read: False on the meta device, whose arrays are shapes only
    (checks that read values, such as index bounds, skip there, as PyTorch's meta kernels do).

    >>> holds_values(np.zeros(2)), holds_values(MetaArray((2,), np.float32))
    (True, False)
    """
    return type(array) is not MetaArray


def is_numpy(value: Any) -> bool:
    """Whether `value` is NumPy array data of any kind (subclasses such as np.memmap included): a
    question about what a user passed, not about a device.

    >>> is_numpy(np.ma.zeros(2)), is_numpy([0.0])
    (True, False)
    """
    return isinstance(value, np.ndarray)


def to_host(array: Any) -> np.ndarray:
    """`array`'s values as a NumPy array: itself on the host, a copy from a device.

    >>> x = np.ones(2); to_host(x) is x
    True
    """
    return array if type(array) is np.ndarray else array.to_host()


def like_host(host: np.ndarray, like: Any) -> Any:
    """Host values `host` on the device `like` lives on: itself when `like` is a host array.

    >>> x = np.ones(2); like_host(x, np.zeros(3)) is x
    True
    """
    return host if type(like) is np.ndarray else backend_for(like).from_host(host, like)


def move_array(array: Any, target: device) -> Any:
    """`array` on device `target`: itself when it is already there, else a copy allocated there.
    GPU arrays come from numdiff.cuda, imported only when a GPU is named.

    >>> x = np.ones(2); move_array(x, device("cpu")) is x
    True
    """
    if target.type == "cpu":
        return backend_for(array).to_host(array)
    if target.type == "meta":
        return MetaArray(array.shape, array.dtype)  # the shape and dtype cross; the values stay behind
    return importlib.import_module("numdiff.cuda").move_array(array, target)
