"""PyTorch's remaining names for what numdiff already computes: aliases (arccos, greater,
not_equal), the composed functions of numdiff.ops.composed and composed_index, their Tensor
methods and in-place forms, and the top-level spellings of in-place and nn.functional calls
(``torch.relu_``, ``torch.conv2d``, ``torch.layer_norm`` with its own argument order).

`FUNCTIONS` joins numdiff's namespace and `METHODS` the Tensor class (numdiff._tensor_methods.attach).
"""

from __future__ import annotations

from typing import Any

from numdiff import _inplace, _torch_misc, creation
from numdiff.ops import (
    activation,
    arithmetic,
    composed,
    composed_index,
    composed_views,
    host_math,
    joining,
    logical,
    scatter_reduce,
    shape,
)
from numdiff.ops.elementwise import PUBLIC as RULES
from numdiff.tensor import Tensor

# PyTorch's NumPy-style aliases of functions numdiff has under their short names.
ALIASES = {
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh", "arcsinh": "asinh",
    "arctanh": "atanh", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "not_equal": "ne", "sgn": "sign", "fix": "trunc", "ger": "outer", "trapz": "trapezoid",
}  # fmt: skip

_COMPOSED = {
    name: getattr(module, name)
    for module, names in (
        (composed, ("deg2rad", "rad2deg", "positive", "float_power", "fmax", "fmin", "copysign", "heaviside",
                    "logaddexp2", "ldexp", "sinc", "mv", "vdot", "addr", "addbmm", "cov", "corrcoef", "aminmax")),
        (composed_index, ("fliplr", "flipud", "hsplit", "vsplit", "dsplit", "ravel", "diagflat", "msort",
                          "take_along_dim", "broadcast_shapes", "broadcast_tensors", "index_fill", "index_copy",
                          "masked_scatter", "trapezoid", "cumulative_trapezoid", "quantile", "nanquantile", "renorm")),
        (logical, ("signbit", "isposinf", "isneginf", "isreal")),
        (scatter_reduce, ("scatter_reduce", "index_reduce")),
    )
    for name in names
}  # fmt: skip


def _resolve(name: str, namespace: dict[str, Any]) -> Any:
    return _COMPOSED.get(name) or namespace.get(name) or RULES[name]


def functions(namespace: dict[str, Any]) -> dict[str, Any]:
    """The top-level functions to add to numdiff's `namespace` (those it lacks)."""
    found = dict(_COMPOSED)
    found.update({alias: _resolve(target, {**namespace, **found}) for alias, target in ALIASES.items()})
    found.update(host_math.FUNCTIONS)
    found.update(composed_views.FUNCTIONS)
    found.update(_PREDICATES)
    found.update(concatenate=concatenate, fill=fill, detach=_detach, get_device=_get_device)
    found["put"] = composed_index.put
    found["adjoint"] = adjoint
    found["rsub"] = rsub
    for name in _TOPLEVEL_INPLACE:
        found[f"{name}_"] = _toplevel_inplace(name)
    return {name: fn for name, fn in found.items() if name not in namespace}


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (the transpose: numdiff is real)."""
    if input.ndim < 2:
        raise ValueError(f"adjoint: input must be at least 2-D, got shape {tuple(input.shape)}")
    return shape.transpose(input, -2, -1)


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """other - alpha * input."""
    return arithmetic.sub(other, input, alpha=alpha)


# torch.<name>_(x, ...) is x.<name>_(...) for these.
_TOPLEVEL_INPLACE = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "clamp", "clamp_max", "clamp_min", "clip",
    "cos", "cosh", "deg2rad", "erf", "erfc", "exp", "exp2", "expm1", "fix", "floor", "frac", "index_put", "ldexp",
    "log", "log10", "log1p", "log2", "logit", "nan_to_num", "neg", "negative", "rad2deg", "reciprocal", "relu",
    "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc", "xlogy",
    "zero", "fill", "arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh", "sgn", "fix", "gcd", "lcm",
)  # fmt: skip


def concatenate(tensors: Any, axis: int = 0) -> Tensor:
    """``torch.concatenate(tensors, axis)``: cat along `axis`."""
    return joining.cat(tensors, axis)


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor like `input` filled with `value` (a number or a 0-d tensor, which gets the gradient)."""
    if isinstance(value, Tensor):
        return arithmetic.add(creation.zeros_like(input), value.to(input.dtype))
    return creation.full_like(input, value)


def _detach(input: Tensor) -> Tensor:
    """``torch.detach(x)``: x.detach()."""
    return input.detach()


def _get_device(input: Tensor) -> int:
    """``torch.get_device(x)``: the CUDA index, or -1 on the CPU."""
    return input.get_device()


def _predicate(method: str):
    def function(input: Tensor, *args: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(f"{method}: argument 'input' must be a Tensor, not {type(input).__name__}")
        return getattr(input, method)(*args)

    function.__name__ = function.__qualname__ = method
    function.__doc__ = f"``torch.{method}(x)``: ``x.{method}()``."
    return function


_PREDICATES = {
    name: _predicate(name)
    for name in ("conj", "resolve_conj", "resolve_neg", "is_complex", "is_conj", "is_neg", "is_nonzero",
                 "is_same_size", "is_signed", "is_inference", "conj_physical")
}  # fmt: skip


def _toplevel_inplace(name: str):
    def function(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}_: argument 'input' must be a Tensor, not {type(input).__name__}")
        return getattr(input, f"{name}_")(*args, **kwargs)

    function.__name__ = function.__qualname__ = f"{name}_"
    function.__doc__ = f"In-place {name}: ``numdiff.{name}_(x)`` is ``x.{name}_()``."
    return function


def _comparison_inplace(op: str, compare: Any):
    # x.eq_(y) keeps x's dtype: 1 where the comparison holds, 0 elsewhere.
    return _inplace.inplace_method(op, lambda old, other: compare(old, other).to(old.dtype))


def _method_names() -> dict[str, Any]:
    names = dict(_COMPOSED)
    names.pop("broadcast_shapes")
    names.pop("broadcast_tensors")
    names.update({alias: names.get(target) or getattr(Tensor, target) for alias, target in ALIASES.items() if alias != "trapz"})
    names.update(put=composed_index.put, unfold=composed_index.unfold, sum_to_size=composed_index.sum_to_size)
    names.pop("trapezoid")
    names.pop("cumulative_trapezoid")
    return names


def methods() -> dict[str, Any]:
    """The Tensor methods to add (those Tensor lacks), with their in-place forms."""
    found = _method_names()
    for name in ("deg2rad", "rad2deg", "sgn", "fix", "copysign", "heaviside", "ldexp", "sinc", "index_fill", "scatter_reduce",
                 "index_copy", "index_reduce", "masked_scatter", "put", "renorm", "addr", "addbmm", "float_power",
                 "arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh"):  # fmt: skip
        found[f"{name}_"] = _inplace.inplace_method(f"{name}_", found[name])
    for name, target in (("true_divide", "div"), ("multiply", "mul"), ("subtract", "sub"), ("divide", "div"),
                         ("negative", "neg"), ("absolute", "abs"), ("arctan2", "atan2")):  # fmt: skip
        found[f"{name}_"] = _inplace.inplace_method(f"{name}_", getattr(Tensor, target))
    for name in ("logical_and", "logical_or", "logical_xor"):
        found[f"{name}_"] = _comparison_inplace(f"{name}_", getattr(logical, name))
    found["logical_not_"] = _inplace.inplace_method("logical_not_", lambda old: logical.logical_not(old).to(old.dtype))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        found[f"{name}_"] = _comparison_inplace(f"{name}_", getattr(logical, name))
    for alias in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
        found[f"{alias}_"] = _comparison_inplace(f"{alias}_", getattr(logical, ALIASES[alias]))
    found.update(adjoint=adjoint, vdot=composed.vdot, mv=composed.mv)
    for name in ("gcd", "lcm", "nextafter", "frexp", "unique_consecutive"):
        found[name] = host_math.FUNCTIONS[name]
    for name in ("gcd", "lcm", "nextafter"):
        found[f"{name}_"] = _inplace.inplace_method(f"{name}_", host_math.FUNCTIONS[name])
    for name in ("select_scatter", "slice_scatter", "diagonal_scatter", "split_with_sizes", "unsafe_chunk", "unsafe_split",
                 "unsafe_split_with_sizes", "narrow_copy"):  # fmt: skip
        found[name] = composed_views.FUNCTIONS[name]
    for name in ("logit", "polygamma", "mvlgamma"):
        found[f"{name}_"] = _inplace.inplace_method(f"{name}_", getattr(Tensor, name))
    found["real"] = property(_same)
    found.update(H=property(_matrix_transpose("H", 2)), mH=property(_matrix_transpose("mH", None)))
    found.update(is_signed=is_signed, is_nonzero=is_nonzero, is_same_size=is_same_size, is_conj=_false,
                 is_neg=_false, is_inference=_false, conj=_same, resolve_conj=_same, resolve_neg=_same,
                 conj_physical=_same)  # fmt: skip
    found.update(histogram=_torch_misc.histogram, prelu=activation.prelu, hardshrink=activation.hardshrink)
    found["addmv_"] = _inplace.inplace_method("addmv_", Tensor.addmv)
    return {name: fn for name, fn in found.items() if not hasattr(Tensor, name)}


def _matrix_transpose(name: str, ndim: int | None):
    def transposed(self: Tensor) -> Tensor:
        if ndim is not None and self.ndim > ndim:
            raise ValueError(f"{name}: only for tensors of at most {ndim} dimensions, got shape {tuple(self.shape)}; use mH")
        if self.ndim < (2 if ndim is None else 0):
            raise ValueError(f"{name}: needs a tensor of at least 2 dimensions, got shape {tuple(self.shape)}")
        return self if self.ndim < 2 else shape.transpose(self, -2, -1)

    transposed.__doc__ = f"``x.{name}``: the conjugate transpose (the transpose: numdiff's tensors are real)."
    return transposed


def is_signed(self: Tensor) -> bool:
    """Whether the dtype holds negative numbers (floats and signed integers)."""
    return self.dtype.is_signed


def is_nonzero(self: Tensor) -> bool:
    """Whether the one element of `self` is nonzero; an error for more or fewer elements."""
    if self.numel() != 1:
        raise RuntimeError(f"is_nonzero: a tensor with {self.numel()} elements is ambiguous; it needs exactly one")
    return bool(self.item() != 0)


def is_same_size(self: Tensor, other: Tensor) -> bool:
    """Whether `self` and `other` have the same shape."""
    return tuple(self.shape) == tuple(other.shape)


def _false(self: Tensor) -> bool:
    """False: numdiff has no conjugate, negative or inference tensors."""
    return False


def _same(self: Tensor) -> Tensor:
    """`self`: conjugation is the identity on real tensors."""
    return self


