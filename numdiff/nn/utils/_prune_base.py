"""The pruning machinery of numdiff.nn.utils.prune: the base class that reparametrizes a module's
tensor through a mask and a forward pre-hook, and the container that combines repeated pruning."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.creation import ones_like
from numdiff.nn.modules.module import Module
from numdiff.tensor import Tensor


class BasePruningMethod:
    """A way of choosing which entries to prune: subclasses define ``compute_mask(t, default_mask)``
    and ``PRUNING_TYPE`` ('unstructured', 'structured' or 'global')."""

    PRUNING_TYPE: str | None = None
    _tensor_name: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define compute_mask(t, default_mask)")

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor: ``<name>_orig * <name>_mask``."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask.to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None, **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``, combined with earlier pruning."""
        old_key, old_method = None, None
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_key, old_method = key, hook
        orig = getattr(module, name, None)
        if not isinstance(orig, Tensor):
            raise AttributeError(f"prune: module {type(module).__name__} has no tensor named '{name}' to prune")
        if importance_scores is not None and importance_scores.shape != orig.shape:
            raise ValueError(
                f"prune: importance_scores of shape {tuple(importance_scores.shape)} must match "
                f"{name} of shape {tuple(orig.shape)}"
            )
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            container = old_method if isinstance(old_method, PruningContainer) else PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
        scores = importance_scores if importance_scores is not None else orig
        if old_method is None:
            default_mask = ones_like(orig)
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        with no_grad():
            mask = method.compute_mask(scores, default_mask=default_mask)
        if name + "_mask" in module._buffers:
            module._buffers[name + "_mask"] = mask
        else:
            module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        if old_key is not None:
            del module._forward_pre_hooks[old_key]
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """`t` with this method's mask applied (no module involved)."""
        scores = importance_scores if importance_scores is not None else t
        mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the pruned values."""
        name = self._tensor_name
        if name + "_orig" not in module._parameters:
            raise ValueError(f"prune.remove: module {type(module).__name__} has no pruned parameter '{name}'")
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = weight.detach()
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor; each acts on what the earlier left."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1 and not isinstance(methods[0], BasePruningMethod):
            methods = tuple(methods[0])
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method).__name__} is not a BasePruningMethod subclass")
        if method is not None and self._pruning_methods and self._tensor_name != method._tensor_name:
            raise ValueError(
                f"can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                f"to PruningContainer, not '{method._tensor_name}'"
            )
        if not self._pruning_methods:
            self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on the entries (or channels) the earlier mask kept."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.clone()
        if method.PRUNING_TYPE == "unstructured":
            keep: Any = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(f"{type(method).__name__} is structured pruning and must have a 'dim'")
            dim = method.dim % t.dim()
            others = [d for d in range(t.dim()) if d != dim]
            kept = default_mask.sum(dim=others) != 0 if others else default_mask != 0
            keep = tuple(kept if d == dim else slice(None) for d in range(t.dim()))
        elif method.PRUNING_TYPE == "global":
            keep = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"unrecognized PRUNING_TYPE {method.PRUNING_TYPE!r} of {type(method).__name__}")
        partial = method.compute_mask(t[keep], default_mask=default_mask[keep])
        new_mask[keep] = partial.to(dtype=new_mask.dtype)
        return new_mask
