"""Kernel ops called straight from generated code, with their launch plan worked out once.

An op's public kernel function (numdiff.kernels.conv.conv2d_forward, ...) checks dtypes,
shapes, layout and overlap, works out the loop geometry and picks a serial or parallel build on
every call: about 15 us of Python per call, as much as the kernel itself on small models. In a
traced graph every shape and dtype is fixed by the trace's guards, so this module runs those
checks and that planning once, when the program is built, and emits a direct call of the
compiled core on views of freshly allocated outputs::

    v4 = np.empty((32, 16, 8, 8), 'float32')
    conv_forward_core(_c(v0).reshape((32, 1, 1, 8, 8)), ..., v4.reshape((32, 1, 16, 64)), 3, 3, ...)

Only operands are made C-contiguous at run time (``_c``: free when they already are). An op
whose case is not covered here (another device, dtype or rank, an empty batch) is emitted as an
ordinary forward call. Each planner is attached to its op's spec (``spec(name).direct``, a
`DirectPlan`) by the `plans` decorator below. The serial-or-parallel choice is fixed at build time by the thread count
then; a later `numba.set_num_threads` changes speed, never results (a parallel core given more
parts than threads runs them in turn).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff._threads import get_num_threads
from numdiff.compile import conv_tuning
from numdiff.compile.graph import OpCall, ValueRef
from numdiff.kernels._checks import FLOAT_DTYPES
from numdiff.ops.linalg import _operand
from numdiff.ops.reduction import sums_by_kernel
from numdiff.ops.registry import attach

Planner = Callable[[OpCall, list, Callable], "list | None"]


@dataclass(frozen=True)
class DirectPlan:
    """An op's direct form in compiled programs: its planner, whether its cores call BLAS (a
    function running any of them first calls prepare_blas()), and the ctx arrays the planner
    provides (a call whose graph reads any other array its forward left on ctx is emitted as an
    ordinary forward call)."""

    planner: Planner
    blas: bool = False
    ctx_arrays: frozenset = frozenset()


def plans(name: str, *, blas: bool = False, ctx_arrays: frozenset = frozenset()) -> Callable[[Planner], Planner]:
    """Decorator: `planner` is op `name`'s direct form, attached to its spec."""

    def decorate(planner: Planner) -> Planner:
        attach(name, direct=DirectPlan(planner, blas, ctx_arrays))
        return planner

    return decorate


_INDICES = frozenset({("attr", "indices")})

# The kernels load when a program first runs one, not when numdiff (and so this module) is imported.
_max_pool_cores = lazy_module("numdiff.kernels._max_pool_cores")
_blas = lazy_module("numdiff.kernels._blas")
conv = lazy_module("numdiff.kernels.conv")
matmul = lazy_module("numdiff.kernels.matmul")
pool = lazy_module("numdiff.kernels.pool")
reduce_sum = lazy_module("numdiff.kernels.reduce_sum")


def _c(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x)


def matmul_2d(a: np.ndarray, b: np.ndarray, out: np.ndarray, parts: int) -> np.ndarray:
    """out = a @ b for 2-D float arrays of planned shapes; a transposed view is passed as a flag."""
    (a_c, a_t), (b_c, b_t) = _operand(a), _operand(b)
    if a_t and b_t:  # the core takes at most one transposed operand
        b_c, b_t = np.ascontiguousarray(b), False
    matmul.run_checked(a_t, b_t, a_c[None], b_c[None], out[None], parts)
    return out


def matmul_pair(a1: np.ndarray, b1: np.ndarray, out1: np.ndarray, a2: np.ndarray, b2: np.ndarray,
                out2: np.ndarray, parts: int) -> None:
    """out1 = a1 @ b1 and out2 = a2 @ b2 (planned 2-D shapes), in one parallel region."""
    (a1_c, a1_t), (b1_c, b1_t) = _operand(a1), _operand(b1)
    if a1_t and b1_t:
        b1_c, b1_t = np.ascontiguousarray(b1), False
    (a2_c, a2_t), (b2_c, b2_t) = _operand(a2), _operand(b2)
    if a2_t and b2_t:
        b2_c, b2_t = np.ascontiguousarray(b2), False
    matmul.run_pair_checked(a1_t, b1_t, a1_c, b1_c, out1, a2_t, b2_t, a2_c, b2_c, out2, parts)


def linear_2d(x: np.ndarray, weight: np.ndarray, bias: Any, out: np.ndarray, parts: int) -> np.ndarray:
    """out = x @ weight.T (+ bias) for 2-D x of planned shapes."""
    matmul.run_checked(False, True, np.ascontiguousarray(x)[None], np.ascontiguousarray(weight)[None], out[None], parts)
    if bias is not None:
        np.add(out, bias, out=out)
    return out


def prepare_blas(dtype: np.dtype) -> None:
    """Hold SciPy's BLAS at one thread per call and fix gemm's build for `dtype`
    (numdiff.kernels._blas.prepare_blas)."""
    _blas.prepare_blas(dtype)


RUNTIME = {"_c": _c, "matmul_2d": matmul_2d, "matmul_pair": matmul_pair, "linear_2d": linear_2d,
           "prepare_blas": prepare_blas}
"""Names the emitted lines use besides the cores (added to every program's namespace)."""


def _float(values: list, *indices: int) -> bool:
    """All these values are host float32/float64 arrays of one dtype."""
    dtypes = {np.dtype(values[i].dtype) for i in indices}
    return len(dtypes) == 1 and dtypes.pop() in FLOAT_DTYPES


def _value_inputs(call: OpCall) -> list | None:
    """The call's positional inputs as value indices (None for a None literal), or None if a
    positional input is some other literal."""
    found = []
    for i in call.inputs:
        if isinstance(i, tuple):
            if i[1] is not None:
                return None
            found.append(None)
        else:
            found.append(i)
    return found


def _float_operands(call: OpCall, values: list, count: int, optional_last: bool = False) -> list | None:
    """The call's `count` positional inputs as value indices when they and its output are host
    float32/float64 arrays of one dtype, else None. With `optional_last` the last input may be a
    None literal (a bias), kept as None."""
    inputs = _value_inputs(call)
    if inputs is None or len(inputs) != count or None in (inputs[:-1] if optional_last else inputs):
        return None
    return inputs if _float(values, call.output, *(i for i in inputs if i is not None)) else None


def _alloc(values: list, index: int) -> str:
    value = values[index]
    return f"v{index} = np.empty({tuple(value.shape)!r}, {np.dtype(value.dtype).name!r})"


def _ints(sizes: tuple) -> str:
    """A plan's sizes as source: ints as plain ints, flags as True/False/None (the conv cores' ``loops``)."""
    return ", ".join(repr(s if s is None or isinstance(s, bool) else int(s)) for s in sizes)


def _conv_geometry(call: OpCall) -> tuple:
    a = call.attrs
    return a["stride"], a["padding"], a["dilation"], a["groups"]


@plans("conv2d", blas=True)
def _conv2d(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 3, optional_last=True)
    if inputs is None:
        return None
    (x, w, b), out = inputs, call.output
    x_shape, w_shape, out_shape = values[x].shape, values[w].shape, values[out].shape
    if len(x_shape) != 4 or (b is not None and values[b].shape != (w_shape[0],)):
        return None
    stride, padding, dilation, groups = _conv_geometry(call)
    core, sizes = conv_tuning.conv2d_plan(
        "forward", x_shape, w_shape, out_shape, stride, padding, dilation, groups, values[x].dtype
    )
    if core is None:
        return None
    x5, w3, out4 = conv.conv2d_views(x_shape, w_shape, out_shape, groups)
    bias = f"_c(v{b})" if b is not None else ref(np.zeros(0, values[x].dtype), "no_bias")
    return [
        _alloc(values, out),
        f"{ref(core, 'conv2d_forward_core')}(_c(v{x}).reshape({x5!r}), _c(v{w}).reshape({w3!r}), {bias}, "
        f"{b is not None}, v{out}.reshape({out4!r}), {_ints(sizes)})",
    ]


@plans("conv_transpose2d", blas=True)
def _conv_transpose2d(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 2)
    if inputs is None or len(values[inputs[0]].shape) != 4:
        return None
    (g, w), out = inputs, call.output
    stride, padding, dilation, groups = _conv_geometry(call)
    g_shape, w_shape, out_shape = values[g].shape, values[w].shape, values[out].shape
    core, sizes = conv_tuning.conv2d_plan(
        "backward_input", out_shape, w_shape, g_shape, stride, padding, dilation, groups, values[g].dtype
    )
    if core is None or conv.backward_input_gathers(core, w_shape, stride, groups):
        return None  # the op's own kernel call: eager's route, a forward convolution of the flipped weight
    dx5, w3, go4 = conv.conv2d_views(out_shape, w_shape, g_shape, groups)
    return [
        _alloc(values, out),
        f"{ref(core, 'conv2d_backward_input_core')}(_c(v{g}).reshape({go4!r}), _c(v{w}).reshape({w3!r}), "
        f"v{out}.reshape({dx5!r}), {_ints(sizes)})",
    ]


@plans("conv2d_weight_grad", blas=True)
def _conv2d_weight_grad(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 2)
    if inputs is None or len(values[inputs[0]].shape) != 4:
        return None
    (x, g), out = inputs, call.output
    stride, padding, dilation, groups = _conv_geometry(call)
    x_shape, g_shape, out_shape = values[x].shape, values[g].shape, values[out].shape
    core, sizes = conv_tuning.conv2d_plan(
        "backward_weight", x_shape, out_shape, g_shape, stride, padding, dilation, groups, values[x].dtype
    )
    if core is None:
        return None
    x5, gw3, go4 = conv.conv2d_views(x_shape, out_shape, g_shape, groups)
    return [
        _alloc(values, out),
        f"{ref(core, 'conv2d_backward_weight_core')}(_c(v{x}).reshape({x5!r}), _c(v{g}).reshape({go4!r}), "
        f"v{out}.reshape({gw3!r}), {_ints(sizes)})",
    ]


@plans("max_pool2d", ctx_arrays=_INDICES)
def _max_pool2d(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 1)
    if inputs is None:
        return None
    (x,), out = inputs, call.output
    x_shape, out_shape = values[x].shape, values[out].shape
    if len(x_shape) != 4 or 0 in x_shape:
        return None
    a = call.attrs
    core, sizes = pool.max_pool2d_plan(
        x_shape, out_shape, a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["ceil_mode"]
    )
    indices = call.ctx_outputs.get(("attr", "indices"))
    lines = [_alloc(values, out)]
    if indices is None:
        indices_source = f"np.empty({tuple(out_shape)!r}, np.int64)"
    else:
        lines.append(f"v{indices} = np.empty({tuple(out_shape)!r}, np.int64)")
        indices_source = f"v{indices}"
    plane, out_plane = (x_shape[0] * x_shape[1],) + x_shape[2:], (out_shape[0] * out_shape[1],) + out_shape[2:]
    lines.append(
        f"{ref(core, 'max_pool2d_core')}(_c(v{x}).reshape({plane!r}), v{out}.reshape({out_plane!r}), "
        f"{indices_source}.reshape({out_plane!r}), {_ints(sizes)})"
    )
    return lines


@plans("max_pool_scatter", ctx_arrays=_INDICES)
def _max_pool_scatter(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _value_inputs(call)
    indices = call.attrs.get("indices")
    if inputs is None or len(inputs) != 1 or inputs[0] is None or not isinstance(indices, ValueRef):
        return None
    (g,), out = inputs, call.output
    g_shape, out_shape = values[g].shape, values[out].shape
    if (not _float(values, g, out) or np.dtype(values[indices.index].dtype) != np.int64
            or values[indices.index].shape != g_shape or len(g_shape) < 2 or g_shape[:2] != out_shape[:2]):
        return None
    planes = g_shape[0] * g_shape[1]
    if planes == 0:
        return None
    g2 = (planes, int(np.prod(g_shape[2:])))
    out2 = (planes, int(np.prod(out_shape[2:])))
    core = _max_pool_cores.scatter_core.pick(int(np.prod(out_shape)))[0]
    # The core tests each index against the plane before it writes: indices need no check here.
    lines = [
        _alloc(values, out),
        f"{ref(core, 'max_pool_scatter_core')}(_c(v{g}).reshape({g2!r}), _c(v{indices.index}).reshape({g2!r}), "
        f"v{out}.reshape({out2!r}))",
    ]
    kept = call.ctx_outputs.get(("attr", "indices"))
    if kept is not None:  # the forward keeps its indices on ctx for its own backward (a gather)
        lines.append(f"v{kept} = v{indices.index}")
    return lines


@plans("matmul", blas=True)
def _matmul(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 2)
    if inputs is None:
        return None
    (a, b), out = inputs, call.output
    a_shape, b_shape = values[a].shape, values[b].shape
    if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != b_shape[0] or 0 in a_shape + b_shape:
        return None
    return [_alloc(values, out), f"matmul_2d(v{a}, v{b}, v{out}, {get_num_threads()})"]


def product_macs(call: OpCall, values: list) -> int | None:
    """Multiply-adds of a 2-D matmul that has a direct form (see `_matmul`), else None."""
    if call.op_name != "matmul" or call.special or call.host or call.tensor_forward or call.ctx_outputs:
        return None
    if _matmul(call, values, lambda obj, hint: hint) is None:
        return None
    (m, k), n = values[call.inputs[0]].shape, values[call.inputs[1]].shape[1]
    return m * n * k


def pair_lines(call: OpCall, values: list) -> list:
    """The lines of a "gemm_pair" call (numdiff.compile.schedule.pair_products): two products of
    `product_macs`, inputs (a1, b1, a2, b2), outputs call.output and attrs["second_output"]."""
    a1, b1, a2, b2 = call.inputs
    out1, out2 = call.output, call.attrs["second_output"]
    return [_alloc(values, out1), _alloc(values, out2),
            f"matmul_pair(v{a1}, v{b1}, v{out1}, v{a2}, v{b2}, v{out2}, {call.attrs['parts']})"]


@plans("linear", blas=True)
def _linear(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _float_operands(call, values, 3, optional_last=True)
    if inputs is None:
        return None
    (x, w, b), out = inputs, call.output
    x_shape, w_shape = values[x].shape, values[w].shape
    if len(x_shape) != 2 or len(w_shape) != 2 or x_shape[1] != w_shape[1] or 0 in x_shape + w_shape:
        return None
    if b is not None and values[b].shape != (w_shape[0],):
        return None
    bias = f"v{b}" if b is not None else "None"
    return [_alloc(values, out), f"linear_2d(v{x}, v{w}, {bias}, v{out}, {get_num_threads()})"]


@plans("permute")
def _permute(call: OpCall, values: list, ref: Callable) -> list | None:
    inputs = _value_inputs(call)
    dims = call.attrs.get("dims")
    if inputs is None or len(inputs) != 1 or inputs[0] is None or type(dims) is not tuple:
        return None
    if sorted(dims) != list(range(len(values[inputs[0]].shape))):
        return None
    return [f"v{call.output} = v{inputs[0]}.transpose({dims!r})"]


@plans("sum")
def _sum(call: OpCall, values: list, ref: Callable) -> list | None:
    """What Sum's forward computes, without its Python layers: the sum_dims kernel where eager runs it
    (interleaved or short innermost summed axes in one pass; Upsample's gradient), else np.sum (which
    is np.add.reduce). One rule, reduction.sums_by_kernel, picks for both, so the numbers are eager's."""
    inputs = _value_inputs(call)
    dims, keepdim = call.attrs.get("dims"), call.attrs.get("keepdim")
    if inputs is None or len(inputs) != 1 or inputs[0] is None or type(dims) is not tuple or not dims:
        return None
    x, out = inputs[0], call.output
    if not _float(values, x, out) or not isinstance(keepdim, bool):
        return None
    shape = values[x].shape
    if not sums_by_kernel(values[x].dtype, len(shape), dims):
        return [f"v{out} = as_array(np.add.reduce(v{x}, axis={dims!r}, keepdims={keepdim!r}))"]
    kept_shape = tuple(1 if axis in dims else size for axis, size in enumerate(shape))
    lines = [f"v{out} = np.empty({kept_shape!r}, {np.dtype(values[x].dtype).name!r})",
             f"{ref(reduce_sum.sum_dims, 'sum_dims')}(v{x}, {dims!r}, v{out})"]
    if not keepdim:
        lines.append(f"v{out} = v{out}.reshape({tuple(values[out].shape)!r})")
    return lines


def _plan(call: OpCall) -> DirectPlan | None:
    found = getattr(call.function, "spec", None)
    return None if found is None else found.direct


def needs_blas(call: OpCall) -> bool:
    """Whether `call`'s op has a direct form whose cores call BLAS."""
    plan = _plan(call)
    return plan is not None and plan.blas


def direct_lines(call: OpCall, values: list, ref: Callable) -> list | None:
    """The lines that run `call` (on host arrays) as a planned kernel call, or None when it has
    no direct form."""
    if call.special or call.host or call.tensor_forward:
        return None
    plan = _plan(call)
    if plan is None or set(call.ctx_outputs) - plan.ctx_arrays:
        return None
    return plan.planner(call, values, ref)
