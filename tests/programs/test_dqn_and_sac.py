"""Two off-policy reinforcement-learning updates written as PyTorch programs and run on numdiff,
on replayed batches of our own (states, actions, rewards, done flags drawn once):

- double DQN: ``q(s).gather(1, a)``, a frozen ``copy.deepcopy`` target network picked by the
  online argmax, ``F.smooth_l1_loss``, ``clip_grad_norm_``, RMSprop, and a Polyak soft update
  with ``mul_``/``add_(alpha=)`` under ``no_grad``;
- SAC: twin Q critics on ``cat([s, a])``, a tanh-squashed Gaussian policy whose log-probability
  is ``Normal.log_prob`` corrected by ``2 (log 2 - u - softplus(-2u))``, critics frozen with
  ``requires_grad = False`` for the actor step, a learned temperature ``log_alpha``, and target
  critics moved through ``.data.copy_``.

With PyTorch installed, the same weights and batches must give PyTorch's losses and parameters
step for step; alone, DQN's TD loss must fall on a fixed batch and SAC's temperature must fall while
the policy's entropy is above its target.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import numdiff

_rng = np.random.default_rng(62)
STATES = _rng.normal(size=(8, 32, 4)).astype(np.float32)
NEXT_STATES = _rng.normal(size=(8, 32, 4)).astype(np.float32)
ACTIONS = _rng.integers(0, 3, size=(8, 32))
REWARDS = _rng.normal(size=(8, 32)).astype(np.float32)
DONES = (_rng.random(size=(8, 32)) < 0.2).astype(np.float32)
NOISE = _rng.normal(size=(9, 32, 2)).astype(np.float32)


def _weights(module) -> dict:
    return {name: value.detach().numpy().copy() for name, value in module.state_dict().items()}


def train_dqn(torch, steps: int, initial: dict | None = None, same_batch: bool = False):
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling
    torch.manual_seed(0)
    q = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 3))
    if initial is not None:
        q.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = _weights(q)
    target = copy.deepcopy(q)
    for p in target.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.RMSprop(q.parameters(), lr=1e-3, alpha=0.95, eps=0.01)
    losses = []
    for step in range(steps):
        t = 0 if same_batch else step % len(STATES)
        s, s2 = torch.from_numpy(STATES[t]), torch.from_numpy(NEXT_STATES[t])
        a = torch.from_numpy(ACTIONS[t]).long()
        r, d = torch.from_numpy(REWARDS[t]), torch.from_numpy(DONES[t])
        q_taken = q(s).gather(1, a.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            best = q(s2).argmax(dim=1, keepdim=True)
            y = r + 0.99 * target(s2).gather(1, best).squeeze(1) * (1 - d)
        loss = F.smooth_l1_loss(q_taken, y)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(q.parameters(), 10.0)
        optimizer.step()
        losses.append(loss.item())
        with torch.no_grad():
            for p_target, p in zip(target.parameters(), q.parameters()):
                p_target.mul_(0.9).add_(p, alpha=0.1)
    return losses, _weights(q), start


def train_sac(torch, steps: int, initial: dict | None = None):
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class Actor(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 32), nn.ReLU())
            self.mu, self.log_std = nn.Linear(32, 2), nn.Linear(32, 2)

        def forward(self, s, eps):
            h = self.body(s)
            mu, std = self.mu(h), self.log_std(h).clamp(-5, 2).exp()
            u = mu + std * eps
            correction = (2 * (np.log(2) - u - F.softplus(-2 * u))).sum(-1)
            return torch.tanh(u), torch.distributions.Normal(mu, std).log_prob(u).sum(-1) - correction

    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.q1 = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))
            self.q2 = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, s, a):
            x = torch.cat([s, a], dim=-1)
            return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor, self.critic, self.critic_target = Actor(), Critic(), Critic()
            self.log_alpha = nn.Parameter(torch.zeros(1))

    torch.manual_seed(0)
    agent = Agent()
    if initial is not None:
        agent.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = _weights(agent)
    agent.critic_target.load_state_dict(agent.critic.state_dict())
    actor_opt = torch.optim.Adam(agent.actor.parameters(), lr=3e-4)
    critic_opt = torch.optim.Adam(agent.critic.parameters(), lr=3e-4)
    alpha_opt = torch.optim.Adam([agent.log_alpha], lr=3e-2)
    losses = []
    for t in range(steps):
        s, s2 = torch.from_numpy(STATES[t]), torch.from_numpy(NEXT_STATES[t])
        a, eps = torch.tanh(torch.from_numpy(NOISE[t + 1])), torch.from_numpy(NOISE[t])
        r, d = torch.from_numpy(REWARDS[t]), torch.from_numpy(DONES[t])
        alpha = agent.log_alpha.exp().detach()
        with torch.no_grad():
            a2, log_p2 = agent.actor(s2, eps)
            y = r + 0.99 * (1 - d) * (torch.min(*agent.critic_target(s2, a2)) - alpha * log_p2)
        q1, q2 = agent.critic(s, a)
        critic_loss = F.mse_loss(q1, y) + F.mse_loss(q2, y)
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        for p in agent.critic.parameters():
            p.requires_grad = False
        a_new, log_p = agent.actor(s, eps)
        actor_loss = (alpha * log_p - torch.min(*agent.critic(s, a_new))).mean()
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()
        for p in agent.critic.parameters():
            p.requires_grad = True
        alpha_loss = -(agent.log_alpha * (log_p.detach() - 2.0)).mean()
        alpha_opt.zero_grad()
        alpha_loss.backward()
        alpha_opt.step()
        with torch.no_grad():
            for p_target, p in zip(agent.critic_target.parameters(), agent.critic.parameters()):
                p_target.data.copy_(0.995 * p_target.data + 0.005 * p.data)
        losses += [critic_loss.item(), actor_loss.item(), alpha_loss.item(), agent.log_alpha.item()]
    return losses, _weights(agent), start


def test_dqn_td_loss_falls_on_a_fixed_batch():
    losses, _, _ = train_dqn(numdiff, 40, same_batch=True)
    assert losses[-1] < 0.8 * losses[0], losses


def test_sac_temperature_moves_toward_its_entropy_target():
    losses, _, _ = train_sac(numdiff, 8)
    log_alphas = losses[3::4]
    # the fresh policy's entropy is above the target (-log_p > -2), so the temperature must fall
    assert all(later < earlier for earlier, later in zip(log_alphas, log_alphas[1:])), log_alphas
    assert log_alphas[-1] < 0, log_alphas


@pytest.mark.parametrize("train", [train_dqn, train_sac])
def test_off_policy_updates_match_pytorch(train):
    torch = pytest.importorskip("torch")
    expected, expected_final, start = train(torch, 6)
    got, final, _ = train(numdiff, 6, start)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train_dqn(numdiff, 40, same_batch=True)[0][-1])
