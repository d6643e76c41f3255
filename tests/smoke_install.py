"""Smoke test of an installed numdiff, with no extras: every kernel family runs, with backward.

Run by .ci/run in a fresh virtual environment that holds only numdiff and its declared
dependencies, from a folder outside the clone, so a dependency missing from pyproject.toml
(scipy, whose BLAS the GEMM kernels call through Numba) fails here. Not collected by pytest
(its name does not start with test_).

    python smoke_install.py    # prints one line per kernel family, exits non-zero on a failure
    python smoke_install.py --from-source    # allow numdiff imported from a checkout
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import numdiff as nd


def _check(name: str, value: object, expected: object) -> None:
    np.testing.assert_allclose(np.asarray(value), np.asarray(expected), rtol=1e-6, atol=1e-6)
    print(f"ok  {name}")


def main() -> int:
    here = Path(nd.__file__).resolve()
    if "site-packages" not in here.parts and "--from-source" not in sys.argv:
        print(f"numdiff was imported from {here}, not from an installed package")
        return 1
    rng = np.random.default_rng(0)

    # matmul family (GEMM through SciPy's BLAS): d(sum(a @ b))/da = ones @ b^T
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    a = nd.tensor(a_np, requires_grad=True)
    (a @ nd.tensor(b_np)).sum().backward()
    _check("matmul forward and backward", a.grad.numpy(), np.ones((3, 2)) @ b_np.T)

    # conv family: a 1x1 kernel of value k scales the input, so d(sum)/dx = k everywhere
    x = nd.tensor(rng.standard_normal((1, 1, 4, 4)), requires_grad=True)
    w = nd.full((1, 1, 1, 1), 3.0, dtype=nd.float64, requires_grad=True)
    out = nd.nn.functional.conv2d(x, w)
    out.sum().backward()
    _check("conv2d forward", out.detach().numpy(), 3.0 * x.detach().numpy())
    _check("conv2d backward", x.grad.numpy(), np.full((1, 1, 4, 4), 3.0))

    # pooling family: max and average pooling over 2x2 windows
    p = nd.tensor(np.arange(16.0).reshape(1, 1, 4, 4), requires_grad=True)
    (nd.nn.functional.max_pool2d(p, 2) + nd.nn.functional.avg_pool2d(p, 2)).sum().backward()
    expected = np.full((4, 4), 0.25)
    expected[1::2, 1::2] += 1.0  # the max of each window is its bottom-right element
    _check("max_pool2d and avg_pool2d backward", p.grad.numpy()[0, 0], expected)

    # optimizer family: one fused Adam step moves each weight by lr against its gradient's sign
    model = nd.nn.Linear(2, 1)
    opt = nd.optim.Adam(model.parameters(), lr=0.1)
    before = model.weight.detach().numpy().copy()
    loss = model(nd.tensor([[1.0, -1.0]])).sum()
    loss.backward()
    opt.step()
    step = before - model.weight.detach().numpy()
    _check("Adam step", step, 0.1 * np.sign(model.weight.grad.numpy()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
