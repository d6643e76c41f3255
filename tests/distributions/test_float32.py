"""Every case of cases.py with float32 parameters: log_prob, entropy and the moments match
torch.distributions' float32 results to float32 accuracy, in float32."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

from .cases import CASES

torch = pytest.importorskip("torch")


def _params(lib, case):
    return [
        v if i in case.numbers else lib.tensor(np.asarray(v, dtype=np.float32))
        for i, v in enumerate(case.params)
    ]


def _read(d, quantity: str):
    return getattr(d, quantity)() if quantity == "entropy" else getattr(d, quantity)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_float32_values_match_torch(case) -> None:
    ours, theirs = case.build(numdiff, *_params(numdiff, case)), case.build(torch, *_params(torch, case))
    torch.manual_seed(0)
    value = theirs.sample((5,))
    results = [(ours.log_prob(numdiff.tensor(value.numpy())), theirs.log_prob(value))]
    for quantity in ("entropy", "mean", "variance"):
        try:
            reference = _read(theirs, quantity)
        except (NotImplementedError, AttributeError):
            continue
        results.append((_read(ours, quantity), reference))
    for mine, reference in results:
        assert mine.dtype == numdiff.float32
        expected = reference.detach().numpy()
        # 1e-6 relative, or absolute at the largest magnitude (entropies and log-densities are
        # differences of larger terms and may cancel to near zero).
        np.testing.assert_allclose(
            mine.detach().numpy(),
            expected,
            rtol=5e-6,
            atol=5e-6 * max(1.0, np.abs(expected[np.isfinite(expected)]).max(initial=0)),
        )
