"""DLPack: zero-copy exchange with NumPy and torch in both directions, every dtype, the leaf rules."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

import numdiff
from numdiff import _dlpack
from numdiff.utils.dlpack import from_dlpack, to_dlpack

DTYPES = [
    (numdiff.float32, torch.float32),
    (numdiff.float64, torch.float64),
    (numdiff.float16, torch.float16),
    (numdiff.bfloat16, torch.bfloat16),
    (numdiff.int8, torch.int8),
    (numdiff.uint8, torch.uint8),
    (numdiff.int16, torch.int16),
    (numdiff.int32, torch.int32),
    (numdiff.int64, torch.int64),
    (numdiff.bool, torch.bool),
]


@pytest.mark.parametrize(("nd_dtype", "torch_dtype"), DTYPES, ids=lambda d: str(d))
def test_torch_to_numdiff_shares_memory_for_every_dtype(nd_dtype, torch_dtype):
    source = torch.arange(12).reshape(3, 4).to(torch_dtype)
    t = numdiff.from_dlpack(source)
    assert t.dtype is nd_dtype and tuple(t.shape) == (3, 4)
    np.testing.assert_array_equal(t.float().numpy(), source.float().numpy())
    source[1, 2] = 1  # written through torch, seen by numdiff: the memory is shared
    assert t[1, 2].item() == 1


@pytest.mark.parametrize(("nd_dtype", "torch_dtype"), DTYPES, ids=lambda d: str(d))
def test_numdiff_to_torch_shares_memory_for_every_dtype(nd_dtype, torch_dtype):
    t = numdiff.arange(12).reshape(3, 4).to(nd_dtype)
    out = torch.from_dlpack(t)
    assert out.dtype == torch_dtype
    np.testing.assert_array_equal(out.float().numpy(), t.float().numpy())
    out[0, 1] = 0
    assert t[0, 1].item() == 0


def test_strided_views_cross_with_their_strides():
    base = torch.arange(24.0).reshape(4, 6)
    view = base[::2, 1::3].t()
    t = numdiff.from_dlpack(view)
    np.testing.assert_array_equal(t.numpy(), view.numpy())
    back = torch.from_dlpack(numdiff.arange(24.0).reshape(4, 6)[1:, ::2].t())
    np.testing.assert_array_equal(back.numpy(), np.arange(24.0, dtype=np.float32).reshape(4, 6)[1:, ::2].T)


def test_numpy_round_trip_is_zero_copy():
    a = np.zeros((2, 3))
    t = numdiff.from_dlpack(a)
    t[1, 1] = 5.0
    assert a[1, 1] == 5.0
    b = np.from_dlpack(t)
    b[0, 0] = -1.0
    assert t[0, 0].item() == -1.0 and a[0, 0] == -1.0


def test_legacy_capsules_from_to_dlpack_and_torch():
    t = numdiff.tensor([1.0, 2.0, 3.0])
    back = torch.utils.dlpack.from_dlpack(to_dlpack(t))
    back[0] = 10.0
    assert t[0].item() == 10.0
    t2 = from_dlpack(torch.utils.dlpack.to_dlpack(torch.tensor([4, 5])))
    assert t2.tolist() == [4, 5] and t2.dtype is numdiff.int64


def test_zero_dim_and_empty_tensors():
    assert numdiff.from_dlpack(torch.tensor(3.5)).item() == 3.5
    assert torch.from_dlpack(numdiff.tensor(2.5)).item() == 2.5
    assert tuple(numdiff.from_dlpack(torch.zeros(0, 3)).shape) == (0, 3)
    assert tuple(torch.from_dlpack(numdiff.zeros(2, 0)).shape) == (2, 0)


def test_a_tensor_from_dlpack_is_a_leaf_that_obeys_the_leaf_rules():
    t = numdiff.from_dlpack(torch.tensor([1.0, 2.0]))
    assert t.is_leaf and not t.requires_grad and t.grad_fn is None
    t.requires_grad_(True)
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="in-place"):
        t.add_(1.0)  # a leaf that requires grad refuses in-place ops while recording


def test_a_tensor_that_requires_grad_refuses_to_export():
    w = numdiff.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach"):
        w.__dlpack__()
    assert torch.from_dlpack(w.detach()).tolist() == [1.0, 1.0]


def test_copy_true_exports_a_copy():
    t = numdiff.ones(3)
    out = torch.from_dlpack(np.from_dlpack(t, copy=True)) if np.__version__ >= "2.1" else None
    if out is not None:
        out[0] = 0.0
        assert t[0].item() == 1.0
    capsule = t.__dlpack__(copy=True, max_version=(1, 0))
    copy = numdiff.from_dlpack(capsule)
    copy[0] = 7.0
    assert t[0].item() == 1.0


def test_read_only_memory_stays_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = numdiff.from_dlpack(a)
    assert t.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises((ValueError, RuntimeError), match="read-only|writeable"):
        t[0] = 5.0
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a legacy capsule cannot say read-only


def test_memory_is_released_exactly_once():
    before = len(_dlpack._exported)
    t = numdiff.ones(4)
    capsule = t.__dlpack__()
    assert len(_dlpack._exported) == before + 1
    del capsule  # never consumed: the capsule frees what it held
    gc.collect()
    assert len(_dlpack._exported) == before
    view = numdiff.from_dlpack(t.__dlpack__(max_version=(1, 0)))
    assert len(_dlpack._exported) == before + 1
    del view  # consumed: freed when the array made from it goes
    gc.collect()
    assert len(_dlpack._exported) == before


def test_a_capsule_reads_once_and_bad_inputs_are_refused():
    capsule = numdiff.ones(2).__dlpack__()
    numdiff.from_dlpack(capsule)
    with pytest.raises(BufferError, match="already consumed"):
        numdiff.from_dlpack(capsule)
    with pytest.raises(TypeError, match="from_dlpack expects.*list"):
        numdiff.from_dlpack([1, 2])
    with pytest.raises(BufferError, match="DLPack device"):
        numdiff.ones(2).__dlpack__(dl_device=(2, 0))


def test_dtypes_numdiff_lacks_are_refused_by_name():
    with pytest.raises(TypeError, match="uint16"):
        numdiff.from_dlpack(torch.zeros(2, dtype=torch.uint16))
    with pytest.raises(BufferError, match="no numdiff dtype"):
        numdiff.from_dlpack(torch.zeros(2, dtype=torch.complex64))


def test_dlpack_device_is_the_cpu():
    assert numdiff.ones(1).__dlpack_device__() == (1, 0)
