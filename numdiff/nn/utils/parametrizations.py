"""numdiff.nn.utils.parametrizations: orthogonal, weight_norm and spectral_norm, registered through
numdiff.nn.utils.parametrize as in PyTorch (each is a Module whose forward computes the tensor)."""

from __future__ import annotations

from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import eye, randn, zeros_like
from numdiff.linalg import householder_product, matrix_exp, qr, solve
from numdiff.nn.functional import normalize
from numdiff.nn.modules import conv
from numdiff.nn.modules.module import Module
from numdiff.nn.utils.parametrize import register_parametrization
from numdiff.ops.joining import cat
from numdiff.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")
# spectral_norm normalizes a transposed convolution's weight along its output channels, dim 1
_TRANSPOSED_CONVS = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") if hasattr(conv, n))


def __dir__() -> list[str]:
    return sorted(__all__)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a's QR factorization with R's diagonal made positive (a unique orthogonal matrix)."""
    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """Maps an unconstrained matrix to one with orthonormal columns (or rows, if wide)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                x = cat([x, x.new_zeros(*x.shape[:-2], n, n - k)], dim=-1)
            a = x - x.mT  # skew-symmetric
            if self.orthogonal_map == "matrix_exp":
                q = matrix_exp(a)
            else:
                identity = eye(n, dtype=a.dtype, device=a.device)
                q = solve(identity - 0.5 * a, identity + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = householder_product(a, tau)
            # the diagonal's signs (+-1) choose each reflection's direction
            q = q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)
        base = self._buffers.get("base")
        if base is not None:
            q = base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix of shape {self.shape} to assign, got {tuple(q.shape)}")
        if "base" not in self._buffers:
            raise NotImplementedError(
                "orthogonal: assigning to the weight needs use_trivialization=True "
                "(the default); without it the map cannot be inverted"
            )
        q_init = q
        n, k = q.shape[-2], q.shape[-1]
        if n < k:
            q = q.mT
            n, k = k, n
        with no_grad():
            if n != k:
                q = cat([q, randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)], dim=-1)
            self.base = _make_orthogonal(q)
            # the parametrization's input whose image is the identity, so forward returns base
            neg_identity = zeros_like(q_init)
            neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_identity


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *, use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` a matrix with orthonormal columns (or rows), kept so during training.

    >>> layer = orthogonal(numdiff.nn.Linear(4, 4))
    >>> numdiff.allclose(layer.weight @ layer.weight.T, numdiff.eye(4), atol=1e-5)
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"orthogonal: module {type(module).__name__} has no parameter or buffer named '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"orthogonal: expected a matrix or a batch of matrices, got a tensor of {weight.ndim} dims")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f"orthogonal: orthogonal_map must be one of {_ORTHOGONAL_MAPS}, got {orthogonal_map!r}")
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, parametrization, unsafe=True)
    return module


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of `v` over every dim but `dim`, kept as size-1 dims (all of v when dim is -1)."""
    if dim == -1:
        return v.norm()
    others = [d for d in range(v.ndim) if d != dim]
    return v.pow(2).sum(dim=others, keepdim=True).sqrt() if others else v.abs()


class _WeightNorm(Module):
    """weight = g * v / ||v||: the magnitude g (original0) and direction v (original1) are learnt apart."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim % weight_v.ndim if self.dim != -1 else -1))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        dim = self.dim % weight.ndim if self.dim != -1 else -1
        return _norm_except_dim(weight, dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as magnitude times direction (``parametrizations.<name>.original0``
    is g, ``original1`` is v), as PyTorch's parametrizations.weight_norm.

    >>> layer = weight_norm(numdiff.nn.Linear(3, 2))
    >>> layer.parametrizations.weight.original0.shape
    numdiff.Size([2, 1])
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value, estimated by power iteration in training."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm: dim={dim} is out of range for a weight of {ndim} dims")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got {n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps))
            self.register_buffer("_v", normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(weight_mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(normalize(weight_mat.mT @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm (estimated by power iteration), as in GANs.

    >>> layer = spectral_norm(numdiff.nn.Linear(20, 40))
    >>> float(numdiff.linalg.matrix_norm(layer.weight, ord=2)) < 1.1
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"spectral_norm: module {type(module).__name__} has no parameter or buffer named '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _TRANSPOSED_CONVS) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
