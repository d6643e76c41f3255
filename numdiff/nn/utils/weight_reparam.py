"""The hook-based weight reparametrizations of torch.nn.utils: ``weight_norm`` (w = g v / |v|),
``spectral_norm`` (w / sigma(w), sigma by power iteration), their removal, and ``skip_init``.

Each reparametrization replaces the module's `weight` parameter by the parameters it is made of
and recomputes the weight before every forward (a forward pre-hook), so gradients reach g and v
(or the raw weight) through the ops that build it.
"""

from __future__ import annotations

from typing import Any

from numdiff import creation
from numdiff.autograd.grad_mode import no_grad
from numdiff.nn.functional import normalize
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.ops import linalg, norms, products
from numdiff.tensor import Tensor


def _norm_except_dim(v: Tensor, dim: int | None) -> Tensor:
    if dim is None:
        return norms.norm(v)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return norms.norm(v, 2, dim=others, keepdim=True)


class _WeightNorm:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude `<name>_g` and a direction `<name>_v`, with
    weight = g * v / |v| (the norm over every dimension but `dim`) recomputed before each forward."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Parameter):
        raise ValueError(f"weight_norm: module has no parameter {name!r}")
    if any(isinstance(h, _WeightNorm) and h.name == name for h in module._forward_pre_hooks.values()):
        raise RuntimeError(f"weight_norm: cannot register two weight_norm hooks on the same parameter {name!r}")
    hook = _WeightNorm(name, dim)
    del module._parameters[name]
    with no_grad():
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
    object.__setattr__(module, name, hook.compute(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo weight_norm: `module.<name>` is one parameter again, holding the current weight."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _WeightNorm) and hook.name == name:
            weight = hook.compute(module).detach().clone()
            del module._forward_pre_hooks[key]
            del module._parameters[name + "_g"], module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in {type(module).__name__}")


class _SpectralNorm:
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def compute(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self._matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.iterations):
                    v.copy_(normalize(linalg.matmul(matrix.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(linalg.matmul(matrix, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()  # the backward must see these, not later updates
        sigma = products.dot(u, linalg.matmul(matrix, v))
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute(module, do_power_iteration=module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide `module.<name>` by its largest singular value, estimated by `n_power_iterations`
    steps of power iteration per training forward (u and v kept as buffers)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Parameter):
        raise ValueError(f"spectral_norm: module has no parameter {name!r}")
    if n_power_iterations <= 0:
        raise ValueError(f"spectral_norm: expected n_power_iterations to be positive, got {n_power_iterations}")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    hook = _SpectralNorm(name, n_power_iterations, dim, eps)
    matrix = hook._matrix(weight.detach())
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    u = normalize(creation.randn(matrix.shape[0], dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    v = normalize(creation.randn(matrix.shape[1], dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    object.__setattr__(module, name, hook.compute(module, do_power_iteration=True).detach())
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo spectral_norm: `module.<name>` is one parameter again, holding the normalised weight."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _SpectralNorm) and hook.name == name:
            with no_grad():
                weight = hook.compute(module, do_power_iteration=False).detach().clone()
            del module._forward_pre_hooks[key]
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"], module._buffers[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"remove_spectral_norm: spectral_norm of {name!r} not found in {type(module).__name__}")


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)`` with its parameters allocated but not initialised: it is
    built on the meta device (no values computed) and then given empty storage on `device`."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise TypeError(f"skip_init: expected a Module subclass, got {module_cls!r}")
    device = kwargs.pop("device", None) or "cpu"
    return module_cls(*args, device="meta", **kwargs).to_empty(device=device)


__all__ = ["remove_spectral_norm", "remove_weight_norm", "skip_init", "spectral_norm", "weight_norm"]
