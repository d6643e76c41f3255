"""L-BFGS: a quasi-Newton method that keeps the last few steps to shape its search direction."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from numdiff.autograd.grad_mode import enable_grad, no_grad
from numdiff.ops.joining import cat
from numdiff.optim._line_search import strong_wolfe
from numdiff.optim._tensor_update import check_nonnegative
from numdiff.optim.optimizer import Optimizer
from numdiff.tensor import Tensor


def _dot(a: Tensor, b: Tensor) -> float:
    return float((a * b).sum().item())


class LBFGS(Optimizer):
    """L-BFGS (Nocedal & Wright, Algorithm 7.4): each `step(closure)` runs up to `max_iter`
    iterations, each a direction from the two-loop recursion over the last `history_size`
    (step, gradient change) pairs and a step along it: `lr` as it is (the first iteration scales it
    by ``min(1, 1/|g|_1)``), or, with ``line_search_fn="strong_wolfe"``, one that meets the strong
    Wolfe conditions. Iterations stop early once ``max|g| <= tolerance_grad``, or when the step or
    the loss changes by no more than `tolerance_change`. The closure must zero the gradients, compute
    the loss, call backward and return the loss. All parameters form one group.

    >>> opt = numdiff.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); return loss
    >>> opt.step(closure)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_nonnegative({"learning rate": lr})
        if not (isinstance(max_iter, int) and max_iter >= 1):
            raise ValueError(f"Invalid max_iter: {max_iter!r} (expected an int >= 1)")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if not (isinstance(history_size, int) and history_size >= 1):
            raise ValueError(f"Invalid history_size: {history_size!r} (expected an int >= 1)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"only 'strong_wolfe' is supported as line_search_fn, got {line_search_fn!r}")
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    # ----------------------------------------------------------------- flat views of the parameters
    def _flat_grad(self) -> Tensor:
        parts = [
            (p._grad.detach() if p._grad is not None else p.detach() * 0).reshape(-1) for p in self._params
        ]
        return cat(parts)

    def _flat_params(self) -> Tensor:
        return cat([p.detach().reshape(-1) for p in self._params])

    def _set_flat_params(self, flat: Tensor) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            p._data[...] = flat._data[offset : offset + n].reshape(p._data.shape)
            p._version_counter[0] += 1
            offset += n

    def _evaluate(self, closure: Callable[[], Any]) -> float:
        with enable_grad():
            return float(closure())

    @no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to `max_iter` L-BFGS iterations; returns the loss the first closure call gave."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, history_size = group["lr"], group["history_size"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evaluations = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(flat_grad.abs().max().item()) <= tolerance_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs", []), state.get("old_stps", []), state.get("ro", [])
        h_diag = state.get("H_diag", 1.0)
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        iterations = 0
        while iterations < group["max_iter"]:
            iterations += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                # Record the last (step, gradient change) pair if it keeps the inverse Hessian
                # estimate positive definite (curvature y.s > 0), then run the two-loop recursion.
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(y, y)
                alphas = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in reversed(range(len(old_dirs))):
                    alphas[i] = _dot(old_stps[i], q) * ro[i]
                    q = q - old_dirs[i] * alphas[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    beta = _dot(old_dirs[i], d) * ro[i]
                    d = d + old_stps[i] * (alphas[i] - beta)
            prev_flat_grad, prev_loss = flat_grad, loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(flat_grad.abs().sum().item())) * lr
            else:
                t = lr
            directional = _dot(flat_grad, d)
            if directional > -tolerance_change:  # not a descent direction any more
                break

            if group["line_search_fn"] == "strong_wolfe":
                start = self._flat_params()

                def along(step: float, start: Tensor = start, d: Tensor = d) -> tuple[float, Tensor, float]:
                    self._set_flat_params(start + d * step)
                    value = self._evaluate(closure)
                    grad = self._flat_grad()
                    return value, grad, _dot(grad, d)

                loss, flat_grad, t, searched = strong_wolfe(
                    along, t, loss, flat_grad, directional, direction_max=float(d.abs().max().item()),
                    tolerance_change=tolerance_change,
                )
                self._set_flat_params(start + d * t)
            else:
                self._set_flat_params(self._flat_params() + d * t)
                searched = 0
                if iterations != group["max_iter"]:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    searched = 1
            evaluations += searched
            state["func_evals"] += searched

            if iterations == group["max_iter"] or evaluations >= group["max_eval"]:
                break
            if float(flat_grad.abs().max().item()) <= tolerance_grad:
                break
            if float((d * t).abs().max().item()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(
            d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
            prev_flat_grad=prev_flat_grad, prev_loss=prev_loss,
        )
        return first_loss
