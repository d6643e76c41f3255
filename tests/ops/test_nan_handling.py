"""nan_to_num, nansum and nanmean: values and gradients against PyTorch, also when the gradient
arriving from above is inf or NaN (PyTorch multiplies it by the mask, so the replaced elements get
NaN there, where numdiff's `where` would give an exact 0)."""

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

VALUES = [1.5, float("nan"), float("inf"), -float("inf"), -0.0, -2.0]
FUNCTIONS = {
    "nan_to_num": lambda lib, x: lib.nan_to_num(x),
    "nan_to_num-keeping-infinities": lambda lib, x: lib.nan_to_num(x, nan=3.0, posinf=float("inf"), neginf=-float("inf")),
    "nansum": lambda lib, x: lib.nansum(x.reshape(2, 3), 1),
    "nanmean": lambda lib, x: lib.nanmean(x.reshape(2, 3), 1),
    "nanmean-all-nan": lambda lib, x: lib.nanmean(lib.where(x == x, x * 0 + float("nan"), x)),
}


@pytest.mark.parametrize("upstream", [2.0, float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_and_gradients_match_torch(name, dtype, upstream):
    results = []
    for lib in (numdiff, torch):
        x = lib.tensor(VALUES, dtype=getattr(lib, dtype), requires_grad=True)
        y = FUNCTIONS[name](lib, x)
        y.backward(lib.full_like(y, upstream))
        results.append((y.detach().numpy(), x.grad.numpy()))
    (ours, our_grad), (theirs, their_grad) = results
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_grad, their_grad)


def test_second_derivative_through_the_mask_matches_torch():
    results = []
    for lib in (numdiff, torch):
        x = lib.tensor([0.5, float("nan"), 2.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad((lib.nan_to_num(x) ** 3).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_under_compile_the_gradients_are_eagers():
    def loss(x):
        return (numdiff.nan_to_num(x) * 2).sum() + numdiff.nansum(x)

    compiled = numdiff.compile(loss)
    grads = []
    for fn in (loss, compiled, compiled):
        x = numdiff.tensor(VALUES, requires_grad=True)
        fn(x).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[0], grads[2])


@pytest.mark.parametrize(("call", "message"), [
    (lambda: numdiff.nan_to_num([1.0]), "nan_to_num: expected a Tensor, got list"),
    (lambda: numdiff.nan_to_num(numdiff.ones(2), nan="0"), "nan_to_num: nan must be a number or None, got str"),
    (lambda: numdiff.nanmean(numdiff.ones(2, dtype=numdiff.int64)), "nanmean: expected a floating point input"),
])  # fmt: skip
def test_bad_input_names_the_op(call, message):
    with pytest.raises(TypeError, match=message):
        call()
