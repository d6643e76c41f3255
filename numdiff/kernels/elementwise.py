"""CPU elementwise kernels generated from the scalar rules (numdiff/ops/scalar_rules.py).

For each rule, `forward` writes ``out = f(x[, y])`` and `backward` writes every requested input
gradient (``g * df/dx``, ``g * df/dy``) in one pass over the broadcast output shape, so an op
costs one read of each operand and one write of each result, with no temporaries.

Kernel variants are generated on first use, one ``@njit(cache=True)`` function per variant, in a
file under numdiff.kernels._codegen.generated_dir(). A variant is chosen by:

- operand layout: an operand with the output's shape read as a flat C-contiguous (or 1-D strided)
  array ``a[i]``; a size-1 or fully broadcast operand (all strides 0, a Python number) read once as
  a scalar; anything else (broadcast along some axes, transposed, sliced in 2+ dims) makes the
  kernel loop over the N-d index instead (``np.ndindex``), reading broadcast views without copies;
- size: above `GRAIN` elements the loop is a ``prange`` (over the elements, or the first axis of
  the N-d loop); below it the kernel stays serial and never opens a parallel region, as PyTorch's
  grain of 32768.

Loop nest: ``for i in range(n): out[i] = expr(a_x[i], a_y)``; extra memory: none.
"""

from __future__ import annotations

import numpy as np
from numba.core.dispatcher import Dispatcher

from numdiff.kernels._codegen import backward_reads, load_source, scalar_code, vjp_expressions
from numdiff.ops.scalar_rules import RULES, ScalarRule

# Work below this many elements runs serially (PyTorch's grain size).
GRAIN = 32768

# (rule, kind, needed inputs, operand pattern, "flat"/"nd", parallel) -> the compiled dispatcher.
# The generated modules are named numdiff_generated.*; numdiff.jit lists them through this table.
KERNELS: dict[tuple, Dispatcher] = {}

_HEADER = "import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n\n"


def _loop_source(
    results: list[str], expressions: list[str], operands: tuple[str, ...], pattern: str,
    attr_names: tuple[str, ...], layout: str, parallel: bool,
) -> str:
    """The source of one kernel: ``kernel(r_0[, r_1], a_<operand>..., <attrs>)``."""
    arrays = [name for name, kind in zip(operands, pattern) if kind == "A"]
    reads = {name: f"v_{name}" for name in operands}
    params = ", ".join([*results, *[f"a_{n}" for n in operands], *attr_names])
    loop = "prange" if parallel else "range"
    # error_model="numpy": x / 0 is inf or NaN, as in NumPy, instead of raising ZeroDivisionError.
    options = ", parallel=True" if parallel else ""
    lines = [f"@njit(cache=True, error_model=\"numpy\"{options})", f"def kernel({params}):"]
    lines += [f"    v_{name} = a_{name}" for name, kind in zip(operands, pattern) if kind == "S"]
    if layout == "flat":
        lines.append(f"    for i in {loop}({results[0]}.size):")
        body, index = "        ", "[i]"
        sources = {name: f"a_{name}" for name in arrays}
        targets = results
    elif not parallel:
        lines.append(f"    for idx in np.ndindex({results[0]}.shape):")
        body, index = "        ", "[idx]"
        sources = {name: f"a_{name}" for name in arrays}
        targets = results
    else:
        lines.append(f"    for i in prange({results[0]}.shape[0]):")
        lines += [f"        s_{r} = {r}[i]" for r in results]
        lines += [f"        s_{name} = a_{name}[i]" for name in arrays]
        lines.append(f"        for idx in np.ndindex(s_{results[0]}.shape):")
        body, index = "            ", "[idx]"
        sources = {name: f"s_{name}" for name in arrays}
        targets = [f"s_{r}" for r in results]
    lines += [f"{body}v_{name} = {sources[name]}{index}" for name in arrays]
    for target, expression in zip(targets, expressions):
        lines.append(f"{body}{target}{index} = {scalar_code(expression, reads)}")
    return _HEADER + "\n".join(lines) + "\n"


def _kernel(rule: ScalarRule, kind: str, needed: tuple[int, ...], pattern: str, layout: str, parallel: bool):
    key = (rule.name, kind, needed, pattern, layout, parallel)
    kernel = KERNELS.get(key)
    if kernel is None:
        if kind == "forward":
            results, expressions, operands = ["r_0"], [rule.forward], rule.inputs
        else:
            expressions = vjp_expressions(rule, needed)
            results = [f"r_{i}" for i in range(len(needed))]
            operands = backward_reads(rule, needed)
        source = _loop_source(results, expressions, operands, pattern, rule.attr_names, layout, parallel)
        stem = f"{rule.name}_{kind}{''.join(map(str, needed))}_{pattern}_{layout}{'_par' if parallel else ''}"
        kernel = KERNELS[key] = load_source(stem, source).kernel
    return kernel


def _operands(values: list, shape: tuple[int, ...], dtype: np.dtype) -> tuple[str, list, str]:
    """(pattern, kernel arguments, layout) for operands broadcast to `shape`."""
    pattern = []
    flat = []
    for value in values:
        if type(value) is not np.ndarray:  # a Python number
            pattern.append("S")
            flat.append(dtype.type(value))
        elif value.shape == shape and (value.flags.c_contiguous or value.ndim == 1):
            pattern.append("A")
            flat.append(value.reshape(-1) if value.ndim != 1 else value)
        elif value.size == 1 or (value.shape == shape and not any(value.strides)):
            pattern.append("S")
            flat.append(value[(0,) * value.ndim] if value.ndim else value[()])
        else:
            pattern.append(None)
            flat.append(None)
    if None not in pattern:
        return "".join(pattern), flat, "flat"
    nd_pattern = "".join(p or "A" for p in pattern)
    nd = [np.broadcast_to(v, shape) if p != "S" else f for v, p, f in zip(values, pattern, flat)]
    return nd_pattern, nd, "nd"


def _launch(rule, kind, needed, results, values, shape, dtype, attrs) -> None:
    pattern, arguments, layout = _operands(values, shape, dtype)
    size = results[0].size
    if layout == "flat":
        outs = [r.reshape(-1) for r in results]
        parallel = size > GRAIN
    else:
        outs = list(results)
        parallel = size > GRAIN and len(shape) >= 2 and shape[0] > 1
    kernel = _kernel(rule, kind, needed, pattern, layout, parallel)
    kernel(*outs, *arguments, *attrs)


def forward(rule: ScalarRule, inputs: tuple, attrs: tuple, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """``rule.forward`` over `inputs` (float arrays of `dtype` and Python numbers) broadcast to `shape`.

    >>> forward(RULES["relu"], (np.array([-1.0, 2.0]),), (), (2,), np.dtype("float64"))
    array([0., 2.])
    """
    out = np.empty(shape, dtype)
    if out.size:
        x = inputs[0]
        if len(inputs) == 1 and x.flags.c_contiguous:  # the common case, with the least Python
            kernel = _kernel(rule, "forward", (), "A", "flat", out.size > GRAIN)
            kernel(out.reshape(-1), x.reshape(-1), *attrs)
        else:
            _launch(rule, "forward", (), [out], list(inputs), shape, dtype, attrs)
    return out


def backward(rule: ScalarRule, needed: tuple[int, ...], values: dict, attrs: tuple) -> list[np.ndarray]:
    """The gradients of the inputs in `needed`, in the output's shape, from one pass.

    `values` maps ``g`` (the output gradient) and the saved ``x``/``y``/``out`` to arrays or numbers.

    >>> backward(RULES["mul"], (0, 1), {"g": np.ones(2), "x": np.array([2.0, 3.0]), "y": 4.0}, ())
    [array([4., 4.]), array([2., 3.])]
    """
    g = values["g"]
    shape, dtype = g.shape, g.dtype
    results = [np.empty(shape, dtype) for _ in needed]
    if g.size:
        operands = backward_reads(rule, needed)
        _launch(rule, "backward", needed, results, [values[name] for name in operands], shape, dtype, attrs)
    return results


# What numdiff.warmup compiles ahead: the rules a typical training step calls.
WARMUP_RULES = ("relu", "mul", "div", "sigmoid", "tanh")


def warm(name: str, dtype: np.dtype) -> None:
    """Compile (or load) rule `name`'s contiguous forward and all-inputs backward for `dtype`."""
    rule = RULES[name]
    inputs = tuple(np.ones(2, dtype) for _ in rule.inputs)
    attrs = tuple(default for _, default in rule.attrs)
    out = forward(rule, inputs, attrs, (2,), np.dtype(dtype))
    values = {"g": np.ones(2, dtype), "out": out, **dict(zip(rule.inputs, inputs))}
    backward(rule, tuple(range(rule.arity)), values, attrs)


__all__ = ["GRAIN", "KERNELS", "RULES", "WARMUP_RULES", "backward", "forward", "warm"]
