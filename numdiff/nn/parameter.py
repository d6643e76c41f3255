"""Parameter: a leaf tensor that a Module registers as one of its learnable weights."""

from __future__ import annotations

from typing import Any

from numdiff._tensor_pickle import rebuild_tensor, reduce_args
from numdiff.creation import as_array, empty
from numdiff.tensor import Tensor


class ParameterDtypeError(TypeError, RuntimeError):
    """A Parameter of a dtype that cannot require gradients. PyTorch raises RuntimeError, numdiff
    raised TypeError; this is both, so code written for either catches it."""


class Parameter(Tensor):
    """A leaf Tensor that requires grad by default and is registered when set on a Module.

    It shares storage with `data` (no copy), and is a leaf by construction: it can be frozen with
    ``p.requires_grad_(False)`` at any time.

    >>> w = Parameter(numdiff.ones(2))
    >>> w
    Parameter containing:
    tensor([1., 1.], requires_grad=True)
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = empty(0)
        if isinstance(data, Tensor):
            # Share the storage and version counter of `data`, as PyTorch's Parameter does.
            self._init(data._data, None, data._version_counter)
        else:
            self._init(as_array(data, None), None, None)
        if requires_grad:
            if self._data.dtype.kind not in "fV":  # V: bfloat16's storage
                raise ParameterDtypeError(
                    f"Parameter: only floating point tensors can require gradients, got dtype "
                    f"{self.dtype!r}; pass requires_grad=False or convert the data with .float()"
                )
            self._requires_grad = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol: int) -> tuple[Any, tuple[Any, ...]]:
        return rebuild_parameter, reduce_args(self)

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(Tensor._wrap(self._data.copy(), None, None), self._requires_grad)
        if self._grad is not None:
            result._grad = Tensor._wrap(self._grad._data.copy(), None, None)
        memo[id(self)] = result
        return result


def rebuild_parameter(array: Any, dtype_name: str, where: str, requires_grad: bool) -> Parameter:
    """The Parameter that ``Parameter.__reduce_ex__`` describes (numdiff._tensor_pickle)."""
    return Parameter(rebuild_tensor(array, dtype_name, where, False), requires_grad=requires_grad)


class Buffer(Tensor):
    """A tensor that registers as a buffer when set on a Module (``self.mean = nn.Buffer(x)``),
    sharing `data`'s storage; `persistent=False` keeps it out of the state_dict."""

    __slots__ = ("persistent",)

    def __init__(self, data: Any = None, *, persistent: bool = True) -> None:
        if data is None:
            data = empty(0)
        if isinstance(data, Tensor):
            self._init(data._data, None, data._version_counter)
        else:
            self._init(as_array(data, None), None, None)
        self.persistent = bool(persistent)


class UninitializedParameter(Parameter):
    """A Parameter with no values yet: a lazy module's weight before its first input."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)

    def materialize(self, values: Tensor) -> None:
        """Take `values` (shape and all), and become a plain Parameter."""
        self._data = values._data
        self.__class__ = Parameter

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer(Tensor):
    """A buffer with no values yet: a lazy norm layer's running statistics before its first input."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        self._init(empty(0, device=device, dtype=dtype)._data, None, None)

    def materialize(self, values: Tensor) -> None:
        """Take `values` (shape and all), and become a plain Tensor."""
        self._data = values._data
        self.__class__ = Tensor

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"
