"""The backend seam: the CUDA backend has exactly the CPU backend's kernels, with the same
parameters, and each CUDA launcher the seam reaches agrees with its CPU twin on tiny inputs."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from numdiff._device import device
from numdiff.backend import CPU, CUDA, backend_for
from numdiff.cuda.array import CudaArray
from numdiff.ops.registry import SPECS


def _parameters(launcher) -> list[tuple[str, object, object]]:
    """Names, kinds and defaults: what a caller relies on (annotations name each device's array type)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(launcher).parameters.values()]


def test_cuda_backend_lists_the_same_kernels_as_the_cpu_backend():
    cpu, cuda = set(CPU.kernel_names()), set(CUDA.kernel_names())
    assert cpu - cuda == set(), f"kernels with no CUDA launcher: {sorted(cpu - cuda)}"
    assert cuda - cpu == set(), f"CUDA kernels with no CPU launcher: {sorted(cuda - cpu)}"


@pytest.mark.parametrize("kernel", sorted(CPU.kernel_names()))
def test_each_kernel_resolves_on_both_devices_with_the_same_parameters(kernel):
    cpu, cuda = CPU.kernels()[kernel], CUDA.kernels()[kernel]
    assert callable(cpu) and callable(cuda)
    assert CUDA.module_of(kernel).startswith("numdiff.cuda."), CUDA.module_of(kernel)
    assert not CPU.module_of(kernel).startswith("numdiff.cuda"), CPU.module_of(kernel)
    assert _parameters(cpu) == _parameters(cuda), (
        f"{kernel}: cpu {inspect.signature(cpu)} vs cuda {inspect.signature(cuda)}"
    )


@pytest.mark.parametrize("op", sorted(name for name, spec in SPECS.items() if spec.launchers))
def test_the_launchers_each_op_spec_names_match_on_both_devices(op):
    for kernel in SPECS[op].launchers:
        cpu, cuda = getattr(CPU, kernel), getattr(CUDA, kernel)
        assert _parameters(cpu) == _parameters(cuda), (
            f"{op} runs {kernel}: cpu {inspect.signature(cpu)} vs cuda {inspect.signature(cuda)}"
        )


def test_backend_for_a_cuda_array_is_the_cuda_backend_and_moves_arrays():
    host = np.arange(3.0)
    array = CudaArray.from_numpy(host, device("cuda"))
    backend = backend_for(array)
    assert backend is CUDA
    assert backend.device_of(array) == device("cuda")
    np.testing.assert_array_equal(backend.to_host(array), host)
    moved = backend.from_host(np.ones(2), like=array)
    assert type(moved) is CudaArray
    np.testing.assert_array_equal(moved.to_host(), np.ones(2))


@pytest.mark.parametrize(
    "kernel, arrays, h, f",
    [
        ("sgd_update", 3, (0.1, 0.9, 0.0, 0.01), (True, False, False)),
        ("adam_update", 5, (0.1, 0.9, 0.999, 1e-8, 0.01, 0.1 / 0.1, (1 - 0.999) ** 0.5, 0.1, 0.001, 0.999),
         (True, True, False)),
        ("rmsprop_update", 5, (0.01, 0.99, 1e-8, 0.0, 0.9), (True, False)),
        ("adagrad_update", 3, (0.1, 1e-10, 0.0), (False,)),
    ],
)
def test_cuda_optimizer_launchers_match_the_cpu_ones(kernel, arrays, h, f):
    rng = np.random.default_rng(3)
    # param and grad drawn, state buffers from zero, as an optimizer's first step has them.
    host = [rng.uniform(0.1, 1.0, 5), rng.uniform(-1.0, 1.0, 5)] + [np.zeros(5) for _ in range(arrays - 2)]
    on_gpu = [CudaArray.from_numpy(a, device("cuda")) for a in host]
    getattr(CPU, kernel)(*host, h, f)
    getattr(CUDA, kernel)(*on_gpu, h, f)
    for expected, got in zip(host, on_gpu):
        np.testing.assert_allclose(got.to_host(), expected, rtol=1e-12)


def test_cuda_erf_matches_the_cpu_one():
    # erf is a scalar rule: both devices run the rule's generated kernel through numdiff.erf.
    import numdiff

    x = np.linspace(-2.0, 2.0, 7)
    got = numdiff.erf(numdiff.tensor(x, device="cuda")).cpu().numpy()
    np.testing.assert_allclose(got, numdiff.erf(numdiff.tensor(x)).numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "shape, key",
    [((6, 3), (np.array([0, 5, -1, 2, 2]),)), ((4, 3, 2), (np.array([1, 3, 1]), np.array([0, 2, -1])))],
)
def test_cuda_add_at_matches_the_cpu_one(shape, key):
    rng = np.random.default_rng(5)
    host = rng.standard_normal(shape)
    values = rng.standard_normal(host[key].shape)
    on_gpu = CudaArray.from_numpy(host, device("cuda"))
    CPU.add_at(host, key, values)
    CUDA.add_at(on_gpu, key, CudaArray.from_numpy(values, device("cuda")))
    np.testing.assert_allclose(on_gpu.to_host(), host, rtol=1e-12)


@pytest.mark.parametrize("shape, dims", [((3, 4, 2, 5, 2), (2, 4)), ((2, 3, 4), (0, 2)), ((5, 6), (1,))])
def test_cuda_sum_dims_matches_the_cpu_one(shape, dims):
    host = np.random.default_rng(6).standard_normal(shape)
    kept = tuple(1 if axis in dims else n for axis, n in enumerate(shape))
    expected = np.empty(kept)
    CPU.sum_dims(host, dims, expected)
    out = CudaArray.from_numpy(np.zeros(kept), device("cuda"))
    CUDA.sum_dims(CudaArray.from_numpy(host, device("cuda")), dims, out)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="sum_dims: out has shape"):
        CUDA.sum_dims(CudaArray.from_numpy(host, device("cuda")), dims, CudaArray.from_numpy(host, device("cuda")))
