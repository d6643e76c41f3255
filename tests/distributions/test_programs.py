"""End-to-end snippets in the shape of pytorch/examples' reinforcement_learning/reinforce.py and a
VAE's reparameterised loss, written once against a library module and run with numdiff and torch."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(2024)
WEIGHTS = {
    "w1": _rng.normal(scale=0.5, size=(4, 16)),
    "b1": _rng.normal(scale=0.1, size=(16,)),
    "w2": _rng.normal(scale=0.5, size=(16, 2)),
    "b2": _rng.normal(scale=0.1, size=(2,)),
}
STATES = _rng.normal(size=(6, 4))
ACTIONS = np.array([0, 1, 1, 0, 1, 0])
REWARDS = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 1.0])


def _leaves(lib):
    return {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in WEIGHTS.items()}


def _policy(lib, params, states):
    hidden = lib.nn.functional.relu(states @ params["w1"] + params["b1"])
    return lib.nn.functional.softmax(hidden @ params["w2"] + params["b2"], dim=1)


def reinforce_loss(lib, params, states, actions, rewards, gamma=0.99):
    """One episode's policy-gradient loss, as reinforce.py's finish_episode computes it."""
    m = lib.distributions.Categorical(_policy(lib, params, states))
    log_probs = m.log_prob(actions)
    returns, running = [], 0.0
    for r in reversed(rewards.tolist()):
        running = r + gamma * running
        returns.insert(0, running)
    returns = lib.tensor(returns, dtype=lib.float64)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    return (-log_probs * returns).sum() - 0.01 * m.entropy().sum()


def test_reinforce_loss_and_gradients_match_torch() -> None:
    results = {}
    for lib in (numdiff, torch):
        params = _leaves(lib)
        states = lib.tensor(STATES, dtype=lib.float64)
        loss = reinforce_loss(lib, params, states, lib.tensor(ACTIONS), REWARDS)
        loss.backward()
        results[lib.__name__] = (
            float(loss.item()),
            {k: np.asarray(p.grad.numpy()) for k, p in params.items()},
        )
    ours, theirs = results["numdiff"], results["torch"]
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    for name in WEIGHTS:
        np.testing.assert_allclose(ours[1][name], theirs[1][name], rtol=1e-10, atol=1e-13)


def test_reinforce_learns_a_two_armed_bandit_with_sampled_actions() -> None:
    numdiff.manual_seed(0)
    logits = numdiff.zeros(2, requires_grad=True)
    optimizer = numdiff.optim.SGD([logits], lr=0.1)
    reward_of = [0.0, 1.0]
    for _ in range(200):
        m = numdiff.distributions.Categorical(logits=logits)
        action = m.sample()
        loss = -m.log_prob(action) * (reward_of[action.item()] - 0.5)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert numdiff.distributions.Categorical(logits=logits).probs[1].item() > 0.9


def vae_loss(lib, mu, log_var, target, noise_seed):
    """Reparameterised reconstruction term plus the KL to a standard normal prior, per example."""
    std = (0.5 * log_var).exp()
    posterior = lib.distributions.Normal(mu, std)
    lib.manual_seed(noise_seed)
    z = posterior.rsample()
    reconstruction = lib.distributions.Independent(lib.distributions.Bernoulli(logits=z), 1).log_prob(target)
    prior = lib.distributions.Normal(lib.zeros_like(mu), lib.ones_like(std))
    kl = lib.distributions.kl_divergence(posterior, prior).sum(-1)
    return (-reconstruction + kl).mean(), kl


def test_vae_kl_term_matches_torch_and_its_loss_trains() -> None:
    mu0, log_var0 = _rng.normal(size=(3, 5)), _rng.normal(scale=0.3, size=(3, 5))
    target = (_rng.uniform(size=(3, 5)) > 0.5).astype(np.float64)
    kls = {}
    for lib in (numdiff, torch):
        mu = lib.tensor(mu0, dtype=lib.float64, requires_grad=True)
        log_var = lib.tensor(log_var0, dtype=lib.float64, requires_grad=True)
        _, kl = vae_loss(lib, mu, log_var, lib.tensor(target, dtype=lib.float64), 0)
        kl.sum().backward()
        kls[lib.__name__] = [np.asarray(t.detach().numpy()) for t in (kl, mu.grad, log_var.grad)]
    for ours, theirs in zip(kls["numdiff"], kls["torch"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-13)

    mu = numdiff.tensor(mu0, dtype=numdiff.float64, requires_grad=True)
    log_var = numdiff.tensor(log_var0, dtype=numdiff.float64, requires_grad=True)
    optimizer = numdiff.optim.Adam([mu, log_var], lr=0.05)
    target_t = numdiff.tensor(target, dtype=numdiff.float64)
    losses = []
    for step in range(60):
        loss, _ = vae_loss(numdiff, mu, log_var, target_t, step)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < np.mean(losses[:10])


def squashed_gaussian_log_prob(lib, mu, log_std, actions):
    """SAC's policy density: a Normal squashed by tanh, scored at actions in (-1, 1)."""
    d = lib.distributions
    policy = d.TransformedDistribution(
        d.Normal(mu, log_std.exp()), [d.transforms.TanhTransform(cache_size=1)]
    )
    return policy.log_prob(actions).sum(-1)


def test_squashed_gaussian_log_prob_and_gradients_match_torch() -> None:
    mu0, log_std0 = _rng.normal(size=(4, 2)), _rng.normal(scale=0.3, size=(4, 2))
    actions = np.tanh(_rng.normal(size=(4, 2)))
    results = {}
    for lib in (numdiff, torch):
        mu = lib.tensor(mu0, dtype=lib.float64, requires_grad=True)
        log_std = lib.tensor(log_std0, dtype=lib.float64, requires_grad=True)
        log_prob = squashed_gaussian_log_prob(lib, mu, log_std, lib.tensor(actions, dtype=lib.float64))
        log_prob.sum().backward()
        results[lib.__name__] = [np.asarray(t.detach().numpy()) for t in (log_prob, mu.grad, log_std.grad)]
    for ours, theirs in zip(results["numdiff"], results["torch"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-13)


def test_sac_actor_steers_its_squashed_actions_to_the_best_one() -> None:
    # The actor loss alpha * log pi(a) - Q(a) with a = tanh(u), u ~ Normal(mu, std) by rsample:
    # the gradient reaches mu through the draw and through the cached pre-tanh value.
    numdiff.manual_seed(0)
    mu = numdiff.zeros(1, requires_grad=True)
    log_std = numdiff.zeros(1, requires_grad=True)
    optimizer = numdiff.optim.Adam([mu, log_std], lr=0.05)
    d = numdiff.distributions
    for _ in range(150):
        policy = d.TransformedDistribution(
            d.Normal(mu, log_std.exp()), [d.transforms.TanhTransform(cache_size=1)]
        )
        actions = policy.rsample((64,))
        q_value = -((actions - 0.6) ** 2)
        loss = (0.01 * policy.log_prob(actions) - q_value).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert abs(np.tanh(mu.item()) - 0.6) < 0.1


def test_gamma_rsample_gradients_fit_a_target_mean() -> None:
    # Implicit reparameterisation: minimise E[(x - 3)^2] over Gamma(softplus(a), softplus(b)).
    numdiff.manual_seed(1)
    raw = numdiff.zeros(2, requires_grad=True)
    optimizer = numdiff.optim.Adam([raw], lr=0.1)
    for _ in range(300):
        concentration, rate = numdiff.nn.functional.softplus(raw).unbind(0)
        x = numdiff.distributions.Gamma(concentration, rate).rsample((128,))
        loss = ((x - 3.0) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    concentration, rate = numdiff.nn.functional.softplus(raw).detach().numpy()
    assert abs(concentration / rate - 3.0) < 0.3  # the mean reached the target
    assert concentration / rate**2 < 1.0  # and the variance shrank from the start's 1.44
