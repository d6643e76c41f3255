"""A training step under numdiff.compile: ``zero_grad()``, ``loss.backward()`` and ``optimizer.step()``
inside the compiled function join the compiled call.

The pattern torch.compile users write::

    @numdiff.compile
    def train_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

While tracing, these three do not run: the trace records them (`HostSteps`), in order, and each
compiled call replays them right after the generated forward: ``zero_grad`` as written, the
backward through the compiled region's generated backward (so ``.grad`` accumulates exactly as
after an eager ``loss.backward()`` on a compiled loss), and the optimizer's own fused step, one
kernel call per parameter group (numdiff.kernels.optim_foreach). The step reads its
``param_groups`` (lr, betas, momentum, weight decay...) and its state (``exp_avg``, momentum
buffers, step counts) at each call, so a scheduler's new lr is honoured with no retrace and the
numbers are eager's, bit for bit.

The replay order is eager's order as long as no recorded op comes after a backward or an
optimizer step (they change ``.grad`` and the parameters, which later ops would read): such a
function (gradient clipping written with tensor ops between backward and step, a second forward)
is refused with `UnsupportedInCompileError` naming the line, and runs eagerly with the usual
warning. So is a backward the replay cannot redo as written (``create_graph``, ``inputs=``, a
root the graph did not compute).
"""

from __future__ import annotations

from typing import Any

from numdiff.compile.trace_events import UnsupportedInCompileError, user_line
from numdiff.tensor import Tensor


class HostSteps:
    """The zero_grad, backward and optimizer steps a trace deferred, in the order it met them."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Any]] = []  # ("run", callable) or ("backward", retain_graph)
        self.roots: list[Tensor] = []  # the trace's tensors backward starts from, until `take_roots`
        self.calls_at_barrier: int | None = None  # forward calls recorded when the first barrier came
        self.barrier_line = ""

    def __bool__(self) -> bool:
        return bool(self.steps)

    def add_step(self, owner: Any, kind: str, run: Any, calls: int) -> None:
        """Defer `run`, ``owner.zero_grad()`` or ``owner.step()`` (`kind`); `calls` ops are recorded so far.

        A zero_grad only resets ``.grad``, which no forward op reads, so ops may follow it."""
        if kind == "step(closure)":
            raise UnsupportedInCompileError(
                f"numdiff.compile: {type(owner).__name__}.step(closure) inside the compiled function re-evaluates "
                f"the model inside the step, which a replay cannot redo (at {user_line()}); call backward() and "
                "step() without a closure"
            )
        self.steps.append(("run", run))
        if kind != "zero_grad":
            self._barrier(calls, f"{type(owner).__name__}.{kind}()")

    def add_backward(self, root: Tensor, options: dict, calls: int, traced: bool) -> None:
        """Defer ``root.backward(**options)``, or refuse it when a replay cannot redo it as written."""
        why = None
        if options["create_graph"]:
            why = "backward(create_graph=True)"
        elif options["inputs"] is not None:
            why = "backward(inputs=...)"
        elif options["gradient"] is not None:
            why = "backward(gradient) with an explicit gradient"
        elif not traced or root._grad_fn is None:
            why = "backward() of a tensor the compiled graph did not compute"
        if why is not None:
            raise UnsupportedInCompileError(
                f"numdiff.compile: {why} inside the compiled function cannot be replayed (at {user_line()}); "
                "call backward() outside, or as plain loss.backward()"
            )
        self.steps.append(("backward", bool(options["retain_graph"])))
        self.roots.append(root)
        self._barrier(calls, "loss.backward()")

    def _barrier(self, calls: int, what: str) -> None:
        if self.calls_at_barrier is None:
            self.calls_at_barrier = calls
            self.barrier_line = f"{what} at {user_line()}"

    def check(self, calls: int) -> None:
        """Refuse a trace that recorded ops after a backward or an optimizer step."""
        if self.calls_at_barrier is not None and calls > self.calls_at_barrier:
            raise UnsupportedInCompileError(
                f"numdiff.compile: the compiled function runs ops after {self.barrier_line}, which read "
                "the gradients or parameters it changes; a compiled call replays backward and the optimizer "
                "step after its whole graph (move those ops before backward, or out of the function)"
            )

    def take_roots(self) -> list[Tensor]:
        """The tensors backward starts from, in order (each becomes an output of the compiled graph);
        the trace's own tensors are let go, so its graph is freed."""
        roots, self.roots = self.roots, []
        return roots

    def replay(self, root_results: list[Tensor]) -> None:
        """Run the deferred steps after a compiled call; `root_results` are this call's roots."""
        roots = iter(root_results)
        for kind, payload in self.steps:
            if kind == "run":
                payload()
            else:
                next(roots).backward(retain_graph=payload)

