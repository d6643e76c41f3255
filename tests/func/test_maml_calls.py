"""The calls MAML, PINN and gradient-penalty code makes around autograd.grad, as PyTorch takes them:
grad over ``model.parameters()`` (a generator) and dict values, functional_call's tie_weights, and
autograd.functional.jacobian's strategy; numbers compared with torch."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")


def _copy_weights(source, target) -> None:
    with numdiff.no_grad():
        for (_, p), (_, q) in zip(source.named_parameters(), target.named_parameters()):
            p.copy_(numdiff.tensor(q.detach().numpy()))


def test_grad_over_a_parameters_generator_runs_a_maml_inner_step_like_torch():
    x = np.random.default_rng(0).standard_normal((5, 3))
    results = []
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    for lib in (numdiff, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1)).double()
        if lib is numdiff:
            _copy_weights(model, reference)
        else:
            model = reference
        inputs = lib.tensor(x)
        loss = model(inputs).pow(2).mean()
        grads = lib.autograd.grad(loss, model.parameters(), create_graph=True)
        names = dict(model.named_parameters())
        fast = {name: w - 0.1 * g for (name, w), g in zip(names.items(), grads)}
        outer = lib.func.functional_call(model, fast, (inputs,)).pow(2).mean()
        meta = lib.autograd.grad(outer, names.values())
        results.append([g.detach().numpy() for g in (*grads, *meta)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_grad_over_an_iterable_of_non_tensors_names_the_item():
    x = numdiff.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"grad: inputs must be Tensors .* item 1 is a str"):
        numdiff.autograd.grad((x * x).sum(), iter([x, "w"]))


def _tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = lib.nn.Linear(3, 3, bias=False)
            self.second = lib.nn.Linear(3, 3, bias=False)
            self.second.weight = self.first.weight

        def forward(self, x):
            return self.second(self.first(x).tanh())

    return Tied()


@pytest.mark.parametrize("tie_weights", [True, False])
def test_functional_call_tie_weights_replaces_every_name_of_a_tied_weight_as_torch(tie_weights):
    w = np.random.default_rng(1).standard_normal((3, 3))
    x = np.random.default_rng(2).standard_normal((2, 3))
    reference = _tied(torch).double()
    model = _tied(numdiff).double()
    _copy_weights(model, reference)
    outs = [
        lib.func.functional_call(m, {"first.weight": lib.tensor(w)}, (lib.tensor(x),), tie_weights=tie_weights)
        for lib, m in ((numdiff, model), (torch, reference))
    ]
    np.testing.assert_allclose(outs[0].detach().numpy(), outs[1].detach().numpy(), rtol=1e-12)


def test_functional_call_with_two_values_for_tied_names_raises_naming_them():
    model = _tied(numdiff)
    values = {"first.weight": numdiff.zeros(3, 3), "second.weight": numdiff.ones(3, 3)}
    with pytest.raises(ValueError, match=r"different values given for \['first.weight', 'second.weight'\]"):
        numdiff.func.functional_call(model, values, (numdiff.ones(1, 3),))
    numdiff.func.functional_call(model, values, (numdiff.ones(1, 3),), tie_weights=False)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_strategy_gives_torchs_jacobian(strategy):
    x = np.random.default_rng(3).standard_normal(4)

    def f(lib):
        return lambda v: (v.sin() * v[:2].sum(), v**2)

    got = numdiff.autograd.functional.jacobian(f(numdiff), numdiff.tensor(x), strategy=strategy, vectorize=True)
    want = torch.autograd.functional.jacobian(f(torch), torch.tensor(x), strategy=strategy, vectorize=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
    hessian = numdiff.autograd.functional.hessian(lambda v: (v**3).sum(), numdiff.tensor(x),
                                                  outer_jacobian_strategy=strategy)
    np.testing.assert_allclose(hessian.numpy(), np.diag(6 * x), rtol=1e-12)


def test_jacobian_strategy_errors_name_the_call_and_the_value():
    x = numdiff.ones(3)
    with pytest.raises(ValueError, match=r'jacobian: strategy must be "forward-mode" or "reverse-mode", got \'fast\''):
        numdiff.autograd.functional.jacobian(numdiff.exp, x, strategy="fast")
    with pytest.raises(NotImplementedError, match=r'jacobian: create_graph=True and strategy="forward-mode"'):
        numdiff.autograd.functional.jacobian(numdiff.exp, x, create_graph=True, strategy="forward-mode", vectorize=True)
    with pytest.raises(ValueError, match=r"hessian: outer_jacobian_strategy must be"):
        numdiff.autograd.functional.hessian(lambda v: v.sum(), x, outer_jacobian_strategy=None)


def test_stateless_functional_call_is_the_deprecated_alias_with_torchs_warning():
    model = numdiff.nn.Linear(3, 2)
    values = {"weight": numdiff.ones(2, 3), "bias": numdiff.zeros(2)}
    with pytest.warns(FutureWarning, match="use numdiff.func.functional_call"):
        out = numdiff.nn.utils.stateless.functional_call(model, values, (numdiff.ones(1, 3),))
    np.testing.assert_array_equal(out.detach().numpy(), [[3.0, 3.0]])
    with pytest.warns(FutureWarning), pytest.raises(KeyError, match=r"no value given for \['bias'\]"):
        numdiff.nn.utils.stateless.functional_call(model, {"weight": numdiff.ones(2, 3)}, numdiff.ones(1, 3), strict=True)
