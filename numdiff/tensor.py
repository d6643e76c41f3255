"""The Tensor: an array, plus the autograd state that enforces numdiff's leaf contract.

A leaf is a tensor no recorded op produced (`grad_fn is None`). Only leaves may switch
`requires_grad`; only leaves that require grad keep `.grad` after backward, accumulating with `+=`;
intermediates pass gradient through and keep nothing unless they asked with `retain_grad()`.
Arithmetic and other methods are attached from numdiff.ops by numdiff._tensor_methods.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from numdiff import _dtype, _tensor_dlpack
from numdiff import _tensor_conversion as _conversion
from numdiff import _tensor_queries as _queries
from numdiff._device import device
from numdiff.autograd import function as _function_module
from numdiff.autograd import node as _node_module
from numdiff.autograd.engine import run_backward
from numdiff.autograd.function import InPlaceOnLeafError as InPlaceOnLeafError
from numdiff.autograd.hooks import RemovableHandle, check_callable
from numdiff.autograd.node import leaf_accumulator
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.backend import backend_for


class NonLeafRequiresGradError(RuntimeError):
    """`requires_grad` was switched on a tensor that a recorded op produced."""


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``numdiff.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"numdiff.Size({list(self)})"

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))


class Tensor:
    """An n-dimensional array that can record the ops applied to it for reverse-mode autodiff."""

    __slots__ = (
        "_data",
        "_requires_grad",
        "_grad_fn",
        "_grad",
        "_version_counter",
        "_retains_grad",
        "_hooks",
        "_grad_accumulator",
        "_base",
        "_base_node",  # a view's: its base's grad_fn when the view was made (set with _base)
        "_view_replay",  # a view's: the view ops that make it from _base, or None (set with _base)
        "_post_accumulate_hooks",  # None until register_post_accumulate_grad_hook
        "__weakref__",
    )
    __array_priority__ = 1000  # so ndarray (op) Tensor defers to Tensor's reflected operators

    def __init__(self, *data: Any, requires_grad: bool = False) -> None:
        """PyTorch's legacy constructor: ``Tensor(2, 3)`` (sizes, uninitialised) or ``Tensor([1, 2])``
        (data), both of the default dtype; ``numdiff.tensor`` is the factory to prefer."""
        from numdiff._tensor_types import legacy_array

        self._init(legacy_array(data), None, None)
        if requires_grad:
            self.requires_grad_(True)

    def _init(self, data: Any, grad_fn: Any, version_counter: list[int] | None) -> None:
        self._data = data
        self._grad_fn = grad_fn
        self._requires_grad = grad_fn is not None
        self._grad = None
        self._version_counter = [0] if version_counter is None else version_counter
        self._retains_grad = False
        self._hooks = None
        self._grad_accumulator = None
        self._base = None
        self._post_accumulate_hooks = None

    @classmethod
    def _wrap(cls, data: Any, grad_fn: Any, version_counter: list[int] | None) -> Tensor:
        """Make a tensor around an existing array without copying or validating it."""
        t = object.__new__(cls)
        t._data = data
        t._grad_fn = grad_fn
        t._requires_grad = grad_fn is not None
        t._grad = None
        t._version_counter = [0] if version_counter is None else version_counter
        t._retains_grad = False
        t._hooks = None
        t._grad_accumulator = None
        t._base = None
        t._post_accumulate_hooks = None
        return t

    # ----------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        """The shape, or the length of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[dim]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_numpy(self._data.dtype)

    @property
    def device(self) -> device:
        return backend_for(self._data).device_of(self._data)

    @property
    def _version(self) -> int:
        return self._version_counter[0]

    # Written in numdiff/_tensor_queries.py; bound here so they are Tensor's own methods.
    element_size = _queries.element_size
    itemsize = property(_queries.itemsize)
    nbytes = property(_queries.nbytes)
    nelement = _queries.nelement
    ndimension = _queries.ndimension
    stride = _queries.stride
    is_complex = _queries.is_complex
    is_cpu = property(_queries.is_cpu)
    get_device = _queries.get_device
    __contains__ = _queries.contains
    is_cuda = property(_queries.is_cuda)
    is_floating_point = _queries.is_floating_point
    is_contiguous = _queries.is_contiguous

    # ----------------------------------------------------------------- autograd state
    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad_fn(self) -> Any:
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Switch gradient tracking on a leaf. On a non-leaf this raises, for True and False alike."""
        if self._grad_fn is not None:
            op = self._grad_fn.name()
            raise NonLeafRequiresGradError(
                f"requires_grad_({requires_grad}) called on a non-leaf tensor produced by {op}: "
                "only leaf tensors (made by you, or Parameters) can change requires_grad. To keep "
                "this tensor's gradient after backward, call .retain_grad() on it; to start a new "
                "leaf from its value, use .detach().requires_grad_()."
                + (
                    " (numdiff is deliberately stricter than PyTorch here, which accepts "
                    "requires_grad_(True) on a non-leaf as a no-op: the leaf rule has no exceptions.)"
                    if requires_grad
                    else ""
                )
            )
        if requires_grad and self._data.dtype.kind not in "fV":  # V: bfloat16 bits
            raise RuntimeError(
                f"only floating point tensors can require gradients, but this tensor has dtype "
                f"{self.dtype!r}; convert it first, e.g. t.float().requires_grad_()"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the gradient for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor "
                f"(this one was produced by {self._grad_fn.name()}).",
                UserWarning,
                stacklevel=2,
            )
        if anywhere.levels and transforms.interpreter is not None:  # numdiff.compile guards it
            transforms.interpreter.grad_read(self)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor) and getattr(value, "is_sparse", False) is not True:
                # A sparse COO tensor may stand as a gradient, as an embedding's with sparse=True does.
                raise TypeError(f"assigned grad must be a Tensor, a sparse tensor or None, got {type(value).__name__}")
            if value.shape != self.shape or value.dtype is not self.dtype:
                raise RuntimeError(
                    f"assigned grad has shape {tuple(value.shape)} and dtype {value.dtype!r}, but "
                    f"the tensor has shape {tuple(self.shape)} and dtype {self.dtype!r}"
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"assigned grad is on {value.device} but the tensor is on {self.device}"
                )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Ask backward to keep this non-leaf's gradient in `.grad` (a no-op on leaves)."""
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
            return
        if not self._retains_grad:
            self._grad_fn._retained = weakref.ref(self)
            self._retains_grad = True

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces it."""
        check_callable("register_hook", hook)
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._register_gradient_hook(hook)
        if self._hooks is None:
            self._hooks = {}
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call `hook(tensor)` after backward has accumulated into this leaf's `.grad`.

        Data-parallel training uses it to start a gradient's all-reduce as soon as it is final.
        """
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors: this tensor was "
                f"produced by {self._grad_fn.name()}"
            )
        check_callable("register_post_accumulate_grad_hook", hook)
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self._post_accumulate_hooks
        if hooks is None:
            hooks = self._post_accumulate_hooks = {}
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def _accumulator(self) -> Any:
        return leaf_accumulator(self)

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's storage (and version counter), outside the graph.

        It is no view in autograd's sense (no `_base`), as in PyTorch: in-place ops on it are
        never refused on account of this tensor. Inside numdiff.func.jvp it carries no tangent either.
        """
        if anywhere.levels:
            top = transforms.interpreter
            if top is not None:
                detached = top.detach(self)
                if detached is not None:
                    return detached
        return Tensor._wrap(self._data, None, self._version_counter)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A leaf with its own copy of the data (and of ``.grad``), as PyTorch's. A tensor some op
        produced is refused, as in PyTorch: a copy would hold that op's node of the original graph."""
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError(
                f"deepcopy: only leaf tensors can be deep-copied; this one was produced by "
                f"{self._grad_fn.name()}. Copy it with t.detach().clone() (add .requires_grad_() for a "
                "new leaf)"
            )
        _conversion._host_read(self, "copy.deepcopy()")  # the copy holds this call's values
        result = type(self)._wrap(self._data.copy(), None, None)
        result._requires_grad = self._requires_grad
        if self._grad is not None:
            result._grad = Tensor._wrap(self._grad._data.copy(), None, None)
        memo[id(self)] = result
        return result

    def detach_(self) -> Tensor:
        """Make this tensor a leaf that does not require grad, in place."""
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """This tensor's values as a leaf outside the graph, sharing its storage but, unlike
        `detach()`, not its version counter: as in PyTorch, writes through `.data` are hidden from
        the check that saved tensors were not modified (the autograd tutorial's `out.data.zero_()`
        gives a wrong gradient silently), which weight clipping and hand-written updates rely on."""
        detached = self.detach()
        if detached._version_counter is self._version_counter:
            detached._version_counter = [0]
        return detached

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf that requires grad."""
        if retain_graph is None:
            retain_graph = create_graph
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        run_backward([self], [gradient], retain_graph, create_graph, inputs=inputs)

    # ----------------------------------------------------------------- conversion
    # Written in numdiff/_tensor_conversion.py; bound here so they are Tensor's own methods.
    numpy = _conversion.numpy
    _host_values = _conversion.host_values
    __array__ = _conversion.as_numpy_array
    item = _conversion.item
    tolist = _conversion.tolist
    __format__ = _conversion.format_tensor
    __float__ = _conversion.to_python_float
    __int__ = _conversion.to_python_int
    __bool__ = _conversion.to_python_bool
    __index__ = _conversion.to_index
    to = _conversion.to
    __dlpack__ = _tensor_dlpack.dlpack
    __dlpack_device__ = _tensor_dlpack.dlpack_device
    float = _conversion.dtype_shortcut("float", _dtype.float32)
    double = _conversion.dtype_shortcut("double", _dtype.float64)
    long = _conversion.dtype_shortcut("long", _dtype.int64)
    int = _conversion.dtype_shortcut("int", _dtype.int32)
    bool = _conversion.dtype_shortcut("bool", _dtype.bool_)
    type = _conversion.type_or_convert
    cpu = _conversion.cpu
    cuda = _conversion.cuda

    # ----------------------------------------------------------------- sequence protocol, repr
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from numdiff._tensor_str import tensor_repr  # _tensor_str formats Tensors: it imports this module

        return tensor_repr(self)

_function_module.Tensor = Tensor
_node_module.Tensor = Tensor
