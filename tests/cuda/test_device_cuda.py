"""The CUDA device model: moves, device queries, and the errors for mixing or missing devices."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.cuda
from numdiff.cuda.array import CudaArray, HostConversionError
from numdiff.ops._util import DeviceMismatchError


def test_tensor_on_cuda_keeps_values_dtype_and_reports_its_device():
    t = numdiff.tensor([[1.5, -2.0], [3.0, 4.0]], dtype=numdiff.float64, device="cuda")
    assert isinstance(t._data, CudaArray)
    assert t.device == numdiff.device("cuda:0") and t.is_cuda
    assert t.dtype is numdiff.float64
    np.testing.assert_array_equal(t.cpu().numpy(), [[1.5, -2.0], [3.0, 4.0]])


def test_to_cuda_and_back_carries_gradient_to_the_cpu_leaf():
    x = numdiff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x.cuda() * x.cuda()).sum()
    assert y.device.type == "cuda"
    y.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_mixing_cpu_and_cuda_tensors_raises_device_mismatch_naming_both():
    a = numdiff.ones(3, device="cuda")
    b = numdiff.ones(3)
    with pytest.raises(DeviceMismatchError, match="cpu and cuda:0"):
        a + b
    with pytest.raises(DeviceMismatchError, match="cpu and cuda:0"):
        numdiff.cat([a, b])
    with pytest.raises(DeviceMismatchError, match="cpu and cuda:0"):
        numdiff.where(a > 0, a, b)


def test_cuda_unavailable_raises_with_install_hint(monkeypatch):
    monkeypatch.setattr(numdiff.cuda, "is_available", lambda: False)
    with pytest.raises(numdiff.cuda.CudaUnavailableError, match=r"pip install numdiff\[cuda\]"):
        numdiff.zeros(2, device="cuda")
    with pytest.raises(numdiff.cuda.CudaUnavailableError, match="not available"):
        numdiff.tensor([1.0]).cuda()
    assert numdiff.cuda.device_count() == 0


def test_missing_device_index_is_refused_with_the_count():
    count = numdiff.cuda.device_count()
    with pytest.raises(numdiff.cuda.CudaUnavailableError, match=f"{count} CUDA device"):
        numdiff.zeros(2, device=f"cuda:{count}")


def test_device_queries_and_synchronize():
    assert numdiff.cuda.device_count() >= 1
    assert numdiff.cuda.current_device() == 0
    numdiff.cuda.synchronize()
    numdiff.cuda.synchronize("cuda:0")


def test_manual_seed_makes_cuda_random_tensors_repeat():
    numdiff.cuda.manual_seed(3)
    first = numdiff.randn(4, device="cuda").cpu().numpy()
    numdiff.cuda.manual_seed(3)
    np.testing.assert_array_equal(numdiff.randn(4, device="cuda").cpu().numpy(), first)


def test_host_conversion_of_a_device_array_is_refused_loudly():
    t = numdiff.ones(2, device="cuda")
    with pytest.raises(HostConversionError, match="to_host"):
        np.asarray(t._data)


def test_host_array_in_a_device_ufunc_is_refused():
    t = numdiff.ones(3, device="cuda")
    with pytest.raises(TypeError, match="host value"):
        np.add(t._data, np.ones(3))


def _on_second_gpu(t: numdiff.Tensor) -> numdiff.Tensor:
    """`t`'s storage relabelled as cuda:1: the simulator has one GPU, and only the label is compared."""
    data = t._data
    moved = CudaArray(data._buffer, data.shape, data._strides, data._offset, numdiff.device("cuda", 1))
    return numdiff.Tensor._wrap(moved, None, None)


def test_tensors_on_two_gpus_raise_device_mismatch_naming_both():
    a = numdiff.ones(3, device="cuda")
    b = _on_second_gpu(numdiff.ones(3, device="cuda"))
    assert b.device == numdiff.device("cuda:1")
    m = numdiff.ones(3, 3, device="cuda")
    x = numdiff.ones(1, 1, 4, 4, device="cuda")
    w = _on_second_gpu(numdiff.ones(1, 1, 3, 3, device="cuda"))
    for op in (
        lambda: a + b,
        lambda: b * a,
        lambda: numdiff.cat([a, b]),
        lambda: numdiff.where(a > 0, a, b),
        lambda: numdiff.matmul(m, b),
        lambda: numdiff.nn.functional.conv2d(x, w),
    ):
        with pytest.raises(DeviceMismatchError, match="cuda:0 and cuda:1"):
            op()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_runs_in_float32_under_cuda_autocast_as_torch(name):
    """PyTorch's CUDA autocast computes softmax and log_softmax in float32 and returns float32 (its
    float32 list); numdiff computed them in float32 but rounded the result back to float16."""
    x = numdiff.randn(2, 5, device="cuda").half()
    with numdiff.autocast("cuda"):
        y = getattr(numdiff, name)(x, -1)
    assert y.dtype == numdiff.float32
    want = getattr(numdiff, name)(x.float(), -1)
    np.testing.assert_allclose(y.cpu().numpy(), want.cpu().numpy(), rtol=1e-6, atol=1e-7)
    assert getattr(numdiff, name)(x, -1).dtype == numdiff.float16  # outside autocast: half, as torch
