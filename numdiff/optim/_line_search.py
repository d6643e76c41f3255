"""A line search satisfying the strong Wolfe conditions (Nocedal & Wright, Numerical Optimization,
2nd ed., Algorithms 3.5 and 3.6, with the cubic interpolation of equation 3.59).

The search looks along a direction d for a step t with

    f(x + t d) <= f(x) + c1 t f'(0)            (sufficient decrease)
    |f'(t)| <= c2 |f'(0)|                       (curvature, strong form)

where f'(t) = grad f(x + t d) . d. Every trial evaluates the objective and its gradient at
once (one closure call), so f'(t) costs nothing extra.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Evaluate = Callable[[float], tuple[float, Any, float]]  # t -> (f(t), flat gradient, f'(t))


def cubic_minimizer(t0: float, f0: float, g0: float, t1: float, f1: float, g1: float) -> float | None:
    """The minimizer of the cubic through (t0, f0, g0) and (t1, f1, g1) (N&W eq. 3.59), or None
    when that cubic has no minimizer (it is then monotone or degenerate)."""
    if t0 == t1:
        return None
    d1 = g0 + g1 - 3 * (f0 - f1) / (t0 - t1)
    discriminant = d1 * d1 - g0 * g1
    if discriminant < 0:
        return None
    d2 = math.copysign(math.sqrt(discriminant), t1 - t0)
    denominator = g1 - g0 + 2 * d2
    if denominator == 0:
        return None
    return t1 - (t1 - t0) * (g1 + d2 - d1) / denominator


def _safeguarded(candidate: float | None, low: float, high: float, fallback: float) -> float:
    """`candidate` if it is a finite number inside [low, high], else `fallback`."""
    if candidate is None or not math.isfinite(candidate) or not low <= candidate <= high:
        return fallback
    return candidate


def strong_wolfe(
    evaluate: Evaluate,
    t: float,
    f0: float,
    g0: Any,
    dphi0: float,
    *,
    direction_max: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_evaluations: int = 25,
) -> tuple[float, Any, float, int]:
    """Search from step `t` along a descent direction (``dphi0 = f'(0) < 0``).

    Returns ``(f, flat_gradient, step, evaluations)`` at the accepted step; if the evaluation
    budget runs out first, the best point found (lowest f satisfying sufficient decrease, or
    the start) is returned. `direction_max` is max|d|, used to stop once the bracket is narrower
    than `tolerance_change` in parameter space.
    """
    sufficient = lambda step, f: f <= f0 + c1 * step * dphi0  # noqa: E731 - Armijo, read as a predicate
    curvature_ok = lambda dphi: abs(dphi) <= -c2 * dphi0  # noqa: E731
    prev = (0.0, f0, g0, dphi0)
    evaluations = 0
    # Algorithm 3.5: grow the step until the interval (prev, t) is known to bracket a Wolfe step.
    while True:
        f, g, dphi = evaluate(t)
        evaluations += 1
        current = (t, f, g, dphi)
        if not sufficient(t, f) or (evaluations > 1 and f >= prev[1]):
            return _zoom(evaluate, prev, current, f0, dphi0, sufficient, curvature_ok,
                         tolerance_change / direction_max, max_evaluations - evaluations, evaluations)
        if curvature_ok(dphi):
            return f, g, t, evaluations
        if dphi >= 0:
            return _zoom(evaluate, current, prev, f0, dphi0, sufficient, curvature_ok,
                         tolerance_change / direction_max, max_evaluations - evaluations, evaluations)
        if evaluations >= max_evaluations:
            return f, g, t, evaluations
        # Extrapolate: the cubic's minimizer, kept between 1.01x and 11x the last step's reach.
        width = t - prev[0]
        candidate = cubic_minimizer(prev[0], prev[1], prev[3], t, f, dphi)
        prev, t = current, _safeguarded(candidate, t + 0.01 * width, t + 10 * width, t + 10 * width)


def _zoom(
    evaluate: Evaluate,
    low: tuple,
    high: tuple,
    f0: float,
    dphi0: float,
    sufficient: Callable[[float, float], bool],
    curvature_ok: Callable[[float], bool],
    min_width: float,
    budget: int,
    evaluations: int,
) -> tuple[float, Any, float, int]:
    """Algorithm 3.6: shrink [low, high] (endpoints as (t, f, grad, f'(t)); `low` satisfies sufficient
    decrease with the lower f) until a trial step meets both strong Wolfe conditions."""
    while budget > 0 and abs(high[0] - low[0]) > min_width:
        left, right = sorted((low[0], high[0]))
        margin = 0.1 * (right - left)  # keep trials off the ends so the bracket keeps shrinking
        candidate = cubic_minimizer(low[0], low[1], low[3], high[0], high[1], high[3])
        t = _safeguarded(candidate, left + margin, right - margin, 0.5 * (left + right))
        f, g, dphi = evaluate(t)
        evaluations += 1
        budget -= 1
        trial = (t, f, g, dphi)
        if not sufficient(t, f) or f >= low[1]:
            high = trial
            continue
        if curvature_ok(dphi):
            return f, g, t, evaluations
        if dphi * (high[0] - low[0]) >= 0:
            high = low
        low = trial
    return low[1], low[2], low[0], evaluations
