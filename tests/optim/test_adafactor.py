"""Adafactor against torch.optim.Adafactor: parameters and factored state after several steps,
for matrices (factored), stacked matrices and vectors (full variance), with each option."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

OPTIONS = [
    {},
    {"weight_decay": 0.1, "maximize": True},
    {"eps": (1e-30, 1e-3), "d": 1.5, "lr": 0.05, "beta2_decay": -0.5},
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adafactor_matches_pytorch(dtype, options):
    rng = np.random.default_rng(4)
    weight0, bias0 = rng.standard_normal((2, 5, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)
    matrix0, pushes = rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal((6, 2, 5, 3)).astype(dtype)
    results = []
    for lib in (numdiff, torch):
        weight, bias, matrix = (lib.tensor(a.copy(), requires_grad=True) for a in (weight0, bias0, matrix0))
        optimizer = lib.optim.Adafactor([weight, bias, matrix], **options)
        for push in pushes:
            optimizer.zero_grad()
            loss = (weight * lib.tensor(push)).sum() + 0.1 * (weight**2).sum() + (bias**3).sum()
            (loss + (matrix @ matrix.T).square().sum()).backward()
            optimizer.step()
        state = optimizer.state_dict()["state"]
        results.append([weight.detach().numpy(), bias.detach().numpy(), matrix.detach().numpy(),
                        state[0]["row_var"].numpy(), state[0]["col_var"].numpy(), state[1]["variance"].numpy(),
                        float(state[2]["step"])])  # fmt: skip
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, **tol)


def test_adafactor_state_dict_round_trip_continues_the_same_steps():
    rng = np.random.default_rng(5)
    start = rng.standard_normal((3, 4))

    def run(steps, resume_at=None):
        w = numdiff.tensor(start.copy(), requires_grad=True)
        optimizer = numdiff.optim.Adafactor([w], lr=0.05)
        for i in range(steps):
            if i == resume_at:
                saved = optimizer.state_dict()
                optimizer = numdiff.optim.Adafactor([w], lr=0.05)
                optimizer.load_state_dict(saved)
            optimizer.zero_grad()
            (w.sin() * (i + 1)).sum().backward()
            optimizer.step()
        return w.detach().numpy()

    np.testing.assert_array_equal(run(5, resume_at=2), run(5))


def test_adafactor_refuses_bad_options_naming_them():
    w = numdiff.zeros(2, 2, requires_grad=True)
    for options, message in [
        ({"lr": -1.0}, r"Adafactor: Learning rate should be >= 0 but is: -1.0"),
        ({"beta2_decay": 0.5}, r"Adafactor: beta2_decay should be <= 0 but is: 0.5"),
        ({"eps": (-1.0, 1e-3)}, r"Adafactor: epsilon1 should be >= 0 but is: -1.0"),
        ({"eps": (None, -1.0)}, r"Adafactor: epsilon2 should be >= 0 but is: -1.0"),
        ({"d": 0.5}, r"Adafactor: Clipping threshold d should be >= 1 but is: 0.5"),
        ({"weight_decay": -0.1}, r"Adafactor: weight_decay should be >= 0 but is: -0.1"),
    ]:
        with pytest.raises(ValueError, match=message):
            numdiff.optim.Adafactor([w], **options)
