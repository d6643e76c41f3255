"""Forward mode nested with the other transforms, custom Functions' jvp, and in-place updates inside
jvp, against torch.func in float64."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import func
from numdiff.autograd.custom_function import CustomFunctionError
from numdiff.func._forward import MissingJvpError

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(27)


def _close(ours, theirs, rtol=1e-9, atol=1e-11) -> None:
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def mixed(lib, x):
    """Scalar rules, a matmul, a reduction and ops without a rule (amax, cumprod)."""
    y = lib.tanh(x) * x.exp() + (x @ x.t()).sum(0)[: x.shape[-1]]
    # (minus 0.5: torch's second derivative of cumprod is NaN where a factor is exactly 0)
    return (y - y.amax(-1, keepdim=True) - 0.5).cumprod(-1).sum() + lib.logsumexp(x, -1).sum()


def _pair(*shape):
    a = RNG.standard_normal(shape) * 0.5
    return numdiff.tensor(a), torch.tensor(a)


def test_jvp_of_grad_and_grad_of_jvp_match_torch_func():
    (x, tx), (t, tt) = _pair(3, 3), _pair(3, 3)
    f, tf = (lambda v: mixed(numdiff, v)), (lambda v: mixed(torch, v))
    _close(func.jvp(func.grad(f), (x,), (t,)), torch.func.jvp(torch.func.grad(tf), (tx,), (tt,)))
    ours = func.grad(lambda v: func.jvp(f, (v,), (t,))[1])(x)
    theirs = torch.func.grad(lambda v: torch.func.jvp(tf, (v,), (tt,))[1])(tx)
    _close(ours, theirs)
    # The tangent differentiated too: grad with respect to it.
    _close(func.grad(lambda u: func.jvp(f, (x,), (u,))[1])(t), torch.func.grad(lambda u: torch.func.jvp(tf, (tx,), (u,))[1])(tt))


def test_hessian_and_jacfwd_of_jacfwd_match_torch_func():
    x, tx = _pair(3, 3)
    f, tf = (lambda v: mixed(numdiff, v)), (lambda v: mixed(torch, v))
    _close(func.hessian(f)(x), torch.func.hessian(tf)(tx))
    g, tg = (lambda v: numdiff.sin(v) * v.cumprod(0)), (lambda v: torch.sin(v) * v.cumprod(0))
    _close(func.jacfwd(func.jacfwd(g))(x[0]), torch.func.jacfwd(torch.func.jacfwd(tg))(tx[0]))


@pytest.mark.parametrize("batched", ["primal", "tangent", "both"])
def test_vmap_of_jvp_and_jvp_of_vmap_match_torch_func(batched):
    (x, tx), (t, tt) = _pair(4, 3, 3), _pair(4, 3, 3)
    f, tf = (lambda v: mixed(numdiff, v)), (lambda v: mixed(torch, v))
    in_dims = {"primal": (0, None), "tangent": (None, 0), "both": (0, 0)}[batched]
    xs, ts = (x, t) if batched == "both" else (x, t[0]) if batched == "primal" else (x[0], t)
    txs, tts = (tx, tt) if batched == "both" else (tx, tt[0]) if batched == "primal" else (tx[0], tt)
    ours = func.vmap(lambda p, q: func.jvp(f, (p,), (q,)), in_dims=in_dims)(xs, ts)
    theirs = torch.func.vmap(lambda p, q: torch.func.jvp(tf, (p,), (q,)), in_dims=in_dims)(txs, tts)
    _close(ours, theirs)
    g, tg = (lambda v: func.vmap(f)(v)), (lambda v: torch.func.vmap(tf)(v))
    _close(func.jvp(g, (x,), (t,)), torch.func.jvp(tg, (tx,), (tt,)))


def test_nested_jvps_keep_their_tangents_apart():
    # d/dx [x * d/dy (x * y)] = 2x: an inner level that took the outer tangent for its own would
    # give another answer (perturbation confusion).
    x, one = numdiff.tensor(1.5, dtype=numdiff.float64), numdiff.tensor(1.0, dtype=numdiff.float64)

    def outer(a):
        return a * func.jvp(lambda b: a * b, (one,), (one,))[1]

    assert func.jvp(outer, (x,), (one,))[1].item() == pytest.approx(3.0)


class Cube(numdiff.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x * ctx.scale, None

    @staticmethod
    def jvp(ctx, tangent, scale_tangent):
        (x,) = ctx.saved_tensors
        assert scale_tangent is None  # a number argument has no tangent
        return 3 * x * x * tangent * ctx.scale


class SinCos(numdiff.autograd.Function):
    """torch.func's style: forward without ctx, setup_context, two outputs."""

    @staticmethod
    def forward(x, y):
        return x.sin() * y, x.cos()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, g1, g2):
        raise AssertionError("forward mode must not run backward")

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return x.cos() * y * tx + x.sin() * ty, -x.sin() * tx


def test_a_custom_functions_jvp_and_save_for_forward_are_used():
    (x, _), (t, _) = _pair(3), _pair(3)
    out, pushed = func.jvp(lambda v: Cube.apply(v, 2.0), (x,), (t,))
    np.testing.assert_allclose(pushed.numpy(), (6 * x * x * t).numpy(), rtol=1e-12)
    y, u = numdiff.tensor(RNG.standard_normal(3)), numdiff.tensor(RNG.standard_normal(3))
    (a, b), (ta, tb) = func.jvp(SinCos.apply, (x, y), (t, u))
    np.testing.assert_allclose(ta.numpy(), (x.cos() * y * t + x.sin() * u).numpy(), rtol=1e-12)
    np.testing.assert_allclose(tb.numpy(), (-x.sin() * t).numpy(), rtol=1e-12)
    # Only x carries a tangent: y's is a zero tensor, as torch.func passes.
    _, (ta, _) = func.jvp(lambda v: SinCos.apply(v, y), (x,), (t,))
    np.testing.assert_allclose(ta.numpy(), (x.cos() * y * t).numpy(), rtol=1e-12)
    # Under jacfwd (the tangents batched by vmap) and under grad of jvp.
    np.testing.assert_allclose(func.jacfwd(lambda v: Cube.apply(v, 2.0))(x).numpy(), np.diag((6 * x * x).numpy()), rtol=1e-12)
    second = func.grad(lambda v: func.jvp(lambda w: Cube.apply(w, 1.0), (v,), (t,))[1].sum())(x)
    np.testing.assert_allclose(second.numpy(), (6 * x * t).numpy(), rtol=1e-12)


def test_a_custom_function_without_jvp_names_what_to_add():
    class NoJvp(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    with pytest.raises(MissingJvpError, match=r"NoJvp has no jvp.*tangents for arguments \[0\].*def jvp\(ctx, \*tangents\).*save_for_forward"):
        func.jvp(NoJvp.apply, (x,), (x,))
    assert issubclass(MissingJvpError, NotImplementedError)  # what torch raises
    # Where no tangent reaches it, it runs as before.
    out, pushed = func.jvp(lambda v: v * NoJvp.apply(x).sum(), (x,), (x,))
    np.testing.assert_allclose(pushed.numpy(), (x * 6).numpy())


def test_a_custom_jvp_returning_the_wrong_number_of_tangents_is_refused():
    class Twice(numdiff.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

        @staticmethod
        def jvp(ctx, tangent):
            return tangent * 2, tangent

    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    with pytest.raises(CustomFunctionError, match="Twice.jvp returned 2 tangents for 1 outputs"):
        func.jvp(Twice.apply, (x,), (x,))


def _stateful(lib, x):
    """Writes into tensors made inside in place, one of them a running mean as BatchNorm's."""
    running = lib.zeros(3, dtype=lib.float64)
    running.mul_(0.9).add_(0.1 * x.mean(0))
    y = x * 1.0
    y.mul_(x)
    y.clamp_(min=-0.5)
    return y.sum(0) + running


def test_inplace_updates_inside_jvp_carry_tangents_as_torch_func():
    (x, tx), (t, tt) = _pair(4, 3), _pair(4, 3)
    _close(func.jvp(lambda v: _stateful(numdiff, v), (x,), (t,)), torch.func.jvp(lambda v: _stateful(torch, v), (tx,), (tt,)))
    _close(func.jacfwd(lambda v: _stateful(numdiff, v))(x), torch.func.jacfwd(lambda v: _stateful(torch, v))(tx))


def test_a_view_read_after_an_inplace_update_of_its_base_inside_jvp_matches_torch_func():
    (x, tx), (t, tt) = _pair(4, 3), _pair(4, 3)

    def f(lib, v):
        y = v * 2.0
        row = y[1]
        y.mul_(v.exp())  # row is a view of y made before: it reads the new values and tangents
        return row * v[0] + y.sum(0)

    _close(func.jvp(lambda v: f(numdiff, v), (x,), (t,)), torch.func.jvp(lambda v: f(torch, v), (tx,), (tt,)))


def test_an_inplace_update_of_a_view_inside_jvp_and_grad_matches_torch_func():
    data, tangent = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    x, t, tx, tt = numdiff.tensor(data), numdiff.tensor(tangent), torch.tensor(data), torch.tensor(tangent)

    def f(v):
        y = v * 2.0
        y[1].mul_(v[0])  # writes through the row view into y: y's tangent and gradient see it
        return y

    _close(func.jvp(f, (x,), (t,)), torch.func.jvp(f, (tx,), (tt,)))
    _close(func.grad(lambda v: (f(v) ** 2).sum())(x), torch.func.grad(lambda v: (f(v) ** 2).sum())(tx))
