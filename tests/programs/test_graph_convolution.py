"""A two-layer graph convolutional network on a synthetic citation graph, written as a PyTorch
program and run on numdiff. Stands for pytorch/examples' gcn (and the sparse half of gat): a
row-normalised sparse feature matrix from ``diag(...).to_sparse() @ features``, a renormalised
adjacency ``D^-1/2 (A + I) D^-1/2`` built from ``sparse_coo_tensor``, ``torch.spmm`` in the
layer, NLLLoss on a node split, Adam with weight decay.

Test accuracy must beat chance by a wide margin, and the sparse forward must equal the dense one.
"""

from __future__ import annotations

import numpy as np

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling


def make_graph(nodes=240, features=40, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, nodes)
    prototypes = rng.random((classes, features)) < 0.15
    x = (rng.random((nodes, features)) < 0.03) | (prototypes[labels] & (rng.random((nodes, features)) < 0.5))
    edges = []
    for i in range(nodes):
        same = np.flatnonzero(labels == labels[i])
        edges += [(i, j) for j in rng.choice(same, 3) if j != i]
        edges.append((i, int(rng.integers(nodes))))
    return x.astype(np.float32), labels, np.array(edges).T


class GraphConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(size=(d_in, d_out)))
        self.bias = nn.Parameter(torch.zeros(d_out))
        nn.init.xavier_normal_(self.kernel)

    def forward(self, features, adjacency):
        return torch.spmm(adjacency, torch.mm(features, self.kernel)) + self.bias


class GCN(nn.Module):
    def __init__(self, d_in, hidden, classes, dropout=0.5):
        super().__init__()
        self.conv1, self.conv2, self.dropout = GraphConv(d_in, hidden), GraphConv(hidden, classes), dropout

    def forward(self, features, adjacency):
        h = F.dropout(F.relu(self.conv1(features, adjacency)), self.dropout, self.training)
        return F.log_softmax(self.conv2(h, adjacency), dim=1)


def normalised_inputs(x, edges, nodes):
    features = torch.tensor(x)
    scale = 1 / torch.sum(features, dim=1)
    scale[scale == float("inf")] = 0
    features = torch.diag(scale).to_sparse() @ features
    adjacency = torch.sparse_coo_tensor(edges, torch.ones(edges.shape[1]), (nodes, nodes))
    adjacency = torch.eye(nodes) + adjacency  # dense + sparse is dense, as in PyTorch
    degree = torch.diag(torch.sqrt(1 / torch.sum(adjacency, dim=1))).to_sparse()
    return features.to_sparse(), (degree @ adjacency @ degree).to_sparse()


def test_gcn_learns_node_classes_through_sparse_products():
    torch.manual_seed(0)
    x, labels, edges = make_graph()
    features, adjacency = normalised_inputs(x, edges, len(labels))
    target = torch.tensor(labels)
    order = torch.randperm(len(labels))
    test_idx, train_idx = order[:80], order[80:]
    model = GCN(x.shape[1], 16, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for _ in range(60):
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(features, adjacency)[train_idx], target[train_idx])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        predictions = model(features, adjacency).argmax(1)
        dense_out = model(features.to_dense(), adjacency.to_dense())
    accuracy = float((predictions[test_idx] == target[test_idx]).float().mean())
    assert accuracy > 0.7, accuracy  # chance is 0.25
    np.testing.assert_allclose(model(features, adjacency).detach().numpy(), dense_out.numpy(), rtol=1e-4, atol=1e-5)
