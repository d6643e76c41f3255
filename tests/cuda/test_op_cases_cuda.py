"""The op case table on device="cuda": forward and gradients equal the CPU backend's.

Each case from tests/ops runs twice from the same inputs, once on the CPU and once with every
tensor moved to CUDA; outputs must match (float64 to 1e-9), and so must the gradients of
sum(out * w) for a fixed random w, which exercises every backward on the device too. The kernel
ops (matmul, conv, pooling) also run in float32 (1e-4) and through double backward
(create_graph=True), which reaches the backward of every backward op on the device.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.cuda.array import CudaArray
from numdiff.ops._util import DeviceMismatchError
from tests.ops.op_cases import all_cases, case_rng, to_tensors

CASES = all_cases()


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _on_cuda(tensors: tuple) -> tuple:
    moved = []
    for t in tensors:
        if isinstance(t, numdiff.Tensor):
            c = t.detach().to("cuda")
            c.requires_grad_(t.requires_grad)
            moved.append(c)
        else:
            moved.append(t)
    return tuple(moved)


def _run(case, tensors: tuple, rng: np.random.Generator) -> tuple[list, list]:
    outputs = _as_tuple(case.fn(*tensors))
    loss = None
    for out in outputs:
        if out.requires_grad:
            weight = numdiff.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype).to(out.device)
            term = (out * weight).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    values = [out.detach().cpu().numpy() for out in outputs]
    grads = [
        t.grad.cpu().numpy() if t.grad is not None else None
        for t in tensors
        if isinstance(t, numdiff.Tensor) and t.requires_grad
    ]
    return values, grads


def _check(case, dtype, rtol: float, atol: float) -> None:
    arguments = case.inputs(case_rng(case))
    cpu = to_tensors(arguments)
    if dtype is not None:
        cpu = tuple(
            t.detach().to(dtype).requires_grad_(t.requires_grad)
            if isinstance(t, numdiff.Tensor) and t.is_floating_point()
            else t
            for t in cpu
        )
    gpu = _on_cuda(cpu)
    expected_values, expected_grads = _run(case, cpu, np.random.default_rng(7))
    values, grads = _run(case, gpu, np.random.default_rng(7))
    if case.op != "to_device":
        for t in _as_tuple(case.fn(*gpu)):
            assert isinstance(t._data, CudaArray), "the result left the device"
    for got, want in zip(values, expected_values):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    for got, want in zip(grads, expected_grads):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# Cases whose fn builds a CPU tensor itself (a mask): on CUDA inputs they must refuse to mix devices.
MIXES_DEVICES = {"composite-masked_fill"}


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in MIXES_DEVICES], ids=lambda c: c.id)
def test_float64_forward_and_gradients_match_cpu(case):
    _check(case, None, 1e-9, 1e-9)


@pytest.mark.parametrize("case", [c for c in CASES if c.id in MIXES_DEVICES], ids=lambda c: c.id)
def test_cpu_tensor_built_inside_op_raises_device_mismatch(case):
    gpu = _on_cuda(to_tensors(case.inputs(case_rng(case))))
    with pytest.raises(DeviceMismatchError, match="cpu and cuda:0"):
        case.fn(*gpu)


KERNEL_OPS = {
    "matmul",
    "conv2d",
    "conv_transpose2d",
    "conv2d_weight_grad",
    "max_pool2d",
    "adaptive_max_pool2d",
    "max_pool_scatter",
    "max_pool_gather",
    "avg_pool2d",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
}


def _input_elements(case) -> int:
    return sum(np.size(a) for a in case.inputs(case_rng(case)) if isinstance(a, np.ndarray))


# The smallest case of each kernel op (by input elements), to keep the simulator's time down.
KERNEL_CASES = [
    min((c for c in CASES if c.op == op), key=_input_elements)
    for op in sorted(KERNEL_OPS)
    if any(c.op == op for c in CASES)
]
FLOAT32_OPS = {
    "add",
    "mul",
    "div",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "sum",
    "amax",
    "gather",
    "getitem",
    "relu",
    "gelu",
}


@pytest.mark.parametrize("case", [c for c in CASES if c.op in FLOAT32_OPS] + KERNEL_CASES, ids=lambda c: c.id)
def test_float32_forward_and_gradients_match_cpu(case):
    _check(case, numdiff.float32, 1e-4, 1e-4)


def _double_backward(case, tensors: tuple, rng: np.random.Generator) -> list:
    """First gradients of sum(out * w) with create_graph=True, then the gradients of
    sum(grads * v) with respect to the inputs and to w (so the backward ops are differentiated)."""
    outputs = _as_tuple(case.fn(*tensors))
    inputs = [t for t in tensors if isinstance(t, numdiff.Tensor) and t.requires_grad]
    weights, loss = [], None
    for out in outputs:
        if out.requires_grad:
            w = numdiff.tensor(rng.standard_normal(tuple(out.shape)), dtype=out.dtype).to(out.device)
            weights.append(w.requires_grad_())
            term = (out * w).sum()
            loss = term if loss is None else loss + term
    grads = numdiff.autograd.grad(loss, inputs, create_graph=True, allow_unused=True)
    second = None
    for g in grads:
        if g is not None and g.requires_grad:
            v = numdiff.tensor(rng.standard_normal(tuple(g.shape)), dtype=g.dtype).to(g.device)
            term = (g * v).sum()
            second = term if second is None else second + term
    second.backward()
    leaves = inputs + weights
    return [g.detach().cpu().numpy() for g in grads if g is not None] + [
        t.grad.cpu().numpy() if t.grad is not None else None for t in leaves
    ]


@pytest.mark.parametrize("case", [c for c in KERNEL_CASES if c.second_order], ids=lambda c: c.id)
def test_double_backward_on_cuda_matches_cpu(case):
    cpu = to_tensors(case.inputs(case_rng(case)))
    expected = _double_backward(case, cpu, np.random.default_rng(8))
    got = _double_backward(case, _on_cuda(cpu), np.random.default_rng(8))
    assert len(got) == len(expected)
    for g, want in zip(got, expected):
        assert (g is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-9)
