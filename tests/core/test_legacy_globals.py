"""Global settings older PyTorch programs call: set_default_tensor_type (by class or by name),
set_warn_always / is_warn_always_enabled, and numdiff.default_generator / numdiff.newaxis, as
PyTorch's."""

from __future__ import annotations

import pytest
import torch

import numdiff


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    yield
    numdiff.set_default_dtype(numdiff.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", ["DoubleTensor", "FloatTensor", "HalfTensor"])
def test_set_default_tensor_type_sets_the_default_dtype_as_pytorch(name):
    for lib in (numdiff, torch):
        lib.set_default_tensor_type(getattr(lib, name))
    assert str(numdiff.get_default_dtype()).split(".")[1] == str(torch.get_default_dtype()).split(".")[1]
    numdiff.set_default_tensor_type(f"torch.{name}")
    assert numdiff.tensor([1.0]).dtype.name == str(torch.tensor([1.0]).dtype).split(".")[1]


def test_set_default_tensor_type_refuses_integer_types_and_non_types():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type, got 'LongTensor'"):
        numdiff.set_default_tensor_type(numdiff.LongTensor)
    with pytest.raises(TypeError, match="invalid type 'torch.NoSuchTensor'"):
        numdiff.set_default_tensor_type("torch.NoSuchTensor")
    with pytest.raises(TypeError, match="expected a tensor type"):
        numdiff.set_default_tensor_type(3)


def test_warn_always_flag_generator_and_newaxis():
    assert numdiff.is_warn_always_enabled() is False
    numdiff.set_warn_always(True)
    assert numdiff.is_warn_always_enabled() is True
    numdiff.set_warn_always(False)
    numdiff.default_generator.manual_seed(5)
    first = numdiff.rand(3)
    numdiff.manual_seed(5)
    assert numdiff.equal(first, numdiff.rand(3))
    assert numdiff.zeros(2, 3)[:, numdiff.newaxis].shape == torch.zeros(2, 3)[:, torch.newaxis].shape
