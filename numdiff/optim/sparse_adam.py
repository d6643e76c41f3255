"""SparseAdam: Adam for sparse gradients, updating only the rows each gradient names."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import no_grad
from numdiff.optim._sparse_steps import is_sparse, sparse_adam_step
from numdiff.optim._tensor_update import check_betas
from numdiff.optim.optimizer import Optimizer, SparseGradientError


class SparseAdam(Optimizer):
    """Adam over the rows of sparse gradients (``nn.Embedding(..., sparse=True)``): for each row
    named, ``m = lerp(m, g, 1-beta1)``, ``v = lerp(v, g*g, 1-beta2)``,
    ``p -= lr * sqrt(1-beta2^t)/(1-beta1^t) * m / (sqrt(v) + eps)``; other rows and their moments
    stay as they are. Dense gradients are refused, as in PyTorch.

    >>> emb = numdiff.nn.Embedding(1000, 16, sparse=True)
    >>> opt = numdiff.optim.SparseAdam(emb.parameters(), lr=1e-3)
    >>> emb(numdiff.tensor([3, 7])).sum().backward(); opt.step()
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize})
        complex_params = [
            [g, i] for g, group in enumerate(self.param_groups) for i, p in enumerate(group["params"]) if p.is_complex()
        ]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters")

    @no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One SparseAdam update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if not is_sparse(grad):
                    raise SparseGradientError("SparseAdam does not support dense gradients, please consider Adam instead")
                sparse_adam_step(p, grad, self.state[p], group)
        return loss
