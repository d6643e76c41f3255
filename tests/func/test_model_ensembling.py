"""Model ensembling as PyTorch's tutorial does it: stack_module_state, then numdiff.vmap (torch.vmap
at the top level) over functional_call; gradients reach the stacked parameters."""

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.func import functional_call, stack_module_state


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).relu())


def test_vmapped_ensemble_matches_each_model_and_trains_the_stack():
    numdiff.manual_seed(0)
    models = [Small().eval() for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert params["fc1.weight"].shape == (3, 8, 4) and params["fc1.weight"].is_leaf and params["fc1.weight"].requires_grad
    assert buffers["norm.running_mean"].shape == (3, 8) and not buffers["norm.running_mean"].requires_grad
    x = numdiff.randn(5, 4)

    def one(p, b, data):
        return functional_call(models[0], (p, b), (data,))

    assert numdiff.vmap is numdiff.func.vmap
    out = numdiff.vmap(one, in_dims=(0, 0, None))(params, buffers, x)
    assert out.shape == (3, 5, 3)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert params["fc2.bias"].grad.shape == (3, 3)
    np.testing.assert_allclose(params["fc2.bias"].grad.numpy(), np.full((3, 3), 5.0))
    assert models[0].fc2.bias.grad is None  # the models' own parameters are untouched


def test_stack_module_state_refuses_mixed_models():
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([Small(), nn.Linear(2, 2)])
    with pytest.raises(RuntimeError, match="all in training mode or all in eval mode"):
        stack_module_state([Small(), Small().eval()])
    with pytest.raises(RuntimeError, match="'weight' has different shapes"):
        stack_module_state([nn.Linear(2, 2), nn.Linear(2, 3)])
