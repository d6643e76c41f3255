"""REINFORCE and actor-critic, written as PyTorch programs and run on numdiff. Stand for
pytorch/examples' reinforcement_learning (reinforce.py, actor_critic.py): a policy network whose
``Categorical(probs)`` samples actions, ``log_prob`` saved per step, discounted returns
normalised with ``eps``, a value head trained with ``smooth_l1_loss``, ``torch.stack(...).sum()``
of per-step losses, and a running reward.

The environment is our own: each of 10 steps shows a cue (which of three lamps is lit, plus
noise) and pays 1 if the agent presses the lit lamp's button. Chance earns 10/3 per episode; the
running reward must climb far above it.

Run as a script (``python3 tests/programs/test_policy_gradient.py SEED``) to print both agents'
running rewards (the corpus runner compares them with PyTorch's).
"""

from __future__ import annotations

import sys

import numpy as np

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.distributions import Categorical

LAMPS, STEPS, GAMMA = 3, 10, 0.9
EPS = np.finfo(np.float32).eps.item()


class Lamps:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def observe(self) -> np.ndarray:
        self.lit = int(self.rng.integers(LAMPS))
        cue = self.rng.normal(0.0, 0.3, LAMPS).astype(np.float32)
        cue[self.lit] += 1.0
        return cue

    def press(self, button: int) -> float:
        return 1.0 if button == self.lit else 0.0


class Policy(nn.Module):
    def __init__(self, critic: bool):
        super().__init__()
        self.affine1 = nn.Linear(LAMPS, 32)
        self.dropout = nn.Dropout(p=0.1)
        self.action_head = nn.Linear(32, LAMPS)
        self.value_head = nn.Linear(32, 1) if critic else None

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        probs = F.softmax(self.action_head(x), dim=-1)
        return probs, (self.value_head(x) if self.value_head is not None else None)


def discounted_returns(rewards: list[float]):
    returns, ret = [], 0.0
    for r in reversed(rewards):
        ret = r + GAMMA * ret
        returns.insert(0, ret)
    returns = torch.tensor(returns)
    return (returns - returns.mean()) / (returns.std() + EPS)


def train(episodes: int, critic: bool, seed: int = 0) -> float:
    """Run `episodes` episodes of REINFORCE (or actor-critic); return the running reward."""
    torch.manual_seed(seed)
    env, policy = Lamps(seed), Policy(critic)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-2)
    running_reward = STEPS / LAMPS
    for _ in range(episodes):
        log_probs, values, rewards = [], [], []
        for _ in range(STEPS):
            probs, value = policy(torch.from_numpy(env.observe()).unsqueeze(0))
            m = Categorical(probs)
            action = m.sample()
            log_probs.append(m.log_prob(action))
            values.append(value)
            rewards.append(env.press(action.item()))
        returns = discounted_returns(rewards)
        if critic:
            policy_losses = [-lp * (ret - v.item()) for lp, v, ret in zip(log_probs, values, returns)]
            value_losses = [F.smooth_l1_loss(v.squeeze(), ret) for v, ret in zip(values, returns)]
            loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
        else:
            loss = torch.cat([-lp * ret for lp, ret in zip(log_probs, returns)]).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running_reward = 0.05 * sum(rewards) + 0.95 * running_reward
    return running_reward


def test_reinforce_learns_to_press_the_lit_lamp():
    assert train(episodes=120, critic=False) > 6.0  # chance: 3.3 of 10


def test_actor_critic_learns_to_press_the_lit_lamp():
    assert train(episodes=120, critic=True) > 6.0


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    print("RESULT", train(300, critic=False, seed=seed), train(300, critic=True, seed=seed))
