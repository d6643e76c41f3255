"""Randomly drawn calls of torch.nn.functional and its modules, for the differential comparison of
numdiff against PyTorch: each call's keyword arguments, shapes (empty and size-1 dims included)
and layouts (transposed, strided) are drawn from a seeded generator, and each case runs the call
twice: in float32 for the forward values, and in float64 for the output and the first gradients of
every float input. Argument ranges reach past the valid ones (padding over half the kernel, a class
out of range, groups that do not divide), so that bad inputs are drawn too: where torch raises,
numdiff must raise.

`functional_cases(seed, count)` gives the same cases for the same seed; `agree(case, torch,
numdiff)` says how they differ. tests/ops/test_functional_differential.py runs a few hundred;
tools/torch_functional_differential.py runs more. The families live in
differential_functional_losses.py and differential_functional_windows.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tests.ops.differential import outcome

Draw = Callable[[np.random.Generator], tuple[str, Callable[[Any], Any]]]

# float32 results are compared as torch's assert_close does (rtol 1.3e-6, atol 1e-5), relative to
# the array's scale: a convolution's sum in another order moves its rounding.
_RTOL = {"float32": 1e-5, "float64": 1e-10, "float16": 1e-3, "bfloat16": 8e-3}


class Input:
    """A float input: its values and how the tensor is laid out (contiguous, transposed, strided)."""

    def __init__(self, values: np.ndarray, layout: str = "contiguous", grad: bool = True) -> None:
        self.values, self.layout, self.grad = np.asarray(values, dtype=np.float64), layout, grad

    def make(self, lib: Any, dtype: str, requires_grad: bool) -> tuple[Any, Any]:
        """(leaf, tensor): the tensor is a view of the leaf with `layout`."""
        v, layout = self.values, self.layout
        if layout == "transposed" and v.ndim >= 2:
            leaf = _tensor(lib, np.swapaxes(v, -1, -2), dtype, requires_grad)
            return leaf, leaf.transpose(-1, -2)
        if layout == "strided" and v.ndim >= 1:
            leaf = _tensor(lib, np.repeat(v, 2, axis=-1), dtype, requires_grad)
            return leaf, leaf[..., ::2]
        leaf = _tensor(lib, v, dtype, requires_grad)
        return leaf, leaf


def _tensor(lib: Any, values: np.ndarray, dtype: str, requires_grad: bool) -> Any:
    t = lib.tensor(np.ascontiguousarray(values), dtype=getattr(lib, dtype))
    return t.requires_grad_() if requires_grad else t


def layout(rng: np.random.Generator) -> str:
    return str(rng.choice(["contiguous", "contiguous", "transposed", "strided"]))


def normal(rng: np.random.Generator, shape: tuple, lay: str | None = None, grad: bool = True) -> Input:
    return Input(rng.standard_normal(shape), lay if lay is not None else layout(rng), grad)


def _float_outputs(out: Any) -> list:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if hasattr(o, "requires_grad") and o.requires_grad]


def run(lib: Any, fn: Callable[..., Any], inputs: list[Input], grad: bool = True) -> list:
    """fn's outputs over float32 inputs, then (where `grad`) its float64 outputs and the gradients
    of a cosine-weighted sum of them with respect to each leaf that asks for one."""
    results = [fn(lib, *(i.make(lib, "float32", False)[1] for i in inputs))]
    if not grad:
        return results
    pairs = [i.make(lib, "float64", i.grad) for i in inputs]
    out = fn(lib, *(view for _, view in pairs))
    results.append(out)
    total = None
    for o in _float_outputs(out):
        weights = lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)), dtype=o.dtype)
        term = (o * weights).sum()
        total = term if total is None else total + term
    if total is not None:
        total.backward()
    results.extend(leaf.grad for (leaf, _), i in zip(pairs, inputs) if i.grad)
    return results


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        same = isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
        return same and all(_close(x, y) for x, y in zip(a, b))
    if a[:2] != b[:2]:
        return False
    x, y = a[2], b[2]
    if a[0] == "python":
        return x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
    if x.dtype.kind in "biu":
        return bool(np.array_equal(x, y))
    finite = np.isfinite(y)
    if not np.array_equal(finite, np.isfinite(x)) or not np.array_equal(x[~finite], y[~finite], equal_nan=True):
        return False
    tolerance = _RTOL.get(a[0], 1e-10)
    scale = max(float(np.abs(y[finite]).max(initial=0.0)), 1.0)
    return bool(np.allclose(x[finite], y[finite], rtol=tolerance, atol=tolerance * scale))


# numdiff's exceptions for a bad call are of the kinds users already catch; anything else (a
# Numba typing error, an AttributeError from inside) is a crash, reported even where torch raises.
_CLEAR = (ValueError, RuntimeError, TypeError, IndexError, NotImplementedError)


class _UnclearError(Exception):
    """numdiff raised an exception of a kind users do not catch; the message holds its repr."""


def _raising_clearly(case: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def checked(lib: Any) -> Any:
        try:
            return case(lib)
        except _CLEAR:
            raise
        except Exception as error:  # noqa: BLE001 - any other kind is the finding
            raise _UnclearError(repr(error)[:300]) from error

    return checked


# torch's own defects, where it raises for a valid call that numdiff computes (by torch's message),
# and torch's leniency, where it skips a check on an empty batch that numdiff makes (by numdiff's).
_TORCH_RAISES_WRONGLY = (
    "grad_input must be contiguous",  # nll_loss backward of a K-dim non-contiguous input, reduction none
)
_NUMDIFF_CHECKS_EMPTY = ("output_padding", "is not positive")
# A call numdiff refuses with an error that says it lacks the feature is no wrong number; the
# comparison names it apart, so that a driver counts what is missing.
_NOT_IMPLEMENTED = ("not implemented", "not supported")
REFUSED = "refused (not implemented):"


def agree(case: Callable[[Any], Any], torch: Any, numdiff: Any) -> str | None:
    """None when numdiff agrees with torch on `case`: the same values (to each dtype's rounding),
    dtypes and shapes, or both raise and numdiff's exception is a clear one. Else what differs."""
    expected, got = outcome(torch, case), outcome(numdiff, _raising_clearly(case))
    if got[0] == "raised" and got[1].startswith("_UnclearError"):
        return f"numdiff crashed: {got[1]} | torch {expected[0]}: {str(expected[1])[:200]}"
    if expected[0] == got[0] == "raised":
        return None
    if expected[0] == "raised" and any(text in expected[1] for text in _TORCH_RAISES_WRONGLY):
        return None
    if got[0] == "raised" and any(text in got[1] for text in _NUMDIFF_CHECKS_EMPTY) and _empty(expected[1]):
        return None
    if expected[0] == "ok" and got[0] == "raised" and any(text in got[1] for text in _NOT_IMPLEMENTED):
        return f"{REFUSED} {got[1]}"
    if expected[0] != got[0]:
        return f"torch {expected[0]}: {str(expected[1])[:300]} | numdiff {got[0]}: {str(got[1])[:300]}"
    if not _close(got[1], expected[1]):
        return f"torch {_brief(expected[1])} | numdiff {_brief(got[1])}"
    return None


def _empty(plain: Any) -> bool:
    """Whether torch's first result (the float32 forward) is an empty tensor."""
    first = plain[0] if isinstance(plain, list) and plain else plain
    return isinstance(first, tuple) and len(first) == 3 and first[0] != "python" and 0 in first[1]


def _brief(plain: Any) -> str:
    return str(plain)[:400]


def functional_cases(seed: int, count: int, families: dict[str, Draw] | None = None) -> Iterator[tuple[str, Callable[[Any], Any]]]:
    """`count` cases drawn from `seed`, the family of each drawn in turn from `families` (all of
    them by default); each name starts with the seed and the case's number, to draw it again."""
    if families is None:
        from tests.ops.differential_functional_losses import LOSS_DRAWS
        from tests.ops.differential_functional_windows import WINDOW_DRAWS

        families = {**LOSS_DRAWS, **WINDOW_DRAWS}
    names = sorted(families)
    rng = np.random.default_rng(seed)
    for i in range(count):
        family = names[int(rng.integers(len(names)))]
        name, case = families[family](rng)
        yield f"#{seed}.{i} {family}: {name}", case
