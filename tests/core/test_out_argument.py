"""PyTorch's out= keyword on numdiff.* functions: the result lands in `out` (cast, or resized
with a warning), tuples for several results, and refusal while recording gradients."""

import warnings

import numpy as np
import pytest

import numdiff
from numdiff._out_argument import OUT_FUNCTIONS

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name, make_args", [
    ("matmul", lambda lib: (lib.ones(3, 4), lib.ones(4, 2))),
    ("mul", lambda lib: (lib.arange(6.0).reshape(2, 3), lib.ones(2, 3) * 2)),
    ("add", lambda lib: (lib.arange(4.0), 1.5)),
    ("exp", lambda lib: (lib.arange(3.0),)),
    ("cat", lambda lib: ([lib.ones(2), lib.zeros(3)],)),
    ("sum", lambda lib: (lib.arange(6.0).reshape(2, 3), 1)),
    ("where", lambda lib: (lib.arange(4.0) > 1, lib.ones(4), lib.zeros(4))),
])
def test_out_receives_the_result_like_pytorch(name, make_args):
    ours_out, theirs_out = numdiff.empty(0), torch.empty(0)
    returned = getattr(numdiff, name)(*make_args(numdiff), out=ours_out)
    getattr(torch, name)(*make_args(torch), out=theirs_out)
    assert returned is ours_out
    np.testing.assert_allclose(ours_out.numpy(), theirs_out.numpy())


def test_out_of_the_right_shape_is_written_in_place_and_cast():
    out = numdiff.zeros(2, 2, dtype=numdiff.float64)
    data = out._data
    numdiff.mm(numdiff.eye(2), numdiff.ones(2, 2), out=out)
    assert out._data is data and out.dtype is numdiff.float64 and out.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.warns(UserWarning, match="was resized since it had shape \\(3,\\)"):
        numdiff.add(numdiff.ones(2), 1, out=numdiff.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numdiff.add(numdiff.ones(2), 1, out=numdiff.empty(0))  # an empty out is resized silently


def test_several_results_go_to_a_tuple():
    values, indices = numdiff.empty(0), numdiff.empty(0, dtype=numdiff.int64)
    numdiff.max(numdiff.tensor([[1.0, 5.0], [3.0, 2.0]]), 1, out=(values, indices))
    assert values.tolist() == [5.0, 3.0] and indices.tolist() == [1, 0]


def test_out_is_refused_where_pytorch_refuses_it():
    with pytest.raises(RuntimeError, match="exp\\(\\): functions with out=... arguments don't support automatic"):
        numdiff.exp(numdiff.ones(2, requires_grad=True), out=numdiff.empty(2))
    with numdiff.no_grad():
        numdiff.exp(numdiff.ones(2, requires_grad=True), out=numdiff.empty(2))
    with pytest.raises(RuntimeError, match="result type numdiff.float32 can't be cast to the desired output type numdiff.int64"):
        numdiff.exp(numdiff.ones(2), out=numdiff.empty(2, dtype=numdiff.int64))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not float"):
        numdiff.exp(numdiff.ones(2), out=3.0)


def test_every_listed_function_exists_in_pytorch_with_out():
    for name in OUT_FUNCTIONS:
        if hasattr(numdiff, name):
            assert hasattr(torch, name), name
