"""PPO's clipped objective for a continuous action space, written as a PyTorch program and run on
numdiff: an actor-critic whose actor gives action means, a fixed action variance put on a
diagonal with ``torch.diag_embed``, ``MultivariateNormal(mean, cov)`` for ``log_prob`` and
``entropy``, the probability ratio against the old policy's log-probabilities, ``torch.clamp``ed
surrogate, value loss by ``F.mse_loss``, Adam with one parameter group per head.

The task is our own: the best action is a fixed linear function of the state, and the reward
is minus the squared distance to it. The policy's mean must move toward the best action, and
with PyTorch installed the same weights and rollouts must give PyTorch's losses step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

STATE, ACTION, ROLLOUT, EPOCHS, ROUNDS = 4, 2, 64, 4, 6
_rng = np.random.default_rng(51)
BEST = _rng.normal(size=(STATE, ACTION)) * 0.5
STATES = _rng.normal(size=(ROUNDS, ROLLOUT, STATE)).astype(np.float32)
NOISE = _rng.normal(size=(ROUNDS, ROLLOUT, ACTION)).astype(np.float32)


def train(torch, initial: dict | None = None) -> tuple[list[float], list[float], dict]:
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = nn.Sequential(nn.Linear(STATE, 32), nn.Tanh(), nn.Linear(32, ACTION))
            self.critic = nn.Sequential(nn.Linear(STATE, 32), nn.Tanh(), nn.Linear(32, 1))

        def policy(self, states, variance):
            mean = self.actor(states)
            return torch.distributions.MultivariateNormal(mean, torch.diag_embed(variance.expand_as(mean)))

    torch.manual_seed(0)
    model = ActorCritic()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.Adam([
        {"params": model.actor.parameters(), "lr": 3e-3},
        {"params": model.critic.parameters(), "lr": 1e-2},
    ])  # fmt: skip
    variance = torch.full((ACTION,), 0.1)
    best = torch.tensor(BEST, dtype=torch.float32)
    losses, distances = [], []
    for round_ in range(ROUNDS):
        states = torch.from_numpy(STATES[round_])
        with torch.no_grad():  # the rollout: actions from the old policy with fixed noise
            old = model.policy(states, variance)
            actions = old.mean + variance.sqrt() * torch.from_numpy(NOISE[round_])
            old_log_prob = old.log_prob(actions)
            rewards = -((actions - states @ best) ** 2).sum(-1)
            distances.append(((old.mean - states @ best) ** 2).sum(-1).mean().item())
        for _ in range(EPOCHS):
            policy = model.policy(states, variance)
            values = model.critic(states).squeeze(-1)
            advantages = rewards - values.detach()
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            ratio = torch.exp(policy.log_prob(actions) - old_log_prob)
            surrogate = torch.min(ratio * advantages, torch.clamp(ratio, 0.8, 1.2) * advantages)
            loss = -surrogate.mean() + 0.5 * F.mse_loss(values, rewards) - 0.01 * policy.entropy().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses, distances, start


def test_ppo_policy_moves_toward_the_best_action():
    _, distances, _ = train(numdiff)
    assert distances[-1] < 0.8 * distances[0], distances


def test_ppo_losses_match_pytorch():
    torch = pytest.importorskip("torch")
    expected, expected_distances, start = train(torch)
    got, distances, _ = train(numdiff, start)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-4)


if __name__ == "__main__":
    print("RESULT", train(numdiff)[1][-1])
