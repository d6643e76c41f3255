"""addmm, baddbmm, addbmm and addmv under CPU autocast, against torch: the first three are on
PyTorch's lower-precision list (their input is lowered with the product, not refused for a
dtype mismatch), addmv is on no list (it runs in float32); gradients reach float32 leaves."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(5)
ARRAYS = {
    "c": _rng.normal(size=(2, 2)), "a": _rng.normal(size=(2, 3)), "b": _rng.normal(size=(3, 2)), "v": _rng.normal(size=3),
    "a3": _rng.normal(size=(4, 2, 3)), "b3": _rng.normal(size=(4, 3, 2)), "c3": _rng.normal(size=(4, 2, 2)),
}  # fmt: skip
CALLS = {
    "addmm": lambda lib, t: lib.addmm(t["c"], t["a"], t["b"], beta=0.5, alpha=2),
    "addmm-row-input": lambda lib, t: lib.addmm(t["c"][0], t["a"], t["b"]),
    "baddbmm": lambda lib, t: lib.baddbmm(t["c3"], t["a3"], t["b3"], alpha=0.5),
    "addbmm": lambda lib, t: lib.addbmm(t["c"], t["a3"], t["b3"], beta=0.5),
    "addmv": lambda lib, t: lib.addmv(t["c"][:, 0], t["a"], t["v"]),
}


def _run(lib, call):
    leaves = {k: lib.tensor(v, dtype=lib.float32, requires_grad=True) for k, v in ARRAYS.items()}
    with lib.autocast("cpu", dtype=lib.bfloat16):
        out = CALLS[call](lib, leaves)
    out.float().sum().backward()
    grads = {k: v.grad.numpy() for k, v in leaves.items() if v.grad is not None}
    return out, grads


@pytest.mark.parametrize("call", sorted(CALLS))
def test_scaled_products_under_autocast_match_torch(call):
    ours, our_grads = _run(numdiff, call)
    theirs, their_grads = _run(torch, call)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    tolerance = 1e-6 if theirs.dtype == torch.float32 else 3e-2  # bfloat16 keeps 8 bits
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(), rtol=tolerance, atol=tolerance)
    assert sorted(our_grads) == sorted(their_grads)
    for name, grad in their_grads.items():
        assert our_grads[name].dtype == np.float32
        np.testing.assert_allclose(our_grads[name], grad, rtol=tolerance, atol=tolerance)


def test_a_mismatched_input_outside_autocast_is_still_refused_by_name():
    with pytest.raises(TypeError, match="addmm: input is numdiff.float64 but the product is numdiff.float32"):
        numdiff.addmm(numdiff.zeros(2, 2, dtype=numdiff.float64), numdiff.ones(2, 3), numdiff.ones(3, 2))
