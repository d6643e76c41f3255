"""Fused elementwise groups on a CUDA device: one generated ``@cuda.jit`` grid-stride kernel each.

The same groups and scalar expressions as the CPU loops (fusion.py); each thread walks C-order
positions of the group's shape and reads and writes every operand through its own ``meta``
(offset and strides, 0 where broadcast), as numdiff's CUDA map kernels do
(numdiff/cuda/kernels/elementwise.py), so broadcast and strided operands need no copy. Every
value read after the group gets its own output array. Sums and inlined broadcasts are not fused
on the device.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import numpy as np

from numdiff.compile.codegen import Emitter


def _special() -> ModuleType:
    """numdiff.kernels._special, imported for real on first use (see compile.group_kernel._vecmath)."""
    return importlib.import_module("numdiff.kernels._special")


HEADER = "from numba import cuda\nfrom numdiff.cuda.kernels._index import strided_offset\n"


def emit_cuda_group(emitter: Emitter, calls: list, values: list, stored: list, kernels: list,
                    expression_of: Any) -> None:
    """Append a kernel for `calls` to `kernels` and its launch to `emitter`; `stored` are the
    values read after the group (each written to a new device array)."""
    external: list[int] = []
    names: dict[int, str] = {}
    body: list[str] = []
    for call in calls:
        operands = []
        for i in call.inputs:
            if isinstance(i, tuple):
                operands.append(repr(float(i[1])) if not isinstance(i[1], bool) else repr(i[1]))
            elif i in names:
                operands.append(names[i])
            else:
                external.append(i)
                k = len(external) - 1
                names[i] = f"a{k}[strided_offset(i, shape, m{k})]"
                operands.append(names[i])
        body.append(f"t{call.output} = {_device_special(expression_of(call, operands))}")
        names[call.output] = f"t{call.output}"
    body += [f"o{k}[strided_offset(i, shape, q{k})] = t{value}" for k, value in enumerate(stored)]
    kernel = f"cuda_fused_{len(kernels)}"
    params = ["shape", "n"] + [f"a{k}, m{k}" for k in range(len(external))]
    params += [f"o{k}, q{k}" for k in range(len(stored))]
    lines = ["@cuda.jit", f"def {kernel}({', '.join(params)}):",
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):"]
    lines += ["        " + line for line in body]
    kernels.append("\n".join(lines))
    shape = values[stored[0]].shape
    for value in stored:
        emitter.lines.append(
            f"v{value} = CudaArray.empty({shape!r}, {values[value].dtype.name!r}, v{external[0]}.device)"
        )
    inputs = ", ".join(f"v{i}" for i in external)
    outputs = ", ".join(f"v{v}" for v in stored)
    emitter.lines.append(f"launch_cuda_fused({kernel}, ({inputs},), ({outputs},))")


def launch_cuda_fused(kernel: Any, inputs: tuple, outputs: tuple) -> None:
    """Launch a generated kernel over the first output's shape (grid as numdiff's map kernels)."""
    from numdiff.cuda.kernels._index import grid_1d

    first = outputs[0]
    if first.size == 0:
        return
    args: list = [first.shape_vector(), first.size]
    for array in inputs + outputs:
        args += [array._buffer, array.meta(first.shape)]
    blocks, threads = grid_1d(first.size)
    kernel[blocks, threads](*args)


def _device_special(source: str) -> str:
    """``math.digamma(`` -> ``m_digamma(``: the functions math lacks (numdiff.kernels._special) are
    numdiff.cuda.kernels._scalar_math's device functions, put in the namespace by `cuda_namespace`."""
    for name in _special().FUNCTIONS:
        source = source.replace(f"math.{name}(", f"m_{name}(")
    return source


def cuda_namespace() -> dict:
    from numdiff.cuda.array import CudaArray
    from numdiff.cuda.kernels import _scalar_math

    special = {f"m_{name}": getattr(_scalar_math, name) for name in _special().FUNCTIONS}
    return {"CudaArray": CudaArray, "launch_cuda_fused": launch_cuda_fused, "np": np, **special}
