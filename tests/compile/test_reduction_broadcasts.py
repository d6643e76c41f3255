"""A fused group's reduction read back through a one-element reshape or expand.

numdiff.compile inlines a one-element broadcast (a reshape or expand of a single value) into the
fused loop that reads it, and fuses a full sum into the loop that computes its input. When the
broadcast's source was the group's own reduction, the emitter did not see the dependence:
- a 0-d weight's gradient (``x * w.reshape(())``, prelu with one slope, atan2 by a 0-d tensor) was
  reshaped before the group that sums it had run: the backward raised UnboundLocalError;
- ``x * x.sum().reshape(1, 1)``'s backward read its own reduction's output buffer, uninitialised,
  as an input: a silently wrong gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

CASES = {
    "0-d weight by mul": lambda x, w: (x * w.reshape(())).sum(),
    "one-slope prelu": lambda x, w: numdiff.nn.functional.prelu(x, w).sum(),
    "atan2 by a 0-d tensor": lambda x, w: numdiff.atan2(x, w.reshape(())).sum(),
    "own sum broadcast back": lambda x, w: (x * x.sum().reshape(1, 1)).sum() + w.sum(),
    "own sum expanded": lambda x, w: (x * x.sum().reshape(1, 1).expand(4, 3)).mean() * w.reshape(()),
    "mean-centred": lambda x, w: ((x - x.mean()) * w).sum(),
    "normalised by its norm": lambda x, w: (x / x.pow(2).sum().sqrt().reshape(())).sum() * w.reshape(()),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_values_and_gradients_equal_eagers(name, dtype):
    f = CASES[name]
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal((4, 3)).astype(dtype), np.array([0.3], dtype)
    results = []
    compiled = numdiff.compile(f)
    for fn in (f, compiled, compiled):  # eager, the trace's run, the generated program
        x, w = numdiff.tensor(x0, requires_grad=True), numdiff.tensor(w0, requires_grad=True)
        loss = fn(x, w)
        loss.backward()
        results.append((loss.item(), x.grad.numpy(), w.grad.numpy()))
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    for loss, x_grad, w_grad in results[1:]:
        np.testing.assert_allclose(loss, results[0][0], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(x_grad, results[0][1], rtol=rtol, atol=rtol)
        np.testing.assert_allclose(w_grad, results[0][2], rtol=rtol, atol=rtol)
