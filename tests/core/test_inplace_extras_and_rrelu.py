"""Shape-changing in-place methods (t_, transpose_, squeeze_, unsqueeze_), index_put/index_put_
with PyTorch's (indices, values, accumulate) signature, and RReLU: forward against PyTorch,
float64 gradient checks, refused inputs."""

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck
from numdiff.tensor import InPlaceOnLeafError

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("op, args", [("t_", ()), ("transpose_", (0, 2)), ("swapdims_", (1, 0)),
                                      ("squeeze_", ()), ("unsqueeze_", (1,))])
def test_shape_changing_inplace_methods_match_pytorch(op, args):
    shape = (3, 4) if op == "t_" else (2, 1, 3)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours, theirs = numdiff.tensor(x), torch.tensor(x)
    assert getattr(ours, op)(*args) is ours
    getattr(theirs, op)(*args)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_t_inplace_on_a_non_leaf_keeps_the_gradient_and_refuses_a_leaf():
    w = numdiff.randn(2, 3, dtype=numdiff.float64, requires_grad=True)

    def through_t_(leaf):
        y = leaf * 2
        y.t_()
        return y * numdiff.arange(6.0, dtype=numdiff.float64).reshape(3, 2)

    assert gradcheck(through_t_, (w,))
    with pytest.raises(InPlaceOnLeafError, match="t_: a leaf tensor of shape \\(2, 3\\) that requires grad"):
        w.t_()


def test_index_put_matches_pytorch_with_and_without_accumulate():
    base = np.zeros((4, 3), dtype=np.float32)
    rows, cols = np.array([0, 2, 0]), np.array([1, 1, 1])
    values = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    for accumulate in (False, True):
        ours = numdiff.tensor(base).index_put((numdiff.tensor(rows), numdiff.tensor(cols)), numdiff.tensor(values),
                                              accumulate=accumulate)
        theirs = torch.tensor(base).index_put((torch.tensor(rows), torch.tensor(cols)), torch.tensor(values),
                                              accumulate=accumulate)
        if accumulate:
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        else:  # which of two writes to one place wins is unspecified in PyTorch; the untouched rest matches
            np.testing.assert_array_equal(ours.numpy()[[1, 3]], theirs.numpy()[[1, 3]])
    row_put = numdiff.zeros(3, 2)
    row_put.index_put_((numdiff.tensor([2, 2]),), numdiff.tensor([1.0, 5.0]), accumulate=True)
    np.testing.assert_array_equal(row_put.numpy(), [[0, 0], [0, 0], [2, 10]])


def test_index_put_gradients_in_float64_and_bad_indices():
    rows, cols = numdiff.tensor([0, 2, 0]), numdiff.tensor([1, 1, 1])
    x = numdiff.randn(4, 3, dtype=numdiff.float64, requires_grad=True)
    v = numdiff.randn(3, dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda a, b: a.index_put((rows, cols), b, accumulate=True), (x, v))
    with pytest.raises(IndexError, match="index_put: index 4 is out of bounds for dim 0 of size 4"):
        x.detach().index_put((numdiff.tensor([4]),), numdiff.tensor(1.0, dtype=numdiff.float64), accumulate=True)
    with pytest.raises(TypeError, match="indices must be a tuple of tensors"):
        x.detach().index_put(numdiff.tensor([0]), numdiff.tensor(1.0))


def test_rrelu_eval_matches_pytorch_and_training_draws_slopes_in_range():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    ours = numdiff.nn.RReLU(0.1, 0.3).eval()(numdiff.tensor(x))
    theirs = torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert repr(numdiff.nn.RReLU(0.1, 0.3)) == repr(torch.nn.RReLU(0.1, 0.3))
    numdiff.manual_seed(0)
    t = numdiff.full((10_000,), -1.0, requires_grad=True)
    out = numdiff.nn.functional.rrelu(t, 0.1, 0.3, training=True)
    slopes = -out.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), slopes, rtol=1e-6)  # each element's gradient is its slope
    assert gradcheck(lambda a: numdiff.nn.functional.rrelu(a, 0.2, 0.4), (numdiff.tensor([-1.5, 0.7, 2.0], dtype=numdiff.float64, requires_grad=True),))
    with pytest.raises(ValueError, match="rrelu: expected 0 <= lower <= upper, got lower=0.5 and upper=0.1"):
        numdiff.nn.functional.rrelu(numdiff.ones(2), 0.5, 0.1)
    with pytest.raises(TypeError, match="rrelu: expected a floating point input"):
        numdiff.nn.functional.rrelu(numdiff.tensor([1, -1]))
