"""Fit the coefficients of numdiff/kernels/_vecmath_erf.py and print them (needs mpmath).

Each polynomial is the least-squares fit at 160 Chebyshev nodes, solved in 50-digit arithmetic and
rounded to float64, of:
- y(z) = erf(sqrt(z)) / sqrt(z) - 1 on 0 <= z <= 1 (erf(x) = x + x y(x * x) for |x| <= 1), in z
  (float64) or in 2 z - 1 (float32);
- F(a) = erfc(a) exp(a * a) on [lo, hi], in t = (a - mid) / half, weighted by exp(-a * a): what
  counts is the error of erfc(a) = exp(-a * a) F(a), which 1 - erfc(a) carries into erf.

    python3 tools/fit_erf.py
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def fit(f, lo, hi, degree, weight=None, centred=True, nodes=160):
    """Coefficients, constant first, of the polynomial in t fitted to f on [lo, hi]."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    mid, half = ((lo + hi) / 2, (hi - lo) / 2) if centred else (mp.mpf(0), mp.mpf(1))
    rows, values = [], []
    for k in range(nodes):
        x = (lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes)
        t = (x - mid) / half
        w = weight(x) if weight else 1
        rows.append([w * t**j for j in range(degree + 1)])
        values.append(w * f(x))
    solution, _ = mp.qr_solve(mp.matrix(rows), mp.matrix(values))
    return tuple(float(solution[j]) for j in range(degree + 1))


def small(z):
    return mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1 if z > 0 else 2 / mp.sqrt(mp.pi) - 1


def scaled_erfc(a):
    return mp.erfc(a) * mp.exp(a * a)


def gaussian(a):
    return mp.exp(-a * a)


if __name__ == "__main__":
    tables = {
        "_SMALL64": fit(small, 0, 1, 12, centred=False),
        "_TAIL64_NEAR": fit(scaled_erfc, 1, 2, 14, gaussian),
        "_TAIL64_FAR": fit(scaled_erfc, 2, 6, 14, gaussian),
        "_SMALL32": fit(small, 0, 1, 7),
        "_TAIL32": fit(scaled_erfc, 1, 4, 9, gaussian),
    }
    for name, coefficients in tables.items():
        single = name.endswith("32")
        print(f"{name} = (")
        for c in coefficients:
            print(f"    _F32({float(np.float32(c))!r}),") if single else print(f"    {c!r},")
        print(")")
