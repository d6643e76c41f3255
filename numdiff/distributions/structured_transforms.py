"""Transforms that rearrange or build matrices: CatTransform and StackTransform (one transform per
block or slice along a dimension), ReshapeTransform (a new event shape), CorrCholeskyTransform
(reals to the Cholesky factor of a correlation matrix), LowerCholeskyTransform and
PositiveDefiniteTransform (what transform_to gives for lower_cholesky and positive_definite).

    >>> t = CorrCholeskyTransform()
    >>> t(numdiff.zeros(3)).shape  # 3 reals fill the strictly lower triangle of a 3 x 3 factor
    numdiff.Size([3, 3])

All are compositions of numdiff's differentiable ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import numdiff
from numdiff.distributions import constraints
from numdiff.distributions.distribution import sum_rightmost
from numdiff.distributions.transform_base import Transform
from numdiff.nn import _implementations as functional
from numdiff.tensor import Size, Tensor


def _strict_lower_positions(n: int, below: int) -> np.ndarray:
    """Row-major flat positions (i * n + j) of the entries with j <= i - below of an n x n matrix."""
    rows, cols = np.tril_indices(n, -below)
    return rows * n + cols


def tril_to_vector(matrix: Tensor, below: int = 1) -> Tensor:
    """The entries `below` or more places under the diagonal, row by row (PyTorch's
    tril_matrix_to_vec with diag = -below)."""
    n = matrix.shape[-1]
    flat = matrix.reshape(*matrix.shape[:-2], n * n)
    return flat[..., numdiff.tensor(_strict_lower_positions(n, below), device=matrix.device)]


def vector_to_tril(vector: Tensor, below: int = 1) -> Tensor:
    """The n x n matrix holding `vector` in its entries `below` or more places under the diagonal,
    row by row, and zeros elsewhere: a gather from [0, vector], so it is differentiable."""
    count = vector.shape[-1]
    # n (n + 1 - 2 below) / 2 = count, solved for n.
    n = round(((2 * below - 1) + math.sqrt((2 * below - 1) ** 2 + 8 * count)) / 2)
    if len(_strict_lower_positions(n, below)) != count:
        raise ValueError(
            f"vector_to_tril: a last dimension of {count} cannot fill the entries {below} or more places under "
            "the diagonal of a square matrix"
        )
    source = np.zeros(n * n, dtype=np.int64)
    source[_strict_lower_positions(n, below)] = np.arange(1, count + 1)
    padded = functional.pad(vector, [1, 0], value=0.0)
    return padded[..., numdiff.tensor(source, device=vector.device)].reshape(*vector.shape[:-1], n, n)


class CorrCholeskyTransform(Transform):
    """D (D - 1) / 2 reals to the D x D Cholesky factor of a correlation matrix: tanh makes the
    partial correlations, and each row is a stick broken so its squares sum to 1 (the LKJ paper's
    construction, as PyTorch's). Bijective."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = numdiff.finfo(x.dtype).eps
        r = vector_to_tril(x.tanh().clamp(min=-1 + eps, max=1 - eps))
        left = (1 - r.pow(2)).sqrt().cumprod(-1)  # what each row's stick has left after each entry
        r = r + numdiff.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * functional.pad(left[..., :-1], [1, 0], value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        left = functional.pad((1 - (y * y).cumsum(-1))[..., :-1], [1, 0], value=1.0)
        t = tril_to_vector(y) / tril_to_vector(left).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        left = tril_to_vector(1 - (y * y).cumsum(-1), below=2)
        stick_breaking = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + functional.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: Any) -> Size:
        if len(shape) < 1:
            raise ValueError("CorrCholeskyTransform: too few dimensions on input")
        count = shape[-1]
        d = round(math.sqrt(0.25 + 2 * count) + 0.5)
        if d * (d - 1) // 2 != count:
            raise ValueError(
                f"CorrCholeskyTransform: {count} is not the size of a flattened strict lower triangle"
            )
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape: Any) -> Size:
        if len(shape) < 2:
            raise ValueError("CorrCholeskyTransform: too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError(f"CorrCholeskyTransform: the input is not square, shape {tuple(shape)}")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class LowerCholeskyTransform(Transform):
    """Square matrices to lower Cholesky factors: the strict lower triangle kept, the diagonal
    exponentiated (not bijective: the upper triangle is dropped)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive definite ones, L L^T for L = LowerCholeskyTransform()(x)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(numdiff.linalg.cholesky(y))


class ReshapeTransform(Transform):
    """Reshapes the rightmost `in_shape` dimensions of the event to `out_shape` (same number of
    elements); its log-Jacobian is 0."""

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError(
                f"ReshapeTransform: in_shape {tuple(self.in_shape)} and out_shape {tuple(self.out_shape)} "
                "have different numbers of elements"
            )
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape(*x.shape[: x.dim() - len(self.in_shape)], *self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape(*y.shape[: y.dim() - len(self.out_shape)], *self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape: Any) -> Size:
        return _replace_tail("ReshapeTransform", shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Any) -> Size:
        return _replace_tail("ReshapeTransform", shape, self.out_shape, self.in_shape)


def _replace_tail(op: str, shape: Any, tail: Size, replacement: Size) -> Size:
    if len(shape) < len(tail):
        raise ValueError(
            f"{op}: too few dimensions on input, shape {tuple(shape)}, expected a tail {tuple(tail)}"
        )
    cut = len(shape) - len(tail)
    if tuple(shape[cut:]) != tuple(tail):
        raise ValueError(f"{op}: shape mismatch, expected a tail {tuple(tail)} but got {tuple(shape[cut:])}")
    return Size(tuple(shape[:cut]) + tuple(replacement))


class _AlongDim(Transform):
    """What CatTransform and StackTransform share: their transforms, dim, caching and checks."""

    def __init__(self, tseq: list[Transform], dim: int = 0, cache_size: int = 0) -> None:
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError(f"{type(self).__name__}: every element of tseq must be a Transform, got {tseq!r}")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else tseq
        self.dim = dim

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    def _check(self, name: str, value: Tensor, size: int) -> None:
        op = type(self).__name__
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"{op}: dim {self.dim} is out of range for {name} with {value.dim()} dimensions")
        if value.shape[self.dim] != size:
            raise ValueError(f"{op}: {name}.size({self.dim}) = {value.shape[self.dim]} must equal {size}")


class CatTransform(_AlongDim):
    """`tseq[i]` applied to the i-th block of `lengths[i]` entries along `dim`, as torch.cat
    joins them (each length 1 when `lengths` is left out)."""

    def __init__(
        self, tseq: list[Transform], dim: int = 0, lengths: list[int] | None = None, cache_size: int = 0
    ) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(
                f"CatTransform: lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _blocks(self, value: Tensor) -> list[Tensor]:
        starts = np.cumsum([0] + self.lengths[:-1])
        return [value.narrow(self.dim, int(s), n) for s, n in zip(starts, self.lengths)]

    def _call(self, x: Tensor) -> Tensor:
        self._check("x", x, self.length)
        return numdiff.cat([t(block) for t, block in zip(self.transforms, self._blocks(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        self._check("y", y, self.length)
        return numdiff.cat([t.inv(block) for t, block in zip(self.transforms, self._blocks(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        self._check("x", x, self.length)
        self._check("y", y, self.length)
        terms = [
            sum_rightmost(t.log_abs_det_jacobian(xb, yb), self.event_dim - t.event_dim)
            for t, xb, yb in zip(self.transforms, self._blocks(x), self._blocks(y))
        ]
        # The blocks' dim survives the event reduction only when it lies left of the event.
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return numdiff.cat(terms, dim) if dim < 0 else sum(terms[1:], terms[0])


class StackTransform(_AlongDim):
    """`tseq[i]` applied to the i-th slice along `dim`, as torch.stack joins them."""

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, value: Tensor) -> list[Tensor]:
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        self._check("x", x, len(self.transforms))
        return numdiff.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        self._check("y", y, len(self.transforms))
        return numdiff.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        self._check("x", x, len(self.transforms))
        self._check("y", y, len(self.transforms))
        terms = [
            t.log_abs_det_jacobian(xs, ys)
            for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y))
        ]
        return numdiff.stack(terms, self.dim)
