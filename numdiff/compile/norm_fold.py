"""Folding a traced normalisation's statistics and the activation after it into its kernel (host graphs).

BatchNorm in training traces as ``grouped_moments(reshape(x))`` (the batch statistics its running
estimates follow, under no_grad), then ``grouped_norm(x, weight, bias)``, which computes the same
statistics again, and usually an activation of the result. Eager mode must run the three kernels
one by one: it cannot know, when the moments are asked for, that the norm will follow. A compiled
graph does, so `fold_norms` replaces them with one "norm_fold" call running
numdiff.kernels.norm_fold.group_norm_forward_fold: the moments once, the normalised output with
the activation (relu, leaky_relu, hardtanh and so relu6) applied as it is written. Three passes
over the activation remain of the seven. A ResNet block's ``relu(bn(conv(x)) + shortcut)`` folds
its add too (the shortcut read as the sweep writes). The same fold takes InstanceNorm's and
GroupNorm's ``grouped_norm`` (style transfer's blocks) and a BatchNorm without running statistics;
not LayerNorm's row view, which eager runs by a row kernel of its own (numdiff.kernels.norm_rows), nor
BatchNorm's view of (N, C) input, which eager runs by column kernels (numdiff.kernels.norm_columns).
When the add's other operand is computed after the norm (``bn2(conv2(out)) + shortcut(x)`` runs the
shortcut second), the fold runs where that operand exists, and the running statistics' updates that
read its moments move after it.

An ``add`` is folded only when it is the one reader of the norm's output and that output is not
kept (for the backward or as a graph output). The activation reading the norm's (or the add's)
output folds in any case: when that value is not kept and nothing else reads it, the activation is
applied in place (relu's backward reads its own output, so a BatchNorm + ReLU never stores the
norm's output); otherwise (leaky_relu's and hardtanh's backwards read their input) the sweep writes
both arrays from the row in cache. The numbers are those of the eager kernels, bit for bit.

Measured and left out: the backward likewise (the norm's backward reading relu's gradient and output,
masking as it reads, instead of the masked gradient as an array) took 3.54 ms against 3.03 for the
mask loop and group_norm_backward on BatchNorm 64x32x32x32 float32, one thread: the select inside
the reduction sweeps and the third array read twice cost more than the array saved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.compile.graph import OpCall, attr_refs

_kernel = lazy_module("numdiff.kernels.norm_fold")

_MEAN, _RSTD = ("saved", 2), ("saved", 3)  # GroupedNorm's ctx.save_for_backward(x, weight, mean, rstd)


def group_norm_forward_fold(*arrays: Any, **options: Any) -> Any:
    """numdiff.kernels.norm_fold.group_norm_forward_fold, loaded on a program's first use."""
    return _kernel.group_norm_forward_fold(*arrays, **options)


RUNTIME = {"group_norm_forward_fold": group_norm_forward_fold}


def _reads(call: OpCall) -> set:
    """The values a call reads: its inputs and the values its attrs refer to (at top level or in tuples)."""
    return {i for i in call.inputs if not isinstance(i, tuple)}.union(attr_refs(call))


def _plain(call: OpCall, name: str) -> bool:
    return call.op_name == name and not call.special and not call.host and not call.tensor_forward


def _foldable_norm(call: OpCall, values: list) -> bool:
    """A host float grouped_norm whose ctx arrays read later are at most its mean and rstd."""
    if not _plain(call, "grouped_norm") or len(call.inputs) != 3 or isinstance(call.inputs[0], tuple):
        return False
    if set(call.ctx_outputs) - {_MEAN, _RSTD}:
        return False
    x, view = values[call.inputs[0]], call.attrs.get("view")
    if type(view) is not tuple or len(view) != 5 or int(np.prod(view)) != int(np.prod(x.shape)) or 0 in view:
        return False
    if view[1] == view[2] == view[4] == 1:
        # LayerNorm's rows: eager runs numdiff.kernels.norm_rows, whose float32 sums round otherwise.
        return False
    if view[0] == view[3] == view[4] == 1:
        # BatchNorm of (N, C) input: eager runs numdiff.kernels.norm_columns over whole rows, where the
        # fold's kernel would walk each column with a stride of C (an MLP's BatchNorm1d: 1.4x slower).
        return False
    params = [i for i in call.inputs[1:] if not isinstance(i, tuple)]
    if any(isinstance(i, tuple) and i[1] is not None for i in call.inputs[1:]):
        return False
    dtypes = {np.dtype(values[i].dtype) for i in [call.inputs[0], call.output, *params]}
    return len(dtypes) == 1 and dtypes.pop() in (np.dtype(np.float32), np.dtype(np.float64)) \
        and all(values[i].shape == (view[2] * view[3],) for i in params)


def fold_norms(calls: list, values: list, live_after: set) -> list:
    """The calls with each foldable grouped_norm made one "norm_fold" call, together with the
    grouped_moments of the same input and view before it and the add of a residual and the relu
    after it that read only its output (see the module docstring)."""
    calls = list(calls)
    while True:
        folded = _fold_first(calls, values, live_after)
        if folded is None:
            return calls
        calls = folded


def _fold_first(calls: list, values: list, live_after: set) -> list | None:
    """The calls with the first foldable grouped_norm folded, or None when there is none."""
    readers: dict[int, list] = {}
    for call in calls:
        for i in _reads(call):
            readers.setdefault(i, []).append(call)
    position = {id(call): n for n, call in enumerate(calls)}
    produced_at = {call.output: n for n, call in enumerate(calls)}
    reshapes = {call.output: call for call in calls if _plain(call, "reshape")}
    for norm in calls:
        if not _foldable_norm(norm, values):
            continue
        x, view = norm.inputs[0], norm.attrs["view"]
        moments = _moments_of(x, view, readers, reshapes, values, position, position[id(norm)])
        add, residual = _residual_add(norm, readers, live_after, values)
        normed = add if add is not None else norm
        activation, separate = _activation_after(normed, readers, live_after, values)
        if moments is None and add is None and activation is None:
            continue  # nothing to fold into the norm's own kernel
        # A residual is an input, so that fusion stores it when a fused loop computes it.
        fold = OpCall(norm.function, list(norm.inputs) + ([residual] if residual is not None else []),
                      {"view": view, "eps": norm.attrs["eps"],
                       "activation": None if activation is None else activation.op_name,
                       "activation_attrs": {} if activation is None else dict(activation.attrs),
                       "kept": normed.output if separate else None,
                       "mean": norm.ctx_outputs.get(_MEAN),
                       "rstd": norm.ctx_outputs.get(_RSTD), "moments": None if moments is None else moments.output},
                      normed.output if activation is None else activation.output, special="norm_fold")
        start = position[id(moments if moments is not None else norm)]
        reads = _reads(fold)
        anchor = max(start, 1 + max((produced_at.get(i, -1) for i in reads), default=-1))
        removed = {id(c) for c in (moments, norm, add, activation) if c is not None}
        placed = _place(calls, fold, start, anchor, removed, reads)
        if placed is None:
            continue
        read = set(live_after).union(*(_reads(call) for call in placed))
        # The reshape that only fed the folded grouped_moments is read by nothing now.
        return [call for call in placed if call.output in read or call.output not in reshapes]
    return None


def _outputs(call: OpCall) -> set:
    if call.special == "norm_fold":
        return {call.output} | {call.attrs[k] for k in ("mean", "rstd", "moments", "kept")
                                if call.attrs[k] is not None}
    return {call.output, *call.ctx_outputs.values()}


def _place(calls: list, fold: OpCall, start: int, anchor: int, removed: set, reads: set) -> list | None:
    """The call list with the calls in `removed` left out and `fold` run where all it reads exists
    (`anchor`): the calls between the first folded call (`start`) and there that read what the fold
    makes (the running statistics' updates) move after it, in order. None when a value the fold reads
    is itself computed from the fold's results, or a random draw would move."""
    made = _outputs(fold)
    independent, dependent = [], []
    for call in calls[start:anchor]:
        if id(call) in removed:
            continue
        if _reads(call) & made:
            if _outputs(call) & reads or call.random:  # a draw keeps its place among the draws
                return None
            dependent.append(call)
            made |= _outputs(call)
        else:
            independent.append(call)
    rest = [call for call in calls[anchor:] if id(call) not in removed]
    return calls[:start] + independent + [fold] + dependent + rest


def _residual_add(norm: OpCall, readers: dict, live_after: set, values: list) -> tuple:
    """(the add, the other operand) when the norm's output is read only by an add of a value of its
    own shape and dtype (a ResNet block's shortcut) and is not kept; else (None, None)."""
    found = readers.get(norm.output, [])
    if norm.output in live_after or len(found) != 1:
        return None, None
    add = found[0]
    if not _plain(add, "add") or add.attrs or add.ctx_outputs or len(add.inputs) != 2:
        return None, None
    other = [i for i in add.inputs if i != norm.output]
    if len(other) != 1 or isinstance(other[0], tuple):
        return None, None
    out, operand = values[norm.output], values[other[0]]
    if operand.shape != out.shape or np.dtype(operand.dtype) != np.dtype(out.dtype) \
            or values[add.output].shape != out.shape or np.dtype(values[add.output].dtype) != np.dtype(out.dtype):
        return None, None
    return add, other[0]


def _moments_of(x: int, view: tuple, readers: dict, reshapes: dict, values: list, position: dict,
                before: int) -> OpCall | None:
    """The grouped_moments call of x seen as `view` (directly or through a reshape of x) that runs
    before position `before`, or None."""
    sources = [x] + [r.output for r in readers.get(x, ())
                     if r.output in reshapes and tuple(r.attrs.get("shape", ())) == view]
    for source in sources:
        if values[source].shape != view:
            continue
        for reader in readers.get(source, ()):
            if (_plain(reader, "grouped_moments") and len(reader.inputs) == 1
                    and not reader.ctx_outputs and values[reader.output].dtype == values[x].dtype
                    and position[id(reader)] < before):
                return reader
    return None


# The activations the fold kernel applies (numdiff.kernels.norm_fold), with the attrs each takes.
_FOLDED_ACTIVATIONS = {"relu": set(), "leaky_relu": {"negative_slope"}, "hardtanh": {"min_val", "max_val"}}


def _activation_after(call: OpCall, readers: dict, live_after: set, values: list) -> tuple:
    """(the relu, leaky_relu or hardtanh (relu6) reading the call's output, whether that output must
    stay an array of its own): it must when it is kept (leaky_relu's backward reads it) or another
    call reads it too. (None, False) when no such activation reads it."""
    found = readers.get(call.output, [])
    for activation in found:
        attrs = _FOLDED_ACTIVATIONS.get(activation.op_name)
        if attrs is None or not _plain(activation, activation.op_name) or set(activation.attrs) != attrs \
                or not all(type(value) is float for value in activation.attrs.values()):
            continue
        if activation.inputs != [call.output] or activation.ctx_outputs \
                or np.dtype(values[activation.output].dtype) != np.dtype(values[call.output].dtype):
            continue
        return activation, call.output in live_after or len(found) > 1
    return None, False


def fold_lines(call: OpCall, values: list, ref: Any) -> list:
    """The lines running a "norm_fold" call: its outputs allocated, then one kernel call."""
    x, weight, bias = call.inputs[:3]
    view, dtype = call.attrs["view"], np.dtype(values[x].dtype)
    stats = (view[0], view[2])

    def param(index: Any, fill: float) -> str:
        if isinstance(index, tuple):  # no weight or no bias: what GroupedNorm's forward reads instead
            return ref(np.full((view[2], view[3]), fill, dtype), "ones" if fill else "zeros")
        return f"_c(v{index}).reshape({(view[2], view[3])!r})"

    def buffer(index: int | None, shape: tuple) -> str:
        return f"v{index}" if index is not None else f"np.empty({shape!r}, {dtype.name!r})"

    out, kept = call.output, call.attrs["kept"]
    normed = out if kept is None else kept
    residual = f"_c(v{call.inputs[3]}).reshape({view!r})" if len(call.inputs) == 4 else "None"
    lines = [f"v{index} = np.empty({tuple(values[index].shape)!r}, {dtype.name!r})" for index in sorted({out, normed})]
    for key, shape in (("mean", stats), ("rstd", stats), ("moments", (2, *stats))):
        if call.attrs[key] is not None:
            lines.append(f"v{call.attrs[key]} = np.empty({shape!r}, {dtype.name!r})")
    extra = "".join(f", {name}={value!r}" for name, value in sorted(call.attrs["activation_attrs"].items()))
    if kept is not None:
        extra += f", activated=v{out}.reshape({view!r})"
    lines.append(
        f"group_norm_forward_fold(_c(v{x}).reshape({view!r}), {param(weight, 1.0)}, {param(bias, 0.0)}, "
        f"{float(call.attrs['eps'])!r}, v{normed}.reshape({view!r}), {buffer(call.attrs['mean'], stats)}, "
        f"{buffer(call.attrs['rstd'], stats)}, {buffer(call.attrs['moments'], (2, *stats))}, "
        f"{call.attrs['activation']!r}, {residual}{extra})"
    )
    return lines
