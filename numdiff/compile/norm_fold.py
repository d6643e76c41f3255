"""Folding a traced normalisation's statistics and the ReLU after it into its kernel (host graphs).

BatchNorm in training traces as ``grouped_moments(reshape(x))`` (the batch statistics its running
estimates follow, under no_grad), then ``grouped_norm(x, weight, bias)``, which computes the same
statistics again, and usually ``relu`` of the result. Eager mode must run the three kernels one by
one: it cannot know, when the moments are asked for, that the norm will follow. A compiled graph
does, so `fold_norms` replaces them with one "norm_fold" call running
numdiff.kernels.norm_fold.group_norm_forward_fold: the moments once, the normalised output with
the ReLU applied as it is written. Two passes over the activation remain of the seven. The same
fold takes InstanceNorm's and GroupNorm's ``grouped_norm`` + ``relu`` (style transfer's blocks)
and a BatchNorm without running statistics.

A ``relu`` is folded only when it is the one reader of the norm's output and that output is not
kept (for the backward or as a graph output): relu's backward reads its own output, so the norm's
output then never needs to exist. The numbers are those of the three eager kernels, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff._lazy import lazy_module
from numdiff.compile.graph import OpCall, ValueRef

_kernel = lazy_module("numdiff.kernels.norm_fold")

_MEAN, _RSTD = ("saved", 2), ("saved", 3)  # GroupedNorm's ctx.save_for_backward(x, weight, mean, rstd)


def group_norm_forward_fold(*arrays: Any) -> Any:
    """numdiff.kernels.norm_fold.group_norm_forward_fold, loaded on a program's first use."""
    return _kernel.group_norm_forward_fold(*arrays)


RUNTIME = {"group_norm_forward_fold": group_norm_forward_fold}


def _reads(call: OpCall) -> set:
    """The values a call reads: its inputs and the values its attrs refer to (at top level or in tuples)."""
    found = {i for i in call.inputs if not isinstance(i, tuple)}
    stack = list(call.attrs.values())
    while stack:
        value = stack.pop()
        if isinstance(value, ValueRef):
            found.add(value.index)
        elif type(value) is tuple:
            stack.extend(value)
    return found


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
    params = [i for i in call.inputs[1:] if not isinstance(i, tuple)]
    if any(isinstance(i, tuple) and i[1] is not None for i in call.inputs[1:]):
        return False
    dtypes = {np.dtype(values[i].dtype) for i in [call.inputs[0], call.output, *params]}
    return len(dtypes) == 1 and dtypes.pop() in (np.dtype(np.float32), np.dtype(np.float64)) \
        and all(values[i].shape == (view[2] * view[3],) for i in params)


def fold_norms(calls: list, values: list, live_after: set) -> list:
    """The calls with each foldable grouped_norm, the grouped_moments of the same input and view
    before it, and a relu reading only its output made one "norm_fold" call (see the module docstring)."""
    readers: dict[int, list] = {}
    for call in calls:
        for i in _reads(call):
            readers.setdefault(i, []).append(call)
    position = {id(call): n for n, call in enumerate(calls)}
    produced_at = {call.output: n for n, call in enumerate(calls)}
    reshapes = {call.output: call for call in calls if _plain(call, "reshape")}
    replaced: dict[int, OpCall | None] = {}  # id of a call -> the call standing in its place (None: dropped)
    for call in calls:
        if not _foldable_norm(call, values):
            continue
        x, view = call.inputs[0], call.attrs["view"]
        moments = _moments_of(x, view, readers, reshapes, values, position, position[id(call)], replaced)
        start = position[id(moments)] if moments is not None else position[id(call)]
        if any(produced_at.get(i, -1) >= start for i in _reads(call)):
            continue  # a weight or bias computed after the moments: the fold could not run there
        relu = _relu_after(call, readers, live_after)
        output = relu.output if relu is not None else call.output
        fold = OpCall(call.function, list(call.inputs),
                      {"view": view, "eps": call.attrs["eps"], "relu": relu is not None,
                       "mean": call.ctx_outputs.get(_MEAN), "rstd": call.ctx_outputs.get(_RSTD),
                       "moments": moments.output if moments is not None else None},
                      output, special="norm_fold")
        if moments is not None:
            replaced[id(moments)], replaced[id(call)] = fold, None
        else:
            replaced[id(call)] = fold
        if relu is not None:
            replaced[id(relu)] = None
    if not replaced:
        return calls
    kept = [replaced.get(id(call), call) for call in calls if replaced.get(id(call), call) is not None]
    read = set(live_after).union(*(_reads(call) for call in kept))
    # The reshape that only fed a folded grouped_moments is read by nothing now.
    return [call for call in kept if call.output in read or call.output not in reshapes]


def _moments_of(x: int, view: tuple, readers: dict, reshapes: dict, values: list, position: dict,
                before: int, replaced: dict) -> OpCall | None:
    """The grouped_moments call of x seen as `view` (directly or through a reshape of x) that runs
    before position `before` and is not folded yet, or None."""
    sources = [x] + [r.output for r in readers.get(x, ())
                     if r.output in reshapes and tuple(r.attrs.get("shape", ())) == view]
    for source in sources:
        if values[source].shape != view:
            continue
        for reader in readers.get(source, ()):
            if (_plain(reader, "grouped_moments") and id(reader) not in replaced and len(reader.inputs) == 1
                    and not reader.ctx_outputs and values[reader.output].dtype == values[x].dtype
                    and position[id(reader)] < before):
                return reader
    return None


def _relu_after(norm: OpCall, readers: dict, live_after: set) -> OpCall | None:
    """The relu that is the only reader of the norm's output, when that output is not kept."""
    found = readers.get(norm.output, [])
    if norm.output in live_after or len(found) != 1:
        return None
    relu = found[0]
    if not _plain(relu, "relu") or relu.inputs != [norm.output] or relu.attrs or relu.ctx_outputs:
        return None
    return relu


def fold_lines(call: OpCall, values: list, ref: Any) -> list:
    """The lines running a "norm_fold" call: its outputs allocated, then one kernel call."""
    x, weight, bias = call.inputs
    view, dtype = call.attrs["view"], np.dtype(values[x].dtype)
    stats = (view[0], view[2])

    def param(index: Any, fill: float) -> str:
        if isinstance(index, tuple):  # no weight or no bias: what GroupedNorm's forward reads instead
            return ref(np.full((view[2], view[3]), fill, dtype), "ones" if fill else "zeros")
        return f"_c(v{index}).reshape({(view[2], view[3])!r})"

    def buffer(index: int | None, shape: tuple) -> str:
        return f"v{index}" if index is not None else f"np.empty({shape!r}, {dtype.name!r})"

    out = call.output
    lines = [f"v{out} = np.empty({tuple(values[out].shape)!r}, {dtype.name!r})"]
    for key, shape in (("mean", stats), ("rstd", stats), ("moments", (2, *stats))):
        if call.attrs[key] is not None:
            lines.append(f"v{call.attrs[key]} = np.empty({shape!r}, {dtype.name!r})")
    lines.append(
        f"group_norm_forward_fold(_c(v{x}).reshape({view!r}), {param(weight, 1.0)}, {param(bias, 0.0)}, "
        f"{float(call.attrs['eps'])!r}, v{out}.reshape({view!r}), {buffer(call.attrs['mean'], stats)}, "
        f"{buffer(call.attrs['rstd'], stats)}, {buffer(call.attrs['moments'], (2, *stats))}, {call.attrs['relu']!r})"
    )
    return lines
