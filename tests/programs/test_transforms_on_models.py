"""Per-sample gradients, a vmapped ensemble and batched Jacobians of small models, written as a
PyTorch program (torch.func) and run on numdiff. Stands for pytorch/tutorials' per-sample-gradients,
model-ensembling, Jacobians/Hessians and neural-tangent-kernel tutorials.

Each transform must agree with the loop it replaces.
"""

from __future__ import annotations

import numpy as np

import numdiff as torch
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.func import functional_call, grad, hessian, jacrev, stack_module_state, vmap


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(F.relu(self.conv(x)).flatten(1)), dim=1)


def test_per_sample_gradients_match_the_loop():
    torch.manual_seed(0)
    model = SmallCNN()
    data, targets = torch.randn(6, 1, 8, 8), torch.randint(10, (6,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_of(params, sample, target):
        return F.nll_loss(functional_call(model, params, (sample.unsqueeze(0),)), target.unsqueeze(0))

    batched = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, data, targets)
    for i in range(6):
        loop = torch.autograd.grad(F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]), list(model.parameters()))
        for (name, g_batched), g_loop in zip(batched.items(), loop):
            np.testing.assert_allclose(g_batched[i].numpy(), g_loop.numpy(), atol=1e-5, err_msg=name)


def test_an_ensemble_through_stacked_parameters_matches_each_model():
    torch.manual_seed(1)
    models = [nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)) for _ in range(4)]
    params, buffers = stack_module_state(models)
    x = torch.randn(7, 5)

    def fmodel(params, buffers, x):
        return functional_call(models[0], (params, buffers), (x,))

    same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    minibatches = torch.randn(4, 7, 5)
    different = vmap(fmodel)(params, buffers, minibatches)
    for i, m in enumerate(models):
        np.testing.assert_allclose(same[i].detach().numpy(), m(x).detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(different[i].detach().numpy(), m(minibatches[i]).detach().numpy(), atol=1e-6)


def test_batched_jacobians_and_hessians_match_the_rows():
    torch.manual_seed(2)
    weight, bias = torch.randn(6, 4, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    x = torch.randn(5, 4, dtype=torch.float64)

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    jac = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, x)
    summed = jacrev(lambda w, b, x: predict(w, b, x).sum(0), argnums=2)(weight, bias, x).movedim(1, 0)
    np.testing.assert_allclose(jac.numpy(), summed.numpy(), atol=1e-12)
    hess = vmap(hessian(lambda w, b, x: predict(w, b, x).sum(), argnums=2), in_dims=(None, None, 0))(weight, bias, x)
    y = predict(weight, bias, x).numpy()
    w = weight.numpy()
    expected = np.einsum("bo,oi,oj->bij", -2 * y * (1 - y**2), w, w)
    np.testing.assert_allclose(hess.numpy(), expected, atol=1e-10)
