"""numdiff.func against torch.func in float64: every transform, nested ones, ops of every family."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff
import numdiff.nn.functional as nf
from numdiff import func

RNG = np.random.default_rng(0)


def _pair(*shape: int) -> tuple[numdiff.Tensor, torch.Tensor]:
    data = RNG.standard_normal(shape)
    return numdiff.tensor(data), torch.tensor(data)


def _close(ours, theirs) -> None:
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for key in theirs:
            _close(ours[key], theirs[key])
        return
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b)
        return
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-7, atol=1e-9)


# One function per op family, written once for each library (lib is numdiff or torch).
W_conv = RNG.standard_normal((2, 1, 3, 3))
W_mm = RNG.standard_normal((5, 4))


def elementwise(lib, x):
    return (lib.tanh(x) * x.exp() + x * x / (1 + x * x)).sum()


def reductions(lib, x):
    return x.amax(-1).sum() + (x * x).mean() + lib.logsumexp(x, -1).sum()


def matmul(lib, x):
    w = lib.tensor(W_mm)
    return (lib.tanh(x @ w.T) ** 2).sum()


def conv_pool(lib, x):
    fn = nf if lib is numdiff else torch.nn.functional
    y = fn.conv2d(x.reshape(1, 1, 3, 4), lib.tensor(W_conv), padding=1)
    return fn.max_pool2d(lib.tanh(y), 2).sum()


def cross_entropy(lib, x):
    fn = nf if lib is numdiff else torch.nn.functional
    return fn.cross_entropy(x, lib.tensor([0, 2, 1]))


FAMILIES = [elementwise, reductions, matmul, conv_pool, cross_entropy]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_grad_jacrev_hessian_match_torch_func(family):
    x, tx = _pair(3, 4)
    f, tf = (lambda v: family(numdiff, v)), (lambda v: family(torch, v))
    _close(func.grad(f)(x), torch.func.grad(tf)(tx))
    _close(func.hessian(f)(x), torch.func.hessian(tf)(tx))
    _close(func.jacfwd(func.jacrev(f))(x), torch.func.hessian(tf)(tx))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_vmap_grad_matches_torch_func(family):
    x, tx = _pair(2, 3, 4)
    f, tf = (lambda v: family(numdiff, v)), (lambda v: family(torch, v))
    _close(func.vmap(func.grad(f))(x), torch.func.vmap(torch.func.grad(tf))(tx))
    _close(func.vmap(f)(x), torch.func.vmap(tf)(tx))


def test_jacrev_jacfwd_with_argnums_and_two_outputs():
    (x, tx), (y, ty) = _pair(3), _pair(2, 3)

    def f(lib, a, b):
        return (b @ a.sin(), (a * b).sum(0))

    for transform, reference in ((func.jacrev, torch.func.jacrev), (func.jacfwd, torch.func.jacfwd)):
        ours = transform(lambda a, b: f(numdiff, a, b), argnums=(0, 1))(x, y)
        theirs = reference(lambda a, b: f(torch, a, b), argnums=(0, 1))(tx, ty)
        _close(ours, theirs)


def test_vjp_and_jvp_match_torch_func():
    (x, tx), (v, tv) = _pair(3, 2), _pair(3, 2)
    out, vjp_fn = func.vjp(lambda a: a.sin() * a, x)
    tout, tvjp_fn = torch.func.vjp(lambda a: a.sin() * a, tx)
    _close(out, tout)
    _close(vjp_fn(v), tvjp_fn(tv))
    _close(func.jvp(lambda a: a.exp() @ a.T, (x,), (v,)), torch.func.jvp(lambda a: a.exp() @ a.T, (tx,), (tv,)))


def test_vmap_over_vjp_fn_and_jacrev_under_vmap():
    (x, tx), (basis, tbasis) = _pair(3), _pair(5, 3)
    _, vjp_fn = func.vjp(lambda a: a.tanh() * a, x)
    _, tvjp_fn = torch.func.vjp(lambda a: a.tanh() * a, tx)
    _close(func.vmap(vjp_fn)(basis), torch.func.vmap(tvjp_fn)(tbasis))
    (xs, txs) = _pair(4, 3)
    _close(func.vmap(func.jacrev(lambda a: a.sin() * a.sum()))(xs), torch.func.vmap(torch.func.jacrev(lambda a: a.sin() * a.sum()))(txs))


def test_grad_has_aux_and_grad_and_value():
    x, tx = _pair(3)
    ours = func.grad_and_value(lambda a: ((a * a).sum(), a.mean()), has_aux=True)(x)
    theirs = torch.func.grad_and_value(lambda a: ((a * a).sum(), a.mean()), has_aux=True)(tx)
    _close(ours[0], theirs[0])
    _close(list(ours[1]), list(theirs[1]))
    assert not ours[0].requires_grad


def test_per_sample_gradients_with_functional_call():
    model = numdiff.nn.Linear(5, 3).double()
    tmodel = torch.nn.Linear(5, 3).double()
    with torch.no_grad():
        tmodel.weight.copy_(torch.tensor(model.weight.detach().numpy()))
        tmodel.bias.copy_(torch.tensor(model.bias.detach().numpy()))
    (x, tx), labels = _pair(6, 5), RNG.integers(0, 3, 6)

    def loss(lib, fn, call, m, params, sample, target):
        out = call(m, params, (sample.unsqueeze(0),))
        return fn.cross_entropy(out, target.unsqueeze(0))

    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    ours = func.vmap(func.grad(lambda p, s, t: loss(numdiff, nf, func.functional_call, model, p, s, t)), in_dims=(None, 0, 0))(
        params, x, numdiff.tensor(labels)
    )
    theirs = torch.func.vmap(
        torch.func.grad(lambda p, s, t: loss(torch, torch.nn.functional, torch.func.functional_call, tmodel, p, s, t)),
        in_dims=(None, 0, 0),
    )(tparams, tx, torch.tensor(labels))
    for key in ("weight", "bias"):
        _close(ours[key], theirs[key])
    assert model.weight.grad is None


def test_autograd_functional_matches_torch():
    from numdiff.autograd import functional as af

    (x, tx), (v, tv) = _pair(3), _pair(3)

    def f(a):
        return (a.sin() * a * a).sum()

    for name in ("vhp", "hvp", "vjp"):
        _close(getattr(af, name)(f, x, v)[1] if name != "vjp" else af.vjp(lambda a: a.exp(), x, v)[1],
               getattr(torch.autograd.functional, name)(f, tx, tv)[1] if name != "vjp" else torch.autograd.functional.vjp(lambda a: a.exp(), tx, tv)[1])
    _close(af.hessian(f, x), torch.autograd.functional.hessian(f, tx))
    _close(af.jacobian(lambda a: a.exp() * a, x), torch.autograd.functional.jacobian(lambda a: a.exp() * a, tx))
    _close(af.jvp(lambda a: a.exp(), x, v)[1], torch.autograd.functional.jvp(lambda a: a.exp(), tx, tv)[1])


def test_jacrev_and_jacfwd_has_aux_return_the_aux():
    x, tx = _pair(3)
    for ours, theirs in ((func.jacrev, torch.func.jacrev), (func.jacfwd, torch.func.jacfwd)):
        jac, aux = ours(lambda a: (a.exp(), a.sum()), has_aux=True)(x)
        tjac, taux = theirs(lambda a: (a.exp(), a.sum()), has_aux=True)(tx)
        _close(jac, tjac)
        _close(aux, taux)


def test_vmap_of_hessian_and_doubly_vmapped_grad_match_torch():
    (x, tx), (w, tw) = _pair(2, 3, 4), _pair(4)

    def f(lib, a, b):
        return (lib.tanh(a * b) * a).sum()

    ours = func.vmap(func.vmap(func.grad(lambda a, b: f(numdiff, a, b)), in_dims=(0, None)), in_dims=(0, None))(x, w)
    theirs = torch.func.vmap(torch.func.vmap(torch.func.grad(lambda a, b: f(torch, a, b)), in_dims=(0, None)), in_dims=(0, None))(tx, tw)
    _close(ours, theirs)
    ours = func.vmap(func.hessian(lambda a: f(numdiff, a, w)))(x[0])
    theirs = torch.func.vmap(torch.func.hessian(lambda a: f(torch, a, tw)))(tx[0])
    _close(ours, theirs)
    ours = func.vmap(func.grad(lambda b, a: f(numdiff, a, b)), in_dims=(None, 0))(w, x[0])
    theirs = torch.func.vmap(torch.func.grad(lambda b, a: f(torch, a, b)), in_dims=(None, 0))(tw, tx[0])
    _close(ours, theirs)


def test_jacfwd_of_empty_inputs_and_outputs_has_the_empty_shape():
    # Its columns were reshaped with -1, which a zero-size Jacobian cannot resolve.
    cases = [((0,), lambda a: a * 2), ((0, 3), lambda a: a.sum(0)), ((3,), lambda a: a[:0]), ((0,), lambda a: a.sum())]
    for shape, fn in cases:
        ours = func.jacfwd(fn)(numdiff.zeros(*shape, dtype=numdiff.float64))
        assert ours.shape == torch.func.jacfwd(fn)(torch.zeros(*shape, dtype=torch.float64)).shape


def test_jvp_jacfwd_and_hessian_of_outputs_that_do_not_depend_on_the_inputs_are_zero():
    # Forward mode pulled every output back through autograd, which raised for an output no
    # recorded op produced (a constant, a detached value), as torch.func gives zeros for.
    (x, tx) = _pair(2)

    def fn(lib, a):
        return a * 2, lib.ones(3, dtype=a.dtype), a.detach() ** 2

    ours = func.jvp(lambda a: fn(numdiff, a), (x,), (x,))
    theirs = torch.func.jvp(lambda a: fn(torch, a), (tx,), (tx,))
    _close(ours, theirs)
    _close(func.jacfwd(lambda a: fn(numdiff, a))(x), torch.func.jacfwd(lambda a: fn(torch, a))(tx))
    _close(func.vmap(func.jacfwd(lambda a: fn(numdiff, a)[1]))(x.reshape(2, 1)), torch.zeros(2, 3, 1))
    _close(func.hessian(lambda a: a[:0].sum() + 1.0)(x), torch.zeros(2, 2))


def test_vjp_jvp_jacrev_jacfwd_take_tuples_lists_and_dicts_of_tensors_as_primals():
    # grad took nested primals, but vjp, jvp and jacrev raised "primal 0 must be a Tensor, got
    # dict", and jacfwd leaked an AttributeError ('dict' object has no attribute 'numel').
    (w, tw), (u, tu), (s, ts), (z, tz) = _pair(2, 3), _pair(3), _pair(3), _pair(3)

    def fn(params, x):
        return (params["w"] @ (params["v"][0] * x)).sin() * params["v"][1].sum()

    ours, theirs = ({"w": w, "v": [u, s]}, z), ({"w": tw, "v": [tu, ts]}, tz)
    _close(func.vjp(fn, *ours)[1](numdiff.ones(2, dtype=numdiff.float64)), torch.func.vjp(fn, *theirs)[1](torch.ones(2, dtype=torch.float64)))
    basis, their_basis = numdiff.eye(2, dtype=numdiff.float64), torch.eye(2, dtype=torch.float64)
    _close(func.vmap(func.vjp(fn, *ours)[1])(basis), torch.func.vmap(torch.func.vjp(fn, *theirs)[1])(their_basis))
    tangents, their_tangents = ({"w": w * 2, "v": [s, u]}, u), ({"w": tw * 2, "v": [ts, tu]}, tu)
    _close(func.jvp(fn, ours, tangents), torch.func.jvp(fn, theirs, their_tangents))
    for transform, reference in ((func.jacrev, torch.func.jacrev), (func.jacfwd, torch.func.jacfwd)):
        _close(transform(fn, argnums=(0, 1))(*ours), reference(fn, argnums=(0, 1))(*theirs))
    _close(func.hessian(lambda p, x: fn(p, x).sum())(*ours), torch.func.hessian(lambda p, x: fn(p, x).sum())(*theirs))
    with pytest.raises(ValueError, match="tangent 0 does not have the structure of its primal"):
        func.jvp(fn, ours, ({"w": w}, u))
    with pytest.raises(TypeError, match="jacfwd: argument 0 must be a Tensor, got float"):
        func.jacfwd(lambda p: p["a"] * p["n"])({"a": u, "n": 2.0})


def test_jacrev_chunk_size_and_jacfwd_positional_has_aux_and_randomness_as_torch_func():
    # torch.func's signatures: jacrev(..., chunk_size=), jacfwd(func, argnums, has_aux, *,
    # randomness=); numdiff raised TypeError for each.
    (x, tx) = _pair(5)

    def fn(a):
        return a.sin() * a.sum(), a.cos()

    _close(func.jacrev(fn, chunk_size=2)(x), torch.func.jacrev(fn, chunk_size=2)(tx))
    _close(func.jacfwd(fn, 0, True)(x), torch.func.jacfwd(fn, 0, True)(tx))
    noisy = func.jacfwd(lambda a: a * numdiff.rand(5, dtype=numdiff.float64), randomness="same")(x)
    assert np.count_nonzero(noisy.numpy() - np.diag(np.diag(noisy.numpy()))) == 0
    with pytest.raises(func.VmapRandomnessError):
        func.jacfwd(lambda a: a * numdiff.rand(5, dtype=numdiff.float64))(x)


def test_functional_call_with_args_none_calls_the_module_without_arguments():
    # args=None (torch.func's default) was passed on as the one argument: module(None).
    class Doubler(numdiff.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = numdiff.nn.Parameter(numdiff.ones(2))

        def forward(self):
            return self.w * 2

    replaced = {"w": numdiff.tensor([1.0, 3.0])}
    np.testing.assert_array_equal(func.functional_call(Doubler(), replaced).numpy(), [2.0, 6.0])
    np.testing.assert_array_equal(func.functional_call(Doubler(), replaced, None).numpy(), [2.0, 6.0])
