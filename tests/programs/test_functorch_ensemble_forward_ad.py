"""Ensembles and forward-mode derivatives through functorch's legacy API, as a PyTorch program
that still imports it would write them: three small regressors are trained together as one
vmapped function of stacked parameters (combine_state_for_ensemble), and the directional
derivative of the ensemble's loss along a random direction comes from linearize and from
functorch's jvp over make_functional_with_buffers.

Stands for: pytorch/tutorials intermediate_source/forward_ad_usage.py (functorch section),
intermediate_source/ensembling.py (functorch version), and the functorch examples' ensembling.
"""

from __future__ import annotations

import numdiff as torch
import numdiff.nn as nn
from numdiff._functorch.deprecated import (
    combine_state_for_ensemble,
    grad,
    jvp,
    make_functional_with_buffers,
    vmap,
)
from numdiff.func import linearize


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def test_an_ensemble_trained_through_stacked_parameters_fits_each_member():
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(128, 2, generator=generator) * 4 - 2
    y = torch.sin(x[:, 0]) * x[:, 1]
    models = [Regressor() for _ in range(3)]
    fmodel, params, buffers = combine_state_for_ensemble(models)
    params = [p.detach().requires_grad_() for p in params]

    def loss(member_params, member_buffers, inputs, targets):
        return ((fmodel(member_params, member_buffers, inputs) - targets) ** 2).mean()

    per_member_grad = vmap(grad(loss), in_dims=(0, 0, None, None))
    first = vmap(loss, in_dims=(0, 0, None, None))(params, buffers, x, y)
    for _ in range(300):
        grads = per_member_grad(params, buffers, x, y)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 0.1 * g
    last = vmap(loss, in_dims=(0, 0, None, None))(params, buffers, x, y)
    assert tuple(last.shape) == (3,)
    assert bool((last < 0.3 * first).all()), (first, last)


def test_directional_derivatives_agree_between_linearize_jvp_and_differences():
    torch.manual_seed(1)
    model = Regressor().double()
    func, params, buffers = make_functional_with_buffers(model)
    x = torch.randn(32, 2, dtype=torch.float64)
    direction = tuple(torch.randn_like(p) for p in params)

    def loss(p):
        return (func(p, buffers, x) ** 2).mean()

    _, forward = jvp(loss, (params,), (direction,))
    _, jvp_fn = linearize(loss, params)
    eps = 1e-6
    ahead = loss(tuple(p + eps * d for p, d in zip(params, direction)))
    behind = loss(tuple(p - eps * d for p, d in zip(params, direction)))
    central = (ahead - behind) / (2 * eps)
    assert abs(float(forward) - float(central)) < 1e-6 * max(1.0, abs(float(central)))
    assert abs(float(jvp_fn(direction)) - float(forward)) < 1e-10
