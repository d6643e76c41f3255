"""Cases for the running sums and products, diagonal, scatter, and the ops composed of primitives
that PyTorch code reaches for (norm, roll, tile, addmm, cross, tensordot, ...)."""

from __future__ import annotations

import numpy as np

import numdiff
from tests.ops.op_cases import Const, OpCase, args, away_from_zero, constant, distinct, normal, uniform

SCATTER_INDEX = np.array([[0, 2, 1], [2, 0, 0]])  # a permutation per column: no repeated targets
INDEX_ADD_INDEX = np.array([0, 2, 0])  # repeats 0: the backward must accumulate


def _scatter(x: np.ndarray, dim: int, index: np.ndarray, src) -> np.ndarray:
    out = x.copy()
    for position in np.ndindex(*index.shape):
        target = list(position)
        target[dim] = index[position]
        out[tuple(target)] = src[position] if isinstance(src, np.ndarray) else src
    return out


def _cumprod_with_zero(rng: np.random.Generator) -> tuple:
    x = rng.uniform(0.5, 1.5, (2, 4))
    x[0, 1] = 0.0  # the gradient must stay exact where the input holds a zero
    x[1, 0] = 0.0
    x[1, 2] = 0.0
    return (x,)


def _cross(a: np.ndarray, b: np.ndarray, dim: int) -> np.ndarray:
    return np.cross(a, b, axis=dim)


def _index_add(x: np.ndarray, dim: int, index: np.ndarray, source: np.ndarray, alpha: float) -> np.ndarray:
    out = x.copy()
    moved = np.moveaxis(out, dim, 0)
    for i, target in enumerate(index):
        moved[target] += alpha * np.moveaxis(source, dim, 0)[i]
    return out


CASES = [
    # ------------------------------------------------------------------ running sums and products
    OpCase("cumsum", "dim1", args(normal(2, 4)), lambda x: numdiff.cumsum(x, 1), lambda x: np.cumsum(x, 1)),
    OpCase("cumsum", "negative-dim", args(normal(3, 2, 2)), lambda x: x.cumsum(-3), lambda x: np.cumsum(x, 0)),
    OpCase("cumsum", "0-d", args(normal()), lambda x: x.cumsum(0), lambda x: x.copy()),
    OpCase("cumprod", "dim0", args(uniform(0.5, 1.5, 4, 3)), lambda x: numdiff.cumprod(x, 0), lambda x: np.cumprod(x, 0)),
    OpCase("cumprod", "zeros", _cumprod_with_zero, lambda x: x.cumprod(1), lambda x: np.cumprod(x, 1)),
    OpCase(
        None, "diff-n2-prepend", args(normal(2, 4), normal(2, 1)),
        lambda x, p: numdiff.diff(x, n=2, dim=1, prepend=p),
        lambda x, p: np.diff(np.concatenate([p, x], 1), n=2, axis=1),
    ),
    OpCase(None, "diff-dim0", args(normal(3, 2)), lambda x: x.diff(dim=0), lambda x: np.diff(x, axis=0)),
    # ------------------------------------------------------------------ diagonals
    OpCase("diagonal", "offset", args(normal(3, 4)), lambda x: x.diagonal(1), lambda x: np.diagonal(x, 1).copy()),
    OpCase(
        "diagonal", "dims-3d", args(normal(3, 2, 4)),
        lambda x: numdiff.diagonal(x, -1, 2, 0), lambda x: np.diagonal(x, -1, 2, 0).copy(),
    ),
    OpCase(
        "diagonal", "adjacent-3d", args(normal(2, 3, 3)),
        lambda x: numdiff.diagonal(x, 0, 1, 2), lambda x: np.diagonal(x, 0, 1, 2).copy(),
    ),
    OpCase(None, "diag-embed", args(normal(3)), lambda v: numdiff.diag(v, -1), lambda v: np.diag(v, -1)),
    OpCase(None, "diag-extract", args(normal(3, 3)), lambda x: x.diag(1), lambda x: np.diag(x, 1).copy()),
    OpCase(None, "trace", args(normal(3, 4)), numdiff.trace, np.trace),
    # ------------------------------------------------------------------ writes at indices
    OpCase(
        "scatter", "src", args(normal(3, 3), SCATTER_INDEX, normal(2, 4)),
        lambda x, i, s: numdiff.scatter(x, 0, i, s),
        lambda x, i, s: _scatter(x, 0, i, s),
    ),
    OpCase(
        "scatter", "value-dim1", args(normal(2, 3), constant(None)),
        lambda x, _: x.scatter(1, numdiff.tensor([[2], [0]]), 1.5),
        lambda x, _: _scatter(x, 1, np.array([[2], [0]]), 1.5),
    ),
    OpCase(
        None, "index_add-alpha", args(normal(3, 2), normal(3, 2)),
        lambda x, s: x.index_add(0, numdiff.tensor(INDEX_ADD_INDEX), s, alpha=2.0),
        lambda x, s: _index_add(x, 0, INDEX_ADD_INDEX, s, 2.0),
    ),
    OpCase(
        None, "index_add-dim1", args(normal(2, 3), normal(2, 3)),
        lambda x, s: numdiff.index_add(x, 1, numdiff.tensor(INDEX_ADD_INDEX), s),
        lambda x, s: _index_add(x, 1, INDEX_ADD_INDEX, s, 1.0),
    ),
    OpCase(
        None, "masked_select-broadcast", args(normal(2, 3), np.array([True, False, True])),
        numdiff.masked_select, lambda x, m: x[np.broadcast_to(m, x.shape)],
    ),
    OpCase(
        None, "take", args(normal(2, 3), np.array([[0, -1], [4, 4]])),
        numdiff.take, lambda x, i: np.take(x, i),
    ),
    # ------------------------------------------------------------------ rearranging
    OpCase(None, "roll-flat", args(normal(2, 3)), lambda x: numdiff.roll(x, 2), lambda x: np.roll(x, 2)),
    OpCase(
        None, "roll-dims", args(normal(2, 3, 2)),
        lambda x: x.roll((1, -1), (0, 2)), lambda x: np.roll(x, (1, -1), (0, 2)),
    ),
    OpCase(None, "tile", args(normal(2, 3)), lambda x: numdiff.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2))),
    OpCase(None, "unbind", args(normal(2, 3)), lambda x: x.unbind(1), lambda x: tuple(x[:, i] for i in range(3))),
    OpCase(None, "narrow", args(normal(2, 5)), lambda x: numdiff.narrow(x, 1, -3, 2), lambda x: x[:, 2:4]),
    OpCase(
        None, "movedim", args(normal(2, 3, 4)),
        lambda x: numdiff.movedim(x, (0, 1), (2, 0)), lambda x: np.moveaxis(x, (0, 1), (2, 0)),
    ),
    OpCase(None, "swapaxes", args(normal(2, 3, 4)), lambda x: x.swapaxes(0, 2), lambda x: np.swapaxes(x, 0, 2)),
    OpCase(
        None, "stacks", args(normal(3), normal(3)),
        lambda a, b: (numdiff.vstack([a, b]), numdiff.hstack([a, b]), numdiff.dstack([a, b])),
        lambda a, b: (np.vstack([a, b]), np.hstack([a, b]), np.dstack([a, b])),
    ),
    OpCase(
        None, "repeat_interleave-int", args(normal(2, 3)),
        lambda x: x.repeat_interleave(2, dim=1), lambda x: np.repeat(x, 2, axis=1),
    ),
    OpCase(
        None, "repeat_interleave-counts", args(normal(3, 2), np.array([2, 0, 1])),
        lambda x, r: numdiff.repeat_interleave(x, r, dim=0), lambda x, r: np.repeat(x, r, axis=0),
    ),
    OpCase(
        None, "meshgrid-xy", args(normal(2), normal(3)),
        lambda a, b: numdiff.meshgrid(a, b, indexing="xy"),
        lambda a, b: tuple(g.copy() for g in np.meshgrid(a, b, indexing="xy")),
    ),
    # ------------------------------------------------------------------ norms and NaN-skipping reductions
    OpCase(None, "norm-fro", args(normal(2, 3)), numdiff.norm, lambda x: np.linalg.norm(x)),
    OpCase(
        None, "norm-p1-dim", args(away_from_zero(2, 3)),
        lambda x: x.norm(1, dim=1, keepdim=True), lambda x: np.abs(x).sum(1, keepdims=True),
    ),
    OpCase(
        None, "norm-p3", args(away_from_zero(2, 3)),
        lambda x: numdiff.norm(x, 3, dim=0), lambda x: (np.abs(x) ** 3).sum(0) ** (1 / 3),
    ),
    OpCase(
        None, "norm-inf", args(distinct(2, 3)), lambda x: numdiff.norm(x, float("inf"), dim=(0, 1)),
        lambda x: np.abs(x).max(),
    ),
    OpCase(
        None, "nansum-nanmean", args(Const(np.array([[1.0, np.nan], [np.nan, 0.0]])), normal(2, 2)),
        lambda m, x: (numdiff.nansum(x + m, 1), numdiff.nanmean(x + m, 0)),
        lambda m, x: (np.nansum(x + m, 1), np.nanmean(x + m, 0)),
    ),
    # ------------------------------------------------------------------ products
    OpCase(
        None, "addmm", args(normal(3), normal(2, 4), normal(4, 3)),
        lambda c, a, b: numdiff.addmm(c, a, b, beta=0.5, alpha=2.0), lambda c, a, b: 0.5 * c + 2.0 * (a @ b),
    ),
    OpCase(
        None, "baddbmm", args(normal(2, 1, 3), normal(2, 2, 4), normal(2, 4, 3)),
        lambda c, a, b: c.baddbmm(a, b, alpha=0.5), lambda c, a, b: c + 0.5 * (a @ b),
    ),
    OpCase(
        None, "addcmul-addcdiv", args(normal(2, 3), normal(3), normal(2, 1), away_from_zero(3, low=0.5)),
        lambda x, a, b, c: (numdiff.addcmul(x, a, b, value=0.5), x.addcdiv(a, c, value=-2.0)),
        lambda x, a, b, c: (x + 0.5 * a * b, x - 2.0 * a / c),
    ),
    OpCase(
        None, "cross-broadcast", args(normal(2, 3), normal(1, 3)),
        lambda a, b: numdiff.cross(a, b, dim=1), lambda a, b: _cross(a, b, 1),
    ),
    OpCase(
        None, "tensordot-lists", args(normal(2, 3, 4), normal(4, 3, 2)),
        lambda a, b: numdiff.tensordot(a, b, ([1, 2], [1, 0])), lambda a, b: np.tensordot(a, b, ([1, 2], [1, 0])),
    ),
    OpCase(
        None, "inner", args(normal(2, 3), normal(4, 3)), numdiff.inner, np.inner,
    ),
]

CASES += [
    OpCase(
        None, "cummax-cummin", args(distinct(2, 4)),
        lambda x: (x.cummax(1).values, numdiff.cummin(x, 0).values),
        lambda x: (np.maximum.accumulate(x, 1), np.minimum.accumulate(x, 0)),
    ),
]
CASES += [
    OpCase(
        None, "diag_embed", args(normal(2, 3)),
        lambda x: numdiff.diag_embed(x, 1, 0, 2),
        lambda x: np.moveaxis(np.stack([np.diag(r, 1) for r in x]), (1, 2), (0, 2)),
    ),
    OpCase(
        None, "cdist", args(normal(3, 2), normal(4, 2)),
        lambda a, b: (
            numdiff.cdist(a, b),
            numdiff.cdist(a, b, p=1.5),
            numdiff.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
        ),
        lambda a, b: (
            np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)),
            (np.abs(a[:, None] - b[None]) ** 1.5).sum(-1) ** (1 / 1.5),
            np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)),
        ),
    ),
]
CASES += [
    OpCase(
        None, "addmm-bias", args(normal(3), normal(2, 4), normal(4, 3)),
        numdiff.addmm, lambda c, a, b: c + a @ b,
    ),
]
