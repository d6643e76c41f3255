"""Rewrites of a host graph's call list before fusion.py emits it, so that more work lands in fused loops.

- A linear with a bias whose output an elementwise op reads becomes a bias-free linear (its GEMM
  alone) and an ``add`` of the bias, which joins that op's fused loop: ``relu(x @ W.T + b)`` is
  then the GEMM and one pass over its product, instead of the GEMM, NumPy's bias add and a relu
  kernel (three passes, the last a parallel region). The add is the one eager runs after its GEMM
  (``np.add(out, bias)``), so the results are the same bit for bit. Not when the product is
  larger than fusion.FUSE_MAX_ELEMENTS and a transcendental op (gelu, tanh, sigmoid, silu) reads
  it: a large group calling one runs fused only as one flat loop, which the bias row's broadcast
  is not, so the add would run as an op of its own on a fresh array beside the GEMM's in-place add.
- A sum that fusion can fold into a loop (over all dims, or over leading dims: a linear layer's
  bias gradient ``g.sum(0)``) moves up to just after the call that computes its input, so it joins
  that call's fused group. A traced backward computes the bias gradient after the two GEMMs that
  also read ``g``, and a GEMM reading the group's value closes the group.

- Two independent 2-D matmuls of similar size, with only views between them (a
  linear layer's input gradient ``g @ W`` and weight gradient ``g.T @ x``), become one
  "gemm_pair" call: one parallel region in which half the threads compute each product
  (numdiff.kernels.matmul.run_pair_checked), instead of two regions each splitting one product
  across all threads.

- One-element elementwise calls that read only inputs and constants (the scalar factors of a chain's
  forward-mode derivative, cast to float64) move to the front, where they form one group of
  their own instead of splitting the group of full-size calls around them.

Every call writes a fresh array and reads only values computed before it, so a call may run as
early as its inputs exist; the emitted order changes, the values do not.
"""

from __future__ import annotations

import numpy as np

from numdiff.compile import direct, fusion
from numdiff.compile.graph import OpCall, Value
from numdiff.ops.elementwise import FUNCTIONS

PAIR_MIN_MACS = 1 << 22
"""Products of fewer multiply-adds (under about 0.06 ms on one thread here) are not paired: their
time follows their shape more than their size (a classifier head's ``g @ W`` with k = 10 is bound
by writing its output), so a pair of them balances badly; each keeps splitting across all threads."""


def hoist_scalars(calls: list, values: list) -> list:
    """The calls with every fusible one-element call that reads no array an earlier call computes
    (a scalar operand cast to a wider dtype, ``to_dtype(0.9)``) moved to the front, in order: left
    in place, a call of another shape closes the fused group around it."""
    produced = {c.output for c in calls}
    hoisted, rest, early = [], [], set()
    for call in calls:
        reads = fusion.value_reads(call)
        if (fusion.fusible(call, values) and int(np.prod(values[call.output].shape)) == 1
                and all(i in early or i not in produced for i in reads)):
            hoisted.append(call)
            early.add(call.output)
        else:
            rest.append(call)
    return hoisted + rest


def _bias_add_fuses(product: Value, readers: list, values: list) -> bool:
    """Whether a linear's bias add, split off, lands in a fused loop with an op reading its product
    (see the module docstring): some reader is fusible, and the product is small or no fusible
    reader calls a transcendental function (numdiff.compile.group_kernel runs a large non-flat
    group with one op by op)."""
    fusible = [r for r in readers if fusion.fusible(r, values)]
    if int(np.prod(product.shape)) <= fusion.FUSE_MAX_ELEMENTS:
        return bool(fusible)
    return bool(fusible) and not any(fusion.calls_math(r) for r in fusible)


def split_linear_bias(calls: list, values: list) -> tuple[list, list]:
    """The calls with every linear whose output a fusible op reads split into a bias-free linear
    and an add, and the values (a new list: the graph's own plus one per GEMM product)."""
    values = list(values)
    readers: dict[int, list] = {}
    for call in calls:
        for i in call.inputs:
            if not isinstance(i, tuple):
                readers.setdefault(i, []).append(call)
    rewritten = []
    for call in calls:
        bias = call.inputs[2] if call.op_name == "linear" and len(call.inputs) == 3 else None
        if (bias is None or isinstance(bias, tuple) or call.special or call.host or call.tensor_forward
                or call.ctx_outputs or not _bias_add_fuses(values[call.output], readers.get(call.output, ()), values)):
            rewritten.append(call)
            continue
        out = values[call.output]
        product = Value(len(values), out.shape, out.dtype, "op")
        add = OpCall(FUNCTIONS["add"], [product.index, bias], {}, call.output)
        values.append(product)
        if not fusion.fusible(add, values):  # the bias does not broadcast to the product, or is not float
            values.pop()
            rewritten.append(call)
            continue
        rewritten.append(OpCall(call.function, [call.inputs[0], call.inputs[1], ("lit", None)], dict(call.attrs),
                                product.index))
        rewritten.append(add)
    return rewritten, values


def hoist_sums(calls: list, values: list) -> list:
    """The calls with each fusible sum moved to just after the call producing its input."""
    producers = {call.output for call in calls}
    moved: dict[int, list] = {}  # input value -> the sums of it, in their order
    for call in calls:
        if fusion.fusible_sum(call, values) and call.inputs[0] in producers:
            moved.setdefault(call.inputs[0], []).append(call)
    hoisted = {id(call) for sums in moved.values() for call in sums}
    ordered: list = []

    def place(call: OpCall) -> None:
        ordered.append(call)
        for later in moved.get(call.output, ()):
            place(later)

    for call in calls:
        if id(call) not in hoisted:
            place(call)
    return ordered


def _is_view(call: OpCall) -> bool:
    """Whether `call` is a registered view op (reshape, permute, expand, getitem, diagonal)."""
    spec = getattr(call.function, "spec", None)
    return spec is not None and spec.view


def pair_products(calls: list, values: list, parts: int) -> list:
    """The calls with each pair of independent 2-D matmuls of at least PAIR_MIN_MACS, the larger
    at most twice the smaller, that only view ops separate (their spec's `view`: transposes, seed
    broadcasts), made one "gemm_pair" call (the views move ahead of it). `parts` is the thread count the program is planned for."""
    if parts < 2:
        return calls
    calls = list(calls)
    i = 0
    while i < len(calls):
        first = calls[i]
        size = direct.product_macs(first, values)
        partner, views = None, []
        for j in range(i + 1, len(calls) if size is not None and size >= PAIR_MIN_MACS else i + 1):
            call = calls[j]
            if first.output in fusion.value_reads(call):
                break
            other = direct.product_macs(call, values)
            if other is not None and other >= PAIR_MIN_MACS and 2 * min(size, other) >= max(size, other):
                partner = call
                break
            if call.special or call.host or not _is_view(call):
                break
            views.append(call)
        if partner is None:
            i += 1
            continue
        pair = OpCall(first.function, [*first.inputs, *partner.inputs],
                      {"second_output": partner.output, "parts": parts}, first.output, special="gemm_pair")
        calls[i:i + len(views) + 2] = views + [pair]
        i += len(views) + 1
    return calls
