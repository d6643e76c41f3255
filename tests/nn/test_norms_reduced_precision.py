"""The norms on float16/bfloat16 inputs with float32 parameters, as autocast makes them (a lowered
Linear's bfloat16 output into a float32 LayerNorm): PyTorch computes in float32 and returns the
input's dtype, and rms_norm's default eps is float32's machine epsilon, not bfloat16's. Found by
a probe program under ``autocast("cpu", dtype=bfloat16)``, where numdiff's LayerNorm returned
float32 and rms_norm raised on any bfloat16 input."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn.functional as nf

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # PyTorch's, for rms_norm

_rng = np.random.default_rng(5)
X = (_rng.standard_normal((6, 2, 8)) * 0.05).astype(np.float32)
W = _rng.standard_normal(8).astype(np.float32)
B = _rng.standard_normal(8).astype(np.float32)

CASES = {
    "layer_norm": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (8,), w, b),
    "rms_norm": lambda lib, x, w, b: lib.nn.functional.rms_norm(x, (8,), w),
    "rms_norm_no_weight": lambda lib, x, w, b: lib.nn.functional.rms_norm(x, (8,)),
    "group_norm": lambda lib, x, w, b: lib.nn.functional.group_norm(x.transpose(1, 2), 4, w, b),
    "batch_norm_train": lambda lib, x, w, b: lib.nn.functional.batch_norm(
        x.transpose(1, 2), lib.zeros(8), lib.ones(8), w, b, training=True),
    "batch_norm_eval": lambda lib, x, w, b: lib.nn.functional.batch_norm(
        x.transpose(1, 2), lib.full((8,), 0.01), lib.full((8,), 0.002), w, b, training=False),
    "instance_norm": lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w[:2], bias=b[:2]),
}


def _run(lib, case, dtype_name):
    dtype = getattr(lib, dtype_name)
    x = lib.tensor(X).to(dtype).requires_grad_()
    w, b = lib.tensor(W).requires_grad_(), lib.tensor(B).requires_grad_()
    out = CASES[case](lib, x, w, b)
    (out.float() * lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32)).reshape(out.shape)).sum().backward()
    grads = [None if t.grad is None else t.grad.float().numpy() for t in (x, w, b)]
    return str(out.dtype).split(".")[-1], out.float().detach().numpy(), grads


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_reduced_precision_norm_keeps_input_dtype_and_torchs_values(case, dtype_name):
    expected_dtype, expected, expected_grads = _run(torch, case, dtype_name)
    got_dtype, got, grads = _run(numdiff, case, dtype_name)
    assert got_dtype == expected_dtype == dtype_name
    # numdiff widens to float32 and rounds once, as PyTorch's kernels: the outputs and most
    # gradients are PyTorch's bits. PyTorch's CPU layer_norm sums the float32 weight's gradient in
    # bfloat16 (3 ulps from numdiff's float32 sum here), so gradients get 4 half-type ulps of the
    # largest value; the composed half-type form numdiff took before was 8 ulps off (instance_norm).
    ulp = 2.0**-7 if dtype_name == "bfloat16" else 2.0**-10
    np.testing.assert_allclose(got, expected, rtol=0, atol=ulp * np.abs(expected).max())
    for g, e in zip(grads, expected_grads):
        assert (g is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=0, atol=4 * ulp * np.abs(e).max())


def test_rms_norm_default_eps_of_bfloat16_is_float32s():
    # Activations of 0.05: bfloat16's eps (2**-7) against mean(x**2) ~ 0.0025 would shrink the
    # result by ~20%; float32's eps leaves it at unit root mean square.
    out = nf.rms_norm(numdiff.tensor(X).to(numdiff.bfloat16), 8).float().numpy()
    np.testing.assert_allclose(np.sqrt((out * out).mean(-1)), 1.0, rtol=2e-2)


def test_rms_norm_of_float32_input_with_bfloat16_weight_stays_float32_as_in_torch():
    out = nf.rms_norm(numdiff.tensor(X), 8, numdiff.tensor(W).to(numdiff.bfloat16))
    assert out.dtype is numdiff.float32
    with pytest.raises(ValueError, match=r"rms_norm: weight must have shape \(8,\), got \(4,\)"):
        nf.rms_norm(numdiff.tensor(X).to(numdiff.bfloat16), 8, numdiff.ones(4))
