"""The losses' common path (float32/float64 host tensors, default reduction) gives the bits of the
composition it shortcuts: mse_loss 'mean' is squared_error then mean(), forward and backward;
nll_loss's checks read shapes from the arrays and still refuse bad input with the values."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nnf
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.ops.elementwise import PUBLIC as RULES

torch = pytest.importorskip("torch")

SHAPES = [(), (1,), (7,), (16, 8), (3, 4, 5), (2, 1, 3, 2), (9, 11), (1000,)]


def _pair(rng, shape, dtype, contiguous):
    def draw():
        full = rng.standard_normal(shape + (2,)).astype(dtype)
        return full[..., 0] if not contiguous else np.ascontiguousarray(full[..., 0])

    return numdiff.tensor(draw(), requires_grad=True), numdiff.tensor(draw(), requires_grad=True)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("seed", [1.0, 0.3])
def test_mse_loss_mean_has_the_bits_of_squared_error_then_mean(rng, shape, dtype, contiguous, seed):
    x, t = _pair(rng, shape, dtype, contiguous)
    ours = nnf.mse_loss(x, t)
    ours.backward(numdiff.tensor(np.asarray(seed, dtype)))
    ours_grads = (x.grad.numpy().copy(), t.grad.numpy().copy())
    x.grad = t.grad = None
    composed = RULES["squared_error"](x, t).mean()
    composed.backward(numdiff.tensor(np.asarray(seed, dtype)))
    assert ours.dtype == composed.dtype and ours.shape == composed.shape == ()
    np.testing.assert_array_equal(ours.detach().numpy(), composed.detach().numpy())
    np.testing.assert_array_equal(ours_grads[0], x.grad.numpy())
    np.testing.assert_array_equal(ours_grads[1], t.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mse_loss_mean_matches_torch(rng, dtype):
    a, b = (rng.standard_normal((16, 8)).astype(dtype) for _ in range(2))
    x = numdiff.tensor(a, requires_grad=True)
    loss = nnf.mse_loss(x, numdiff.tensor(b))
    loss.backward()
    tx = torch.tensor(a, requires_grad=True)
    expected = torch.nn.functional.mse_loss(tx, torch.tensor(b))
    expected.backward()
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(loss.detach().numpy(), expected.detach().numpy(), rtol=tol)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


def test_mse_loss_mean_passes_float64_gradcheck_and_gradgradcheck(rng):
    x, t = (numdiff.tensor(rng.standard_normal((3, 4)), requires_grad=True) for _ in range(2))
    assert gradcheck(nnf.mse_loss, (x, t))
    assert gradgradcheck(nnf.mse_loss, (x, t))


def test_mse_loss_half_and_integer_targets_take_the_checked_path(rng):
    a = rng.standard_normal(6)
    half = nnf.mse_loss(numdiff.tensor(a.astype(np.float16)), numdiff.tensor(np.zeros(6, np.float16)))
    assert half.dtype == numdiff.float16
    np.testing.assert_allclose(half.numpy(), np.mean(a.astype(np.float16).astype(np.float32) ** 2), rtol=1e-3)
    promoted = nnf.mse_loss(numdiff.tensor(a), numdiff.arange(6))
    np.testing.assert_allclose(promoted.numpy(), np.mean((a - np.arange(6)) ** 2), rtol=1e-14)


def test_mse_loss_refuses_an_integer_input_naming_the_dtype():
    with pytest.raises(TypeError, match=r"mse_loss: expected 'input' to be a floating point tensor, got dtype"):
        nnf.mse_loss(numdiff.arange(4), numdiff.zeros(4))
    with pytest.raises(TypeError, match=r"mse_loss: argument 'target' must be a Tensor, not list"):
        nnf.mse_loss(numdiff.zeros(4), [0.0] * 4)


def test_nll_loss_refuses_a_target_of_the_wrong_shape_with_both_shapes():
    log_probs = numdiff.zeros(4, 3)
    with pytest.raises(ValueError, match=r"nll_loss: expected target of shape \(4,\) for input of shape \(4, 3\).*got target of shape \(2,\)"):
        nnf.nll_loss(log_probs, numdiff.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"nll_loss: input must have at least 1 dimension"):
        nnf.nll_loss(numdiff.tensor(0.5), numdiff.tensor(0))
    with pytest.raises(IndexError, match=r"nll_loss: target 3 is out of bounds"):
        nnf.nll_loss(log_probs[:1], numdiff.tensor([3]))


def test_mse_loss_mean_op_under_vmap_gives_each_entry_its_mean(rng):
    from numdiff.func import vmap
    from numdiff.ops.loss import MseLossMean

    a, b = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 2))
    batched = vmap(MseLossMean.apply)(numdiff.tensor(a), numdiff.tensor(b))
    np.testing.assert_allclose(batched.numpy(), ((a - b) ** 2).reshape(4, -1).mean(1), rtol=1e-14)
    shared = vmap(MseLossMean.apply, in_dims=(0, None))(numdiff.tensor(a), numdiff.tensor(b[0]))
    np.testing.assert_allclose(shared.numpy(), ((a - b[0]) ** 2).reshape(4, -1).mean(1), rtol=1e-14)


def test_mse_loss_under_vmap_and_jvp_matches_the_composed_values(rng):
    from numdiff.func import jvp, vmap

    a, b, v = (rng.standard_normal((4, 5)) for _ in range(3))
    per_row = vmap(nnf.mse_loss)(numdiff.tensor(a), numdiff.tensor(b))
    np.testing.assert_allclose(per_row.numpy(), ((a - b) ** 2).mean(1), rtol=1e-14)
    value, tangent = jvp(lambda x: nnf.mse_loss(x, numdiff.tensor(b)), (numdiff.tensor(a),), (numdiff.tensor(v),))
    np.testing.assert_allclose(value.numpy(), ((a - b) ** 2).mean(), rtol=1e-14)
    np.testing.assert_allclose(tangent.numpy(), (2 * (a - b) * v).mean(), rtol=1e-12)
