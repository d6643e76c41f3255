"""Attach the ops as Tensor methods and operators (x.exp(), x + y, x[0] = 1, x.add_(y), ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff import (
    _dtype,
    _inplace,
    _tensor_extras,
    _tensor_factories,
    _tensor_fills,
    _tensor_inplace_extras,
    _tensor_memory,
    _tensor_pickle,
    _tensor_placement,
    _torch_names,
    sampling,
)
from numdiff._ground.scalar_rules import RULES
from numdiff.autograd.grad_mode import no_grad
from numdiff.backend import is_host
from numdiff.creation import rand, randn
from numdiff.linalg import _toplevel as linalg_toplevel
from numdiff.ops import (
    activation,
    added_methods,
    arithmetic,
    conversion,
    diagonals,
    indexing,
    joining,
    linalg,
    logical,
    moments,
    nan_handling,
    norms,
    products,
    rearrange,
    reduction,
    roll,
    scan,
    scatter,
    search,
    selection,
    shape,
    sorting,
    strided_view,
    triangular,
    unary,
)
from numdiff.ops._util import scalar_like
from numdiff.ops.elementwise import METHODS as RULE_METHODS
from numdiff.ops.elementwise import PUBLIC as PUBLIC_RULES
from numdiff.overrides import is_overridable
from numdiff.tensor import Tensor


def _reflected(fn):
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return method


def _deferring(fn):
    """A binary operator that returns NotImplemented for an operand defining numdiff.overrides'
    protocol, so that Python calls the operand's reflected method (a numdiff.fx Proxy records it);
    for the operators whose function does not hand such operands over itself."""

    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, Tensor) and is_overridable(other):  # a Tensor skips the call
            return NotImplemented
        return fn(self, other)

    return method


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    if _inplace.records_nothing(self, value):
        # x[i] = v on a tensor nothing tracks: only the indexed elements are written (the recorded
        # form computes a whole new tensor, so filling a buffer row by row would be quadratic).
        key, value = indexing.put_operands(self, key, value)
        if is_host(value._data):
            _inplace.write_at(self, "__setitem__", key, value._data)
            return
    _inplace.apply_inplace(self, "__setitem__", lambda old: indexing.index_put(old, key, value))


def _fill(old: Tensor, value: Any) -> Tensor:
    if not isinstance(value, Tensor):  # fill_ checks a float's range too: 1e5 into float16 is an error
        value = scalar_like(value, old, "fill_", float_range=True)
    return indexing.index_put(old, Ellipsis, value)


def _copy(old: Tensor, src: Tensor) -> Tensor:
    if src.device != old.device or src.dtype is not old.dtype:
        src = src.to(dtype=old.dtype, device=old.device)
    return indexing.index_put(old, Ellipsis, src)


def _zero(old: Tensor) -> Tensor:
    return indexing.index_put(old, Ellipsis, 0)


def _uniform(old: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Any = None) -> Tensor:
    with no_grad():
        return rand(*old.shape, generator=generator, dtype=old.dtype, device=old.device) * (b - a) + a


def _normal(old: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    with no_grad():
        return randn(*old.shape, generator=generator, dtype=old.dtype, device=old.device) * std + mean


def _squeeze_method(self: Tensor, *dims: Any, dim: Any = None) -> Tensor:
    """x.squeeze(), x.squeeze(d), x.squeeze(d0, d1) or x.squeeze(dim=...), as torch's method takes
    them; `dim` is a named parameter so that NumPy's `axis` reaches it (numdiff._numpy_names)."""
    if dims:
        if dim is not None:
            raise TypeError(f"squeeze() got dims {dims} and dim={dim!r}: pass them one way")
        dim = dims[0] if len(dims) == 1 else dims
    return shape.squeeze(self, dim)


METHODS = {
    # arithmetic
    "__add__": arithmetic.add,
    "__radd__": _reflected(arithmetic.add),
    "__sub__": arithmetic.sub,
    "__rsub__": _reflected(arithmetic.sub),
    "__mul__": arithmetic.mul,
    "__rmul__": _reflected(arithmetic.mul),
    "__truediv__": arithmetic.div,
    "__rtruediv__": _reflected(arithmetic.div),
    "__pow__": arithmetic.pow,
    "__rpow__": _reflected(arithmetic.pow),
    "__neg__": arithmetic.neg,
    "__pos__": lambda self: self,
    "__abs__": PUBLIC_RULES["abs"],
    "add": arithmetic.add,
    "sub": arithmetic.sub,
    "mul": arithmetic.mul,
    "div": arithmetic.div,
    "pow": arithmetic.pow,
    "neg": arithmetic.neg,
    # products
    "__matmul__": _deferring(linalg.matmul),
    "__rmatmul__": _deferring(_reflected(linalg.matmul)),
    "matmul": linalg.matmul,
    "mm": products.mm,
    "bmm": products.bmm,
    "dot": products.dot,
    "outer": products.outer,
    # comparisons and logic
    "__eq__": logical.eq,
    "__ne__": logical.ne,
    "__lt__": logical.lt,
    "__le__": logical.le,
    "__gt__": logical.gt,
    "__ge__": logical.ge,
    "__and__": logical.bitwise_and,
    "__or__": logical.bitwise_or,
    "__xor__": logical.bitwise_xor,
    "__rand__": _reflected(logical.bitwise_and),
    "__ror__": _reflected(logical.bitwise_or),
    "__rxor__": _reflected(logical.bitwise_xor),
    "__lshift__": logical.bitwise_left_shift,
    "__rshift__": logical.bitwise_right_shift,
    "__rlshift__": _reflected(logical.bitwise_left_shift),
    "bitwise_and": logical.bitwise_and,
    "bitwise_or": logical.bitwise_or,
    "bitwise_xor": logical.bitwise_xor,
    "bitwise_not": logical.bitwise_not,
    "__rrshift__": _reflected(logical.bitwise_right_shift),
    "bitwise_left_shift": logical.bitwise_left_shift,
    "bitwise_right_shift": logical.bitwise_right_shift,
    "__invert__": logical.bitwise_not,
    "eq": logical.eq,
    "ne": logical.ne,
    "lt": logical.lt,
    "le": logical.le,
    "gt": logical.gt,
    "ge": logical.ge,
    "logical_not": logical.logical_not,
    "isfinite": logical.isfinite,
    "isnan": logical.isnan,
    "isinf": logical.isinf,
    "all": logical.all,
    "any": logical.any,
    "allclose": logical.allclose,
    "equal": logical.equal,
    # unary and activations (the scalar rules' methods, exp, sin, ..., come from ops.elementwise.METHODS)
    "abs": PUBLIC_RULES["abs"],
    "round": unary.round,
    "relu": activation.relu,
    "softmax": activation.softmax,
    "log_softmax": activation.log_softmax,
    "clamp": selection.clamp,
    "clip": selection.clamp,
    "fmod": arithmetic.fmod,
    "remainder": arithmetic.remainder,
    "floor_divide": arithmetic.floor_divide,
    "__mod__": arithmetic.remainder,
    "__rmod__": _reflected(arithmetic.remainder),
    "__floordiv__": _deferring(arithmetic.floor_divide),
    "__rfloordiv__": _deferring(_reflected(arithmetic.floor_divide)),
    "clamp_min": selection.clamp_min,
    "clamp_max": selection.clamp_max,
    "nan_to_num": nan_handling.nan_to_num,
    "lerp": arithmetic.lerp,
    "absolute": unary.absolute,
    "arctan2": unary.arctan2,
    "multiply": arithmetic.mul,
    "subtract": arithmetic.sub,
    "divide": arithmetic.div,
    "true_divide": arithmetic.div,
    "negative": arithmetic.neg,
    "logical_and": logical.logical_and,
    "logical_or": logical.logical_or,
    "logical_xor": logical.logical_xor,
    "maximum": selection.maximum,
    "minimum": selection.minimum,
    "masked_fill": selection.masked_fill,
    "where": lambda self, condition, other: selection.where(condition, self, other),
    # reductions
    "sum": reduction.sum,
    "mean": reduction.mean,
    "var": moments.var,
    "std": moments.std,
    "prod": reduction.prod,
    "max": reduction.max,
    "min": reduction.min,
    "amax": reduction.amax,
    "amin": reduction.amin,
    "argmax": reduction.argmax,
    "argmin": reduction.argmin,
    "logsumexp": moments.logsumexp,
    # shape
    "reshape": shape.reshape,
    "view": shape.view,
    "flatten": shape.flatten,
    "unflatten": shape.unflatten,
    "squeeze": _squeeze_method,
    "unsqueeze": shape.unsqueeze,
    "transpose": shape.transpose,
    "permute": shape.permute,
    "t": shape.t,
    "expand": shape.expand,
    "expand_as": lambda self, other: shape.expand(self, tuple(other.shape)),
    "broadcast_to": shape.broadcast_to,
    "repeat": rearrange.repeat,
    "split": joining.split,
    "chunk": joining.chunk,
    # flip, squeeze and tile also take the dims one by one, as torch's methods do: x.flip(0, 1)
    "flip": lambda self, *dims, **kwargs: shape.flip(self, *(dims if len(dims) <= 1 else (dims,)), **kwargs),
    "view_as": lambda self, other: shape.view(self, tuple(other.shape)),
    "reshape_as": lambda self, other: shape.reshape(self, tuple(other.shape)),
    # ordering and triangles
    "sort": sorting.sort,
    "argsort": sorting.argsort,
    "topk": sorting.topk,
    "tril": triangular.tril,
    "triu": triangular.triu,
    "tril_": _inplace.inplace_method("tril_", triangular.tril),
    "multinomial": lambda self, *args, **kwargs: sampling.multinomial(self, *args, **kwargs),
    "bernoulli": lambda self, *args, **kwargs: sampling.bernoulli(self, *args, **kwargs),
    "bernoulli_": _inplace.inplace_method("bernoulli_", lambda old, p=0.5, *, generator=None: sampling.bernoulli(old, p, generator=generator)),
    "triu_": _inplace.inplace_method("triu_", triangular.triu),
    # indexing
    "__getitem__": indexing.getitem,
    "__setitem__": _setitem,
    "gather": indexing.gather,
    "scatter_add": indexing.scatter_add,
    "index_select": indexing.index_select,
    # copies
    "clone": conversion.clone,
    "contiguous": conversion.contiguous,
    "half": lambda self: self.to(_dtype.float16),
    "bfloat16": lambda self: self.to(_dtype.bfloat16),
    "short": lambda self: self.to(_dtype.int16),
    "char": lambda self: self.to(_dtype.int8),
    "byte": lambda self: self.to(_dtype.uint8),
    "type_as": _tensor_factories.type_as,
    "new_zeros": _tensor_factories.new_zeros,
    "new_ones": _tensor_factories.new_ones,
    "new_empty": _tensor_factories.new_empty,
    "new_full": _tensor_factories.new_full,
    "new_tensor": _tensor_factories.new_tensor,
    # running sums, norms, products, rearranging, writes at indices, searching
    "cumsum": scan.cumsum,
    "cumprod": scan.cumprod,
    "cummax": scan.cummax,
    "cummin": scan.cummin,
    "diff": scan.diff,
    "norm": norms.norm,
    "nansum": nan_handling.nansum,
    "nanmean": nan_handling.nanmean,
    "count_nonzero": norms.count_nonzero,
    "inner": products.inner,
    "cross": products.cross,
    "addmm": products.addmm,
    "addmv": products.addmv,
    "baddbmm": products.baddbmm,
    "addcmul": products.addcmul,
    "addcdiv": products.addcdiv,
    "diag": diagonals.diag,
    "diag_embed": diagonals.diag_embed,
    "diagonal": diagonals.diagonal,
    "as_strided": strided_view.as_strided,
    "trace": diagonals.trace,
    "rot90": rearrange.rot90,
    "dist": norms.dist,
    "tensor_split": rearrange.tensor_split,
    "roll": roll.roll,
    "tile": lambda self, *dims, **kwargs: rearrange.tile(self, *(dims if len(dims) <= 1 else (dims,)), **kwargs),
    "unbind": rearrange.unbind,
    "select": rearrange.select,
    "movedim": rearrange.movedim,
    "moveaxis": rearrange.movedim,
    "swapaxes": rearrange.swapaxes,
    "swapdims": rearrange.swapdims,
    "repeat_interleave": rearrange.repeat_interleave,
    "scatter": scatter.scatter,
    "index_add": scatter.index_add,
    "masked_select": scatter.masked_select,
    "take": scatter.take,
    "nonzero": search.nonzero,
    "argwhere": search.argwhere,
    "unique": search.unique,
    "isclose": search.isclose,
    # in place
    "cumsum_": _inplace.inplace_method("cumsum_", scan.cumsum),
    "cumprod_": _inplace.inplace_method("cumprod_", scan.cumprod),
    "addmm_": _inplace.inplace_method("addmm_", products.addmm),
    "baddbmm_": _inplace.inplace_method("baddbmm_", products.baddbmm),
    "addcmul_": _inplace.inplace_method("addcmul_", products.addcmul),
    "addcdiv_": _inplace.inplace_method("addcdiv_", products.addcdiv),
    "scatter_": _inplace.inplace_method("scatter_", scatter.scatter),
    "scatter_add_": _inplace.inplace_method("scatter_add_", indexing.scatter_add),
    "index_add_": _inplace.inplace_method("index_add_", scatter.index_add),
    "add_": _inplace.arithmetic_inplace_method("add_", arithmetic.add, np.add, arithmetic.mul),
    "sub_": _inplace.arithmetic_inplace_method("sub_", arithmetic.sub, np.subtract, arithmetic.mul),
    "mul_": _inplace.arithmetic_inplace_method("mul_", arithmetic.mul, np.multiply),
    "div_": _inplace.arithmetic_inplace_method("div_", arithmetic.div, np.true_divide),
    "pow_": _inplace.inplace_method("pow_", arithmetic.pow),
    "neg_": _inplace.inplace_method("neg_", arithmetic.neg),
    "clamp_": _inplace.inplace_method("clamp_", selection.clamp),
    "clip_": _inplace.inplace_method("clip_", selection.clamp),
    "fmod_": _inplace.inplace_method("fmod_", arithmetic.fmod),
    "remainder_": _inplace.inplace_method("remainder_", arithmetic.remainder),
    "floor_divide_": _inplace.inplace_method("floor_divide_", arithmetic.floor_divide),
    "__imod__": _inplace.inplace_method("__imod__", arithmetic.remainder),
    "__ifloordiv__": _inplace.inplace_method("__ifloordiv__", arithmetic.floor_divide),
    "clamp_min_": _inplace.inplace_method("clamp_min_", selection.clamp_min),
    "clamp_max_": _inplace.inplace_method("clamp_max_", selection.clamp_max),
    "nan_to_num_": _inplace.inplace_method("nan_to_num_", nan_handling.nan_to_num),
    "lerp_": _inplace.inplace_method("lerp_", arithmetic.lerp),
    "relu_": _inplace.inplace_method("relu_", activation.relu),
    "masked_fill_": _inplace.inplace_method("masked_fill_", selection.masked_fill),
    "zero_": _inplace.zero_inplace_method(_zero),
    "fill_": _inplace.inplace_method("fill_", _fill),
    "copy_": _inplace.inplace_method("copy_", _copy),
    "uniform_": _inplace.inplace_method("uniform_", _uniform),
    "normal_": _inplace.inplace_method("normal_", _normal),
    "__iadd__": _inplace.arithmetic_inplace_method("__iadd__", arithmetic.add, np.add, arithmetic.mul),
    "__isub__": _inplace.arithmetic_inplace_method("__isub__", arithmetic.sub, np.subtract, arithmetic.mul),
    "__imul__": _inplace.arithmetic_inplace_method("__imul__", arithmetic.mul, np.multiply),
    "__itruediv__": _inplace.arithmetic_inplace_method("__itruediv__", arithmetic.div, np.true_divide),
    # Without these Python falls back to x = x ** y: a new tensor of the promoted dtype, and the
    # old one (and every view of it) unchanged, where PyTorch writes in place.
    "__ipow__": _inplace.inplace_method("__ipow__", arithmetic.pow),
    "__iand__": _inplace.inplace_method("__iand__", logical.bitwise_and),
    "__ior__": _inplace.inplace_method("__ior__", logical.bitwise_or),
    "__ixor__": _inplace.inplace_method("__ixor__", logical.bitwise_xor),
    "__ilshift__": _inplace.inplace_method("__ilshift__", logical.bitwise_left_shift),
    "__irshift__": _inplace.inplace_method("__irshift__", logical.bitwise_right_shift),
    "bitwise_and_": _inplace.inplace_method("bitwise_and_", logical.bitwise_and),
    "bitwise_or_": _inplace.inplace_method("bitwise_or_", logical.bitwise_or),
    "bitwise_xor_": _inplace.inplace_method("bitwise_xor_", logical.bitwise_xor),
    "bitwise_not_": _inplace.inplace_method("bitwise_not_", logical.bitwise_not),
    "bitwise_left_shift_": _inplace.inplace_method("bitwise_left_shift_", logical.bitwise_left_shift),
    "bitwise_right_shift_": _inplace.inplace_method("bitwise_right_shift_", logical.bitwise_right_shift),
}


# The scalar rules whose Tensor method gets its in-place form from `attach`, as in PyTorch (x.log_(),
# x.floor_(), x.hypot_(y)): every one-input rule without attributes that is a method (its generated
# one, or a hand-written one such as abs and round; relu_ keeps its own), and every two-input rule
# whose method is generated (add_ and the other arithmetic ones are hand-written, with alpha).
_IN_PLACE = frozenset(
    name for name, rule in RULES.items() if not rule.attrs and (rule.arity == 1 or rule.method)
)


def attach() -> None:
    rule_methods = {name: fn for name, fn in {**RULE_METHODS, **METHODS}.items() if name in _IN_PLACE}
    in_place = {f"{name}_": _inplace.inplace_method(f"{name}_", fn) for name, fn in rule_methods.items()}
    for name, fn in {**in_place, **RULE_METHODS, **METHODS}.items():
        setattr(Tensor, name, fn)
    for name, fn in {**_tensor_extras.EXTRA_METHODS, **added_methods.METHODS, **linalg_toplevel.METHODS,
                     **_tensor_pickle.PICKLE_METHODS, **_tensor_placement.PLACEMENT_ATTRIBUTES,
                     **_tensor_inplace_extras.INPLACE_EXTRA_METHODS}.items():
        setattr(Tensor, name, fn)
    for name, fn in {**_tensor_fills.METHODS, **_tensor_memory.METHODS, **_torch_names.methods()}.items():  # PyTorch's aliases, random fills...
        setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: shape.permute(self, tuple(reversed(range(self.ndim)))))
    Tensor.mT = property(lambda self: shape.transpose(self, -2, -1))
