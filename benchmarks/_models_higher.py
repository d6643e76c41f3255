"""Training steps that differentiate gradients (``autograd.grad(..., create_graph=True)``), for
benchmarks/bench_models.py. A fourth probe (session 19) found this family slower than the others
against torch and covered by no row: the time is Python per recorded op, since one step records the
backward formulas of one or two backward passes and then runs a third through all of them.

- a physics-informed network for Burgers' equation: u_x, u_t and u_xx of a tanh MLP by autograd;
- MAML on sine regression: an inner SGD step by autograd.grad(create_graph=True) and
  func.functional_call, the outer loss differentiated through it;
- a WGAN-GP critic step: the gradient penalty on interpolated samples.

numdiff.compile runs these losses too: their inner backward passes are traced as ops (the test in
tests/test_bench_scripts.py checks its losses against torch's). Written as benchmarks/_models.py
writes its own:
``(lib, quick, compile_fn) -> step``, weights from per-name seeds, no library imported at module
level.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _models import _adam_step, _data, same_weights


def pinn(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A physics-informed MLP 2-32-32-1 with tanh for Burgers' equation on 256 collocation points
    (x, t): u_x and u_t from one autograd.grad, u_xx from a second, both with create_graph; the
    loss is the mean squared residual u_t + u u_x - 0.01 u_xx, Adam."""
    nn = lib.nn
    width, points = (6, 8) if quick else (32, 256)
    model = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))
    same_weights(lib, model)
    collocation = lib.tensor(_data(51).random((points, 2)).astype(np.float32))

    def residual(xt: Any) -> Any:
        p = xt.detach().requires_grad_(True)
        u = model(p)
        (du,) = lib.autograd.grad(u.sum(), p, create_graph=True)
        u_x, u_t = du[:, 0:1], du[:, 1:2]
        u_xx = lib.autograd.grad(u_x.sum(), p, create_graph=True)[0][:, 0:1]
        return ((u_t + u * u_x - 0.01 * u_xx) ** 2).mean()

    return _adam_step(lib, [model], compile_fn(residual), collocation)


def maml(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """MAML on sine regression: an MLP 1-40-40-1 with ReLU, 4 tasks of 10 points; per task one inner
    SGD step (lr 0.01) from autograd.grad(create_graph=True) of the MSE, the adapted weights run by
    func.functional_call; Adam on the summed post-adaptation losses."""
    nn, fn = lib.nn, lib.nn.functional
    width, tasks, shots = (6, 2, 3) if quick else (40, 4, 10)
    model = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
    same_weights(lib, model)
    rng = _data(52)
    xs = [lib.tensor(rng.uniform(-5, 5, (shots, 1)).astype(np.float32)) for _ in range(tasks)]
    amplitudes = rng.uniform(0.5, 3.0, tasks).astype(np.float32)
    ys = [lib.sin(x) * float(a) for x, a in zip(xs, amplitudes)]

    def meta_loss(*batches: Any) -> Any:
        total = 0
        for x, y in zip(batches[:tasks], batches[tasks:]):
            params = dict(model.named_parameters())
            inner = fn.mse_loss(lib.func.functional_call(model, params, (x,)), y)
            grads = lib.autograd.grad(inner, list(params.values()), create_graph=True)
            fast = {name: w - 0.01 * g for (name, w), g in zip(params.items(), grads)}
            total = total + fn.mse_loss(lib.func.functional_call(model, fast, (x,)), y)
        return total

    return _adam_step(lib, [model], compile_fn(meta_loss), *xs, *ys)


def wgan_gp(lib: Any, quick: bool, compile_fn: Callable) -> Callable[[], None]:
    """A WGAN-GP critic step: an MLP critic 64-128-128-1 with LeakyReLU(0.2) on 64 real and 64 fake
    samples, the gradient penalty 10 (|d critic / d x| - 1)^2 at random interpolations (their
    gradient by autograd.grad(create_graph=True)), Adam (lr 1e-4, betas 0.5, 0.9)."""
    nn = lib.nn
    features, width, batch = (4, 6, 3) if quick else (64, 128, 64)
    critic = nn.Sequential(
        nn.Linear(features, width), nn.LeakyReLU(0.2), nn.Linear(width, width), nn.LeakyReLU(0.2), nn.Linear(width, 1),
    )  # fmt: skip
    same_weights(lib, critic)
    rng = _data(53)
    real = lib.tensor(rng.standard_normal((batch, features)).astype(np.float32) + 1.0)
    fake = lib.tensor(rng.standard_normal((batch, features)).astype(np.float32))
    mix = lib.tensor(rng.random((batch, 1)).astype(np.float32))
    optimizer = lib.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))

    def critic_loss(real: Any, fake: Any, mix: Any) -> Any:
        between = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (slope,) = lib.autograd.grad(critic(between).sum(), between, create_graph=True)
        penalty = ((slope.norm(2, dim=1) - 1) ** 2).mean()
        return critic(fake).mean() - critic(real).mean() + 10 * penalty

    loss_of = compile_fn(critic_loss)

    def step() -> None:
        optimizer.zero_grad()
        loss_of(real, fake, mix).backward()
        optimizer.step()

    step.loss = lambda: float(loss_of(real, fake, mix).detach())
    return step


HIGHER_WORKLOADS: dict[str, Callable[..., Callable[[], None]]] = {f.__name__: f for f in (pinn, maml, wgan_gp)}
"""The steps that differentiate gradients, in the order bench_models.py reports them after the others."""
