"""A graph attention network written as a PyTorch program over an edge list, the way tutorials
write GAT without a graph library, and run on numdiff: per-head attention logits gathered at the
edges' ends, a per-destination max by ``scatter_reduce(reduce="amax")`` for a stable softmax,
its denominator by ``scatter_add_``, messages summed into nodes by ``index_add_``, ELU between
two layers, Adam with weight decay on a node-classification loss over the labelled nodes.

The graph is our own: two communities with dense links inside and few across, each node
labelled by its community, features that are noise. The network must label the unlabelled nodes
from the graph alone, and with PyTorch installed the same weights must give PyTorch's losses and
parameters step for step.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

NODES = 16
_rng = np.random.default_rng(64)
_COMMUNITY = np.arange(NODES) % 2
_pairs = [(i, j) for i in range(NODES) for j in range(NODES)
          if i != j and _rng.random() < (0.5 if _COMMUNITY[i] == _COMMUNITY[j] else 0.03)]
SOURCES = np.array([i for i, _ in _pairs] + list(range(NODES)))  # with self-loops
TARGETS = np.array([j for _, j in _pairs] + list(range(NODES)))
FEATURES = _rng.normal(size=(NODES, 6)).astype(np.float32)
FEATURES[:, 0] = np.where(np.arange(NODES) < 4, _COMMUNITY * 2.0 - 1.0, 0.0)  # only 4 nodes show their side
LABELLED = np.arange(4)


def train(torch, steps: int, initial: dict | None = None):
    nn = torch.nn
    F = torch.nn.functional  # noqa: N806 - the usual PyTorch spelling

    class GATLayer(nn.Module):
        def __init__(self, inputs, outputs, heads):
            super().__init__()
            self.heads, self.outputs = heads, outputs
            self.linear = nn.Linear(inputs, outputs * heads, bias=False)
            self.attend_source = nn.Parameter(torch.randn(1, heads, outputs) * 0.3)
            self.attend_target = nn.Parameter(torch.randn(1, heads, outputs) * 0.3)

        def forward(self, x, source, target):
            h = self.linear(x).view(-1, self.heads, self.outputs)
            logits = F.leaky_relu((h * self.attend_source).sum(-1)[source] + (h * self.attend_target).sum(-1)[target], 0.2)
            per_edge = target.unsqueeze(-1).expand(-1, self.heads)
            top = torch.full((x.shape[0], self.heads), -1e9).scatter_reduce(0, per_edge, logits, reduce="amax")
            weights = (logits - top[target]).exp()
            total = torch.zeros(x.shape[0], self.heads).scatter_add_(0, per_edge, weights)
            weights = weights / total[target]
            messages = h[source] * weights.unsqueeze(-1)
            return torch.zeros(x.shape[0], self.heads, self.outputs).index_add_(0, target, messages)

    class GAT(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = GATLayer(6, 8, 2), GATLayer(16, 2, 1)

        def forward(self, x, source, target):
            h = F.elu(self.first(x, source, target).flatten(1))
            return self.second(h, source, target).mean(1)

    torch.manual_seed(0)
    model = GAT()
    if initial is not None:
        model.load_state_dict({name: torch.tensor(value) for name, value in initial.items()})
    start = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2, weight_decay=5e-4)
    x, labels = torch.from_numpy(FEATURES), torch.from_numpy(_COMMUNITY)
    source, target = torch.from_numpy(SOURCES), torch.from_numpy(TARGETS)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x, source, target)[LABELLED], labels[LABELLED])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        accuracy = (model(x, source, target).argmax(1) == labels).float()[4:].mean().item()
    final = {name: value.detach().numpy().copy() for name, value in model.state_dict().items()}
    return losses, final, start, accuracy


def test_graph_attention_labels_nodes_from_their_neighbours():
    losses, _, _, accuracy = train(numdiff, 30)
    assert losses[-1] < 0.5 * losses[0], losses
    assert accuracy >= 0.8, accuracy


def test_graph_attention_matches_pytorch_step_for_step():
    torch = pytest.importorskip("torch")
    expected, expected_final, start, _ = train(torch, 5)
    got, final, _, _ = train(numdiff, 5, start)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for name, value in expected_final.items():
        np.testing.assert_allclose(final[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    print("RESULT", train(numdiff, 30)[3])
