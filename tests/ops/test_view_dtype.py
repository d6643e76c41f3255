"""Tensor.view(dtype): the same memory read as another dtype, against PyTorch."""

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int16", "uint8", "int8"]


@pytest.mark.parametrize("target", DTYPES)
@pytest.mark.parametrize("source", ["float32", "float64", "float16", "bfloat16", "int32", "uint8"])
def test_bits_shape_and_dtype_match_torch(source, target):
    values = np.arange(1, 17).reshape(2, 8) * 3
    ours = numdiff.tensor(values).to(getattr(numdiff, source)).view(getattr(numdiff, target))
    theirs = torch.tensor(values).to(getattr(torch, source)).view(getattr(torch, target))
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype)[8:] == str(theirs.dtype)[6:]
    # Compare bits: the values may be NaN or subnormal.
    assert ours.view(numdiff.uint8).numpy().tobytes() == theirs.view(torch.uint8).numpy().tobytes()


def test_a_write_through_either_shows_in_the_other():
    a = numdiff.arange(4, dtype=numdiff.int32)
    b = a.view(numdiff.float32)
    b[0] = 1.0
    assert a[0].item() == 1065353216
    a[1] = 1073741824
    assert b[1].item() == 2.0


def test_no_gradient_flows_and_the_keyword_form_works():
    x = numdiff.ones(2, 4, requires_grad=True)
    y = x.view(dtype=numdiff.float16)
    assert not y.requires_grad and y.grad_fn is None and tuple(y.shape) == (2, 8)
    assert x.view(numdiff.float32).grad_fn is None  # as PyTorch's: even the same dtype detaches


def test_a_sliced_tensor_with_a_contiguous_last_dimension_is_viewed_in_place():
    base = numdiff.arange(12, dtype=numdiff.int16).reshape(3, 4)
    view = base[1:, 2:].view(numdiff.int32)
    assert tuple(view.shape) == (2, 1)
    assert view.numpy().tobytes() == base.numpy()[1:, 2:].copy().tobytes()


@pytest.mark.parametrize(("make", "message"), [
    (lambda: numdiff.ones(2, 3).t().view(numdiff.float16), r"view: self.stride\(-1\) must be 1 .* but got 3"),
    (lambda: numdiff.ones(3, dtype=numdiff.uint8).view(numdiff.float32), r"view: self.size\(-1\) must be divisible by 4 .* but got 3"),
    (lambda: numdiff.tensor(1.0).view(numdiff.float64), r"view: self.dim\(\) cannot be 0"),
])  # fmt: skip
def test_layouts_torch_refuses_are_refused_with_its_reason(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


def test_a_shape_and_a_dtype_together_are_refused():
    with pytest.raises(TypeError, match="view: expected a shape or one dtype"):
        numdiff.ones(2).view(2, dtype=numdiff.int32)
