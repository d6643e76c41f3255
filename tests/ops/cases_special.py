"""Cases for the special-function rules (lgamma, digamma, polygamma, erfc, erfinv, logit, xlog1py, the
modified Bessel functions i0, i0e, i1, i1e and erfcx),
with references from Python's math module and mpmath (arbitrary precision, rounded to float64)."""

from __future__ import annotations

import math

import numpy as np

import numdiff
from tests.ops.op_cases import OpCase, args, away_from_zero, uniform


def _mp(function):
    """An elementwise float64 reference computed by mpmath at 30 digits."""

    def reference(x: np.ndarray) -> np.ndarray:
        import mpmath

        with mpmath.workdps(30):
            return np.vectorize(lambda v: float(function(mpmath, mpmath.mpf(float(v)))), otypes=[np.float64])(x)

    return reference


def _math(function):
    return lambda x: np.vectorize(function, otypes=[np.float64])(x)


def _xlog1py(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x == 0.0, 0.0, x * np.log1p(y))


# Positive and negative non-integer arguments, away from the poles by more than gradcheck's eps.
_GAMMA_DOMAIN = args(lambda rng: rng.uniform(0.2, 0.8, (2, 3)) + rng.integers(-3, 4, (2, 3)))

# Signed magnitudes in [0.1, 12]: both of the Bessel functions' ranges (|x| <= 8 and beyond).
_BESSEL_DOMAIN = args(away_from_zero(2, 3, low=0.1, high=12.0))

CASES = [
    OpCase("lgamma", "both-signs", _GAMMA_DOMAIN, numdiff.lgamma, _math(math.lgamma)),
    OpCase("lgamma", "method-large", args(uniform(5.0, 200.0, 4)), lambda x: x.lgamma(), _math(math.lgamma)),
    OpCase("digamma", "both-signs", _GAMMA_DOMAIN, numdiff.digamma, _mp(lambda mp, v: mp.digamma(v)),
           forward_rtol=1e-13),
    OpCase("digamma", "special-psi", args(uniform(0.1, 30.0, 5)), numdiff.special.psi,
           _mp(lambda mp, v: mp.digamma(v)), forward_rtol=1e-13),
    OpCase("polygamma", "trigamma", _GAMMA_DOMAIN, lambda x: numdiff.polygamma(1, x),
           _mp(lambda mp, v: mp.polygamma(1, v)), forward_rtol=1e-13),
    OpCase("polygamma", "order-3-method", args(uniform(0.3, 12.0, 4)), lambda x: x.polygamma(3),
           _mp(lambda mp, v: mp.polygamma(3, v)), forward_rtol=1e-13),
    OpCase("erfc", "plain", args(uniform(-3.0, 3.0, 2, 3)), numdiff.erfc, _math(math.erfc)),
    OpCase("erfinv", "interior", args(uniform(-0.95, 0.95, 2, 3)), numdiff.erfinv, _mp(lambda mp, v: mp.erfinv(v)),
           tolerances=dict(eps=1e-7, atol=1e-5)),
    # Both signs and both Chebyshev ranges (|x| <= 8 and beyond), away from 0 by more than gradcheck's eps
    # for the scaled ones (exp(-|x|) has a kink there).
    OpCase("i0", "both-ranges", _BESSEL_DOMAIN, numdiff.i0, _mp(lambda mp, v: mp.besseli(0, v)), forward_rtol=1e-14),
    OpCase("i0", "special-method", args(uniform(-3.0, 3.0, 4)), lambda x: x.i0(),
           _mp(lambda mp, v: mp.besseli(0, v)), forward_rtol=1e-14),
    OpCase("i0e", "both-ranges", _BESSEL_DOMAIN, numdiff.special.i0e,
           _mp(lambda mp, v: mp.exp(-abs(v)) * mp.besseli(0, v)), forward_rtol=1e-14),
    OpCase("i1", "both-ranges", _BESSEL_DOMAIN, numdiff.special.i1, _mp(lambda mp, v: mp.besseli(1, v)),
           forward_rtol=1e-14),
    OpCase("i1", "near-zero", args(uniform(-0.5, 0.5, 5)), numdiff.special.i1, _mp(lambda mp, v: mp.besseli(1, v)),
           forward_rtol=1e-14),
    OpCase("i1e", "both-ranges", _BESSEL_DOMAIN, numdiff.special.i1e,
           _mp(lambda mp, v: mp.exp(-abs(v)) * mp.besseli(1, v)), forward_rtol=1e-14),
    OpCase("erfcx", "both-signs", args(uniform(-4.0, 30.0, 2, 4)), numdiff.special.erfcx,
           _mp(lambda mp, v: mp.exp(v * v) * mp.erfc(v)), forward_rtol=1e-14),
    OpCase("logit", "plain", args(uniform(0.05, 0.95, 5)), numdiff.logit, lambda x: np.log(x / (1.0 - x))),
    OpCase("logit", "eps-method", args(uniform(0.2, 0.8, 5)), lambda x: x.logit(eps=0.1),
           lambda x: np.log(np.clip(x, 0.1, 0.9) / (1.0 - np.clip(x, 0.1, 0.9)))),
    OpCase("xlog1py", "broadcast", args(uniform(0.2, 2.0, 2, 3), uniform(-0.5, 2.0, 3)),
           numdiff.special.xlog1py, _xlog1py),
]
