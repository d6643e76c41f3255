"""A compiled program: the generated forward and backward of one trace, loaded from a source file.

The source is written under Numba's cache folder (``NUMBA_CACHE_DIR``, else numdiff's folder in
the user cache), named by its hash, and imported from there. Its fused CPU kernels live in files of
their own, one per distinct kernel text (`load_kernels`), so their ``@njit(cache=True)`` code is
loaded from disk by a later process, or a later program, that needs the same kernel.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from numdiff._lazy import lazy_module
from numdiff._threads import get_num_threads
from numdiff.compile import cuda_fusion, fusion, norm_fold, schedule, slice_join
from numdiff.compile.codegen import Emitter, attr_refs, base_namespace, needed_calls
from numdiff.compile.graph import Graph
from numdiff.compile.trace import Tracer

_codegen = lazy_module("numdiff.kernels._codegen")


def cache_folder() -> Path:
    """Where generated sources go: under Numba's cache folder, so cache=True keeps their kernels."""
    from numba.core import config

    root = config.CACHE_DIR or os.path.join(os.path.expanduser("~"), ".cache", "numdiff")
    path = Path(root) / "numdiff_compile"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Program:
    """The generated pair for one trace; `source` is the code as written to `path`."""

    source: str
    path: Path
    forward: Any
    backward: Any
    graph: Graph
    backward_graph: Graph
    saved: list  # forward values the backward reads, in the order forward returns them
    grad_results: list  # per differentiable input: a value index, or None
    saved_inputs: list  # (value index, input slot or captured slot, kind) of saved region inputs
    kernel_sources: list = field(default_factory=list)  # the fused CPU kernels, each in a file of its own


def _reads(call: Any) -> list:
    reads = [i for i in call.inputs if not isinstance(i, tuple)]
    return reads + attr_refs(call)


def build(tracer: Tracer, outputs: list, grad_results: list, cuda: bool = False) -> Program:
    """Generate, write and load the forward and backward functions of a finished trace.

    `cuda` is True for a graph on a CUDA device: fused groups become @cuda.jit kernels.
    """
    values = tracer.forward.values
    tracer.forward.outputs = list(outputs)
    namespace = base_namespace()
    backward_calls, backward_reads = needed_calls(tracer.backward, {g for g in grad_results if g is not None})
    produced_backward = {c.output for c in backward_calls}
    saved = sorted(
        i for i in backward_reads
        if i not in produced_backward and values[i].kind in ("input", "captured", "op", "ctx")
    )
    forward_calls, _ = needed_calls(tracer.forward, set(outputs) | set(saved))

    kernels: list[str] = []
    fwd = Emitter("forward", namespace)
    fwd.direct = not cuda
    fwd_produced = {c.output for c in forward_calls} | {v for c in forward_calls for v in c.ctx_outputs.values()}
    for index in sorted(set(saved) | set(outputs) | {r for c in forward_calls for r in _reads(c)}):
        if index in fwd_produced:
            continue
        fwd.lines.append(_load_line(values[index], tracer, fwd))
    live_after = set(outputs) | set(saved)
    forward_values = values
    if not cuda:  # fused CUDA groups take no sums, and CUDA graphs call no direct kernels
        forward_calls, forward_values = schedule.split_linear_bias(schedule.hoist_scalars(forward_calls, values),
                                                                   values)
        forward_calls = schedule.pair_products(schedule.hoist_sums(forward_calls, forward_values),
                                               forward_values, get_num_threads())
        forward_calls = norm_fold.fold_norms(forward_calls, forward_values, live_after)
        backward_calls = slice_join.join_slice_grads(backward_calls, values,
                                                     {g for g in grad_results if g is not None})
        backward_calls = schedule.pair_products(schedule.hoist_sums(backward_calls, values), values,
                                                get_num_threads())
    fusion.emit_calls(fwd, forward_calls, forward_values, live_after, kernels, check_shapes=True, cuda=cuda)
    # Buffers holding saved rows travel too, so fused backward groups take one buffer argument.
    saved_buffers = sorted({fwd.packed[i][0] for i in saved if i in fwd.packed})
    returned = "".join(f"v{i}, " for i in saved) + "".join(f"{b}, " for b in saved_buffers)
    fwd.lines.append(f"return ({''.join(f'v{i}, ' for i in outputs)}), ({returned})")

    bwd = Emitter("backward", namespace)
    bwd.direct = not cuda
    for position, index in enumerate(saved):
        bwd.lines.append(f"v{index} = saved[{position}]")
    for position, buffer in enumerate(saved_buffers, start=len(saved)):
        bwd.lines.append(f"{buffer} = saved[{position}]")
    bwd.packed = {i: fwd.packed[i] for i in saved if i in fwd.packed}
    bwd.available_buffers = set(saved_buffers)
    for index in sorted(backward_reads - set(saved) - produced_backward):
        bwd.lines.append(_load_line(values[index], tracer, bwd))
    fusion.emit_calls(bwd, backward_calls, values, {g for g in grad_results if g is not None}, kernels,
                      check_shapes=False, cuda=cuda)
    results = "".join(("None" if g is None else f"v{g}") + ", " for g in grad_results)
    bwd.lines.append(f"return ({results})")
    for emitter in (fwd, bwd):
        for dtype in sorted(emitter.blas_dtypes, key=str):  # the direct calls skip their launchers, which do this
            emitter.lines.insert(0, f"prepare_blas({emitter.ref(dtype, 'dtype')})")

    header = "# Generated by numdiff.compile: the forward and backward of one traced graph.\n" + KERNEL_HEADER
    kernel_sources: list[str] = []
    if cuda:
        header += cuda_fusion.HEADER
        namespace.update(cuda_fusion.cuda_namespace())
    else:
        namespace.update(load_kernels(kernels))
        kernel_sources, kernels = kernels, []
    header += "\n\n"
    source = header + "\n\n".join(kernels + [fwd.source("inputs, captured"), bwd.source("saved, grads")])
    module, path = _load(source)
    module.__dict__.update(namespace)
    saved_inputs = [(i, values[i].slot, values[i].kind) for i in saved if values[i].kind in ("input", "captured")]
    return Program(source, path, module.forward, module.backward, tracer.forward, tracer.backward,
                   saved, grad_results, saved_inputs, kernel_sources)


KERNEL_HEADER = (
    "import math\n\nimport numpy as np\n\nfrom numdiff.kernels import _vecmath\n"
    "from numba import prange\n\nfrom numdiff.kernels._self_healing_cache import njit\n"
)
_KERNEL_NAME = re.compile(r"^def (fused_[0-9a-f]+)\(", re.MULTILINE)


def load_kernels(kernels: list[str]) -> dict[str, Any]:
    """The fused CPU kernels of a program by name, each loaded from a module of its own.

    A kernel's file is named by its text (numdiff.kernels._codegen.load_source), which names no
    value of the graph and takes loop sizes as arguments (numdiff.compile.group_kernel), so a
    kernel compiled for one program is loaded from Numba's disk cache by every later program with
    the same group: the next model, or this one retraced at another batch size.
    """
    found = {}
    for source in kernels:
        name = _KERNEL_NAME.findall(source)[-1]
        found[name] = getattr(_codegen.load_source("fused", KERNEL_HEADER + "\n\n" + source), name)
    return found


def _load_line(value: Any, tracer: Tracer, emitter: Emitter) -> str:
    if value.kind == "input":
        return f"{value.name} = inputs[{value.slot}]"
    if value.kind == "captured":
        return f"{value.name} = captured[{value.slot}]"
    if value.kind == "grad":
        return f"{value.name} = grads[{value.slot}]"
    return f"{value.name} = {emitter.ref(tracer.constants[value.index], 'K')}"


def _load(source: str) -> tuple[ModuleType, Path]:
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    name = f"numdiff_compiled_{digest}"
    path = cache_folder() / f"{name}.py"
    # Rewriting an identical file would change its timestamp and invalidate Numba's disk cache.
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(source, encoding="utf-8")
        os.replace(temporary, path)
    # A fresh module per program: two traces with one source may bake different constants.
    # Numba resolves a cached kernel's module by name (the same in every process), so the latest
    # module of that name is registered in sys.modules; the kernels in it read no other globals.
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path
