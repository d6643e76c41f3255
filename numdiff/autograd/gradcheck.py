"""Check analytic gradients against central differences, in float64, with torch.autograd's
gradcheck / gradgradcheck keyword arguments.

Besides the reverse-mode Jacobian (the default), the checks torch offers by keyword run here
too: reentrancy (`nondet_tol`), zero cotangents giving zero gradients (`check_undefined_grad`;
numdiff represents an undefined gradient as zeros), gradient dtypes, a vmapped backward
(`check_batched_grad`), forward mode through numdiff.func.jvp (`check_forward_ad`,
`check_batched_forward_grad`), and `fast_mode`, which compares one random projection
``u^T J v`` per input instead of the whole Jacobian.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numdiff.creation import randn, zeros_like
from numdiff.tensor import Tensor


class GradcheckError(RuntimeError):
    """Analytic and numerical derivatives disagree."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(inputs: Sequence[Any]) -> list[int]:

    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(fn: Callable, inputs: Sequence[Any]) -> list:

    outputs = [o for o in _as_tuple(fn(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]
    if not outputs:
        raise GradcheckError(
            "gradcheck: the function returned no floating-point tensor, so there is nothing to "
            "differentiate; return the tensor (or tuple of tensors) to check"
        )
    return outputs


def _flat_outputs(fn: Callable, inputs: Sequence[Any]) -> np.ndarray:
    return np.concatenate([np.asarray(o.detach().cpu().numpy(), np.float64).reshape(-1) for o in _outputs(fn, inputs)])


def _numerical_jacobian(fn, inputs, index, eps):
    """d(all outputs, flattened)/d(inputs[index], flattened) by central differences."""
    x = inputs[index]
    data = x._data
    if data.dtype != np.float64:
        raise GradcheckError(f"gradcheck: input {index} has dtype {x.dtype!r}; use float64 inputs")
    flat = data.reshape(-1)
    columns = []
    # fn runs with grad mode on: for gradgradcheck, fn itself differentiates.
    for k in range(flat.size):
        original = flat[k]
        flat[k] = original + eps
        plus = _flat_outputs(fn, inputs)
        flat[k] = original - eps
        minus = _flat_outputs(fn, inputs)
        flat[k] = original
        columns.append((plus - minus) / (2 * eps))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


def _analytic_jacobian(fn, inputs, index, check_dtype=False):
    from numdiff.autograd import grad as autograd_grad

    outputs = _outputs(fn, inputs)
    rows = []
    for out_index, out in enumerate(outputs):
        for k in range(out.numel()):
            seeds = [zeros_like(o) for o in outputs]
            seeds[out_index]._data[np.unravel_index(k, tuple(outputs[out_index].shape))] = 1.0  # any layout
            (g,) = autograd_grad(outputs, [inputs[index]], seeds, retain_graph=True, allow_unused=True)
            if check_dtype and g is not None and g.dtype != inputs[index].dtype:
                raise GradcheckError(
                    f"gradcheck: the gradient of input {index} has dtype {g.dtype!r}, but the input has "
                    f"dtype {inputs[index].dtype!r} (check_grad_dtypes=True)"
                )
            size = inputs[index].numel()
            rows.append(np.zeros(size) if g is None else np.asarray(g.detach().cpu().numpy(), np.float64).reshape(-1))
    return np.stack(rows, axis=0) if rows else np.zeros((0, inputs[index].numel()))


def _compare(what: str, index: int, shape: tuple, analytic, numeric, atol: float, rtol: float) -> str | None:
    """None if they agree, else a message naming the worst element."""
    analytic, numeric = np.atleast_2d(analytic), np.atleast_2d(numeric)
    if numeric.shape != analytic.shape:
        return f"gradcheck: {what} shapes differ for input {index}: analytic {analytic.shape}, numerical {numeric.shape}"
    error = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    if not error.size or (error.max() <= 0 and np.all(np.isfinite(analytic) == np.isfinite(numeric))):
        return None
    worst = np.unravel_index(np.nanargmax(np.where(np.isnan(error), np.inf, error)), error.shape)
    return (
        f"gradcheck: {what} mismatch for input {index} (shape {shape}) at output element {worst[0]}, "
        f"input element {worst[1]}: analytic {analytic[worst]!r}, numerical {numeric[worst]!r} "
        f"(atol={atol}, rtol={rtol})"
    )


def _fast_check(fn, inputs, index, eps, atol, rtol) -> str | None:
    """u^T J v, analytic (one backward) against numerical (one central difference along v)."""
    from numdiff.autograd import grad as autograd_grad

    x = inputs[index]
    data = x._data
    if data.dtype != np.float64:
        raise GradcheckError(f"gradcheck: input {index} has dtype {x.dtype!r}; use float64 inputs")
    rng = np.random.default_rng(index)
    v = rng.standard_normal(data.shape)
    original = data.copy()
    data += eps * v
    plus = _flat_outputs(fn, inputs)
    data[...] = original - eps * v
    minus = _flat_outputs(fn, inputs)
    data[...] = original
    u = rng.standard_normal(plus.size)
    numeric = float(u @ ((plus - minus) / (2 * eps)))
    outputs = _outputs(fn, inputs)
    seeds, start = [], 0
    for o in outputs:
        seeds.append(Tensor(u[start : start + o.numel()].reshape(tuple(o.shape))).to(o.dtype))
        start += o.numel()
    (g,) = autograd_grad(outputs, [x], seeds, allow_unused=True)
    analytic = 0.0 if g is None else float(np.asarray(g.detach().cpu().numpy(), np.float64).reshape(-1) @ v.reshape(-1))
    if abs(analytic - numeric) <= atol + rtol * abs(numeric):
        return None
    return (
        f"gradcheck (fast_mode): for input {index} (shape {tuple(x.shape)}) the projection u^T J v is "
        f"{analytic!r} analytically but {numeric!r} numerically (atol={atol}, rtol={rtol}); run with "
        "fast_mode=False to see the worst element"
    )


def _batched_backward_jacobian(fn, inputs, index) -> np.ndarray:
    """The Jacobian rows from one vmapped backward over the basis of cotangents."""
    from numdiff import func

    others = list(inputs)

    def of_input(x):
        others[index] = x
        return tuple(_outputs(fn, others))

    outputs, vjp_fn = func.vjp(of_input, inputs[index])
    rows = []
    for k, out in enumerate(outputs):
        basis = np.eye(out.numel()).reshape((out.numel(),) + tuple(out.shape))
        cotangents = tuple(
            Tensor(basis).to(o.dtype) if j == k else Tensor(np.zeros((out.numel(),) + tuple(o.shape))).to(o.dtype)
            for j, o in enumerate(outputs)
        )
        (pulled,) = func.vmap(vjp_fn)(cotangents)
        rows.append(np.asarray(pulled.detach().numpy(), np.float64).reshape(out.numel(), -1))
    return np.concatenate(rows, axis=0)


def _forward_jacobian(fn, inputs, index, batched: bool) -> np.ndarray:
    """Jacobian columns J e_k by numdiff.func.jvp, one tangent at a time or vmapped over all."""
    from numdiff import func

    others = list(inputs)
    x = inputs[index].detach()

    def of_input(t):
        others[index] = t
        return tuple(_outputs(fn, others))

    def push(tangent):
        return func.jvp(of_input, (x,), (tangent,))[1]

    basis = Tensor(np.eye(x.numel()).reshape((x.numel(),) + tuple(x.shape))).to(x.dtype)
    if batched:
        pushed = func.vmap(push)(basis)
        return np.concatenate([np.asarray(p.detach().numpy(), np.float64).reshape(x.numel(), -1) for p in pushed], axis=1).T
    columns = []
    for k in range(x.numel()):
        columns.append(np.concatenate([np.asarray(p.detach().numpy(), np.float64).reshape(-1) for p in push(basis[k])]))
    return np.stack(columns, axis=1)


def gradcheck(
    fn: Callable,
    inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    *,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """True if every analytic derivative of `fn` matches central differences.

    Inputs that require grad must be float64. On failure, the error names the input, the worst
    element, and its analytic and numerical values; with ``raise_exception=False`` it returns False.
    The keyword arguments are torch.autograd.gradcheck's (see the module docstring).

    >>> x = numdiff.randn(3, dtype=numdiff.float64, requires_grad=True)
    >>> gradcheck(lambda t: (t * t).sum(), (x,), fast_mode=True)
    True
    """
    if masked:
        raise ValueError("gradcheck: masked=True is for sparse tensors, which numdiff's gradcheck does not take")
    inputs = _as_tuple(inputs)
    wrt = _differentiable(inputs)
    if not wrt:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True"
        )
    for index in wrt:
        message = _check_input(
            fn, inputs, index, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
            check_batched_grad, check_batched_forward_grad, check_forward_ad, check_backward_ad, fast_mode,
        )  # fmt: skip
        if message is not None:
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


def _check_input(
    fn, inputs, index, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
    check_batched_grad, check_batched_forward_grad, check_forward_ad, check_backward_ad, fast_mode,
) -> str | None:  # fmt: skip
    shape = tuple(inputs[index].shape)
    if fast_mode:
        if check_backward_ad:
            return _fast_check(fn, inputs, index, eps, atol, rtol)
        return None
    numeric = _numerical_jacobian(fn, inputs, index, eps)
    if check_backward_ad:
        analytic = _analytic_jacobian(fn, inputs, index, check_grad_dtypes)
        message = _compare("Jacobian", index, shape, analytic, numeric, atol, rtol)
        if message is not None:
            return message
        again = _analytic_jacobian(fn, inputs, index)
        if again.shape == analytic.shape and np.abs(again - analytic).max(initial=0.0) > nondet_tol:
            return (
                f"gradcheck: backward is not reentrant for input {index}: two backward passes over the "
                f"same graph gave gradients differing by {np.abs(again - analytic).max()!r}, more than "
                f"nondet_tol={nondet_tol}"
            )
        message = _zero_cotangents_give_zero(fn, inputs, index)
        if message is None and check_undefined_grad:
            message = _undefined_output_gradients(fn, inputs, index)
        if message is not None:
            return message
        if check_batched_grad:
            message = _compare("batched backward Jacobian", index, shape, _batched_backward_jacobian(fn, inputs, index), analytic, atol, rtol)
            if message is not None:
                return message
    if check_forward_ad:
        message = _compare("forward-mode Jacobian", index, shape, _forward_jacobian(fn, inputs, index, False), numeric, atol, rtol)
        if message is not None:
            return message
    if check_batched_forward_grad:
        message = _compare("batched forward-mode Jacobian", index, shape, _forward_jacobian(fn, inputs, index, True), numeric, atol, rtol)
        if message is not None:
            return message
    return None


def _zero_cotangents_give_zero(fn, inputs, index) -> str | None:
    """A backward is linear in its output gradient: zero in, zero out (torch checks it always)."""
    from numdiff.autograd import grad as autograd_grad

    outputs = _outputs(fn, inputs)
    (g,) = autograd_grad(outputs, [inputs[index]], [zeros_like(o) for o in outputs], allow_unused=True)
    if g is not None and np.any(np.asarray(g.detach().cpu().numpy()) != 0):
        return (
            f"gradcheck: zero output gradients gave a nonzero gradient for input {index}: the backward "
            "is not multiplied by its output gradient"
        )
    return None


def _undefined_output_gradients(fn, inputs, index) -> str | None:
    """With several outputs, each left without a gradient in turn (a several-output Function's
    backward then gets zeros, or None after set_materialize_grads(False)): the backward must run
    and treat it as zero."""
    from numdiff.autograd import grad as autograd_grad

    count = len(_outputs(fn, inputs))
    for skipped in range(count if count > 1 else 0):
        outputs = _outputs(fn, inputs)
        rest = [o for k, o in enumerate(outputs) if k != skipped and (o.requires_grad or o.grad_fn is not None)]
        if not rest:
            continue
        try:
            (g,) = autograd_grad(rest, [inputs[index]], [zeros_like(o) for o in rest], allow_unused=True)
        except Exception as error:  # the user's backward itself failed: report which output did it
            return (
                f"gradcheck: backward failed when output {skipped} had no gradient (undefined), for input "
                f"{index}: {type(error).__name__}: {error} (check_undefined_grad=True)"
            )
        if g is not None and np.any(np.asarray(g.detach().cpu().numpy()) != 0):
            return (
                f"gradcheck: with output {skipped}'s gradient undefined and the others zero, input {index} "
                "got a nonzero gradient: an undefined gradient must count as zero (check_undefined_grad=True)"
            )
    return None


def gradgradcheck(
    fn: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    *,
    gen_non_contig_grad_outputs: bool = False,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """True if the second derivatives of `fn` (its backward, differentiated) match central differences."""
    from numdiff.autograd import grad as autograd_grad

    inputs = _as_tuple(inputs)
    wrt = _differentiable(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, requires_grad=True) for o in _outputs(fn, inputs))
        if gen_non_contig_grad_outputs:
            # Every other element of a buffer twice as long: a strided, writable view.
            grad_outputs = tuple(
                randn(*g.shape, 2, dtype=g.dtype)[..., 0].detach().requires_grad_() for g in grad_outputs
            )
    grad_outputs = _as_tuple(grad_outputs)
    count = len(inputs)

    def first_derivatives(*args):
        xs, vs = args[:count], args[count:]
        outputs = _outputs(fn, xs)
        grads = autograd_grad(outputs, [xs[i] for i in wrt], list(vs), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None and g.requires_grad)

    return gradcheck(
        first_derivatives, inputs + grad_outputs, eps, atol, rtol, raise_exception,
        nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev, fast_mode=fast_mode, masked=masked,
    )  # fmt: skip
