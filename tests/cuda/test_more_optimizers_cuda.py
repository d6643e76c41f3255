"""LBFGS (with its line search) and the tensor-op optimizers take the same steps on CUDA as on the CPU."""

import numpy as np
import pytest

import numdiff

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 2))
Y = (X[:, 0] > 0).astype(np.float64)


def _fit(device: str, make_optimizer) -> list[float]:
    w = numdiff.tensor(np.zeros(2)).to(device).requires_grad_()
    x, y = numdiff.tensor(X).to(device), numdiff.tensor(Y).to(device)
    opt = make_optimizer([w])

    def closure():
        opt.zero_grad()
        z = x @ w
        loss = (numdiff.log(1 + numdiff.exp(-z)) + (1 - y) * z).mean()
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    return w.detach().cpu().tolist()


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda p: numdiff.optim.LBFGS(p, max_iter=4, line_search_fn="strong_wolfe"),
        lambda p: numdiff.optim.NAdam(p, lr=0.1),
        lambda p: numdiff.optim.RAdam(p, lr=0.1),
        lambda p: numdiff.optim.Adamax(p, lr=0.1),
        lambda p: numdiff.optim.Adadelta(p),
        lambda p: numdiff.optim.Rprop(p, lr=0.1),
        lambda p: numdiff.optim.ASGD(p, lr=0.1, t0=1, weight_decay=0.01),
    ],
    ids=["LBFGS", "NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD"],
)
def test_steps_on_the_device_match_the_cpu(make_optimizer):
    np.testing.assert_allclose(_fit("cuda", make_optimizer), _fit("cpu", make_optimizer), rtol=1e-12, atol=1e-14)
