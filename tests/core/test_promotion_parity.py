"""Exhaustive dtype parity with torch 2.13 (reference only): every pair of the ten dtypes under
every binary op, as tensor-tensor, tensor with a 0-d tensor, and tensor with Python numbers on
either side; then unary ops and reductions over every dtype.

Each case compares the outcome: both raise, or both give the same dtype and values. Where
PyTorch computes, numdiff must compute the same; where PyTorch refuses, numdiff must refuse
too, except where numdiff deliberately accepts more (listed in ACCEPTS_MORE, with the reason).
"""

import itertools
import operator
import warnings

import numpy as np
import pytest
import torch

import numdiff as nd

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SCALARS = [True, 2, -3, 300, 2.5, -0.5]


def _values(name: str) -> list:
    if name == "bool":
        return [True, False, True, True, False]
    if name == "uint8":
        return [0, 1, 2, 3, 200]
    return [0, 1, 2, -3, 5]


def _make(lib, name: str, zero_dim: bool = False):
    values = _values(name)
    return lib.tensor(values[2] if zero_dim else values, dtype=getattr(lib, name))


def _lib(*operands):
    return torch if any(isinstance(x, torch.Tensor) for x in operands) else nd


BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "remainder": operator.mod, "pow": operator.pow,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
    "maximum": lambda a, b: _lib(a, b).maximum(a, b), "minimum": lambda a, b: _lib(a, b).minimum(a, b),
    "atan2": lambda a, b: _lib(a, b).atan2(a, b), "fmod": lambda a, b: _lib(a, b).fmod(a, b),
    "where": lambda a, b: _lib(a, b).where(_lib(a, b).tensor([True, False, True, False, True]), a, b),
    "div trunc": lambda a, b: _lib(a, b).div(a, b, rounding_mode="trunc"),
    "div floor": lambda a, b: _lib(a, b).div(a, b, rounding_mode="floor"),
    "outer": lambda a, b: _lib(a, b).outer(a, b),
    "cat": lambda a, b: _lib(a, b).cat([a, b]),
}
# Python numbers where torch's signature takes only tensors: numdiff accepts them, computing
# what the number as a 0-d tensor would give (torch raises a TypeError about the argument).
ACCEPTS_MORE = {"maximum", "minimum", "atan2", "fmod", "div trunc", "div floor"}


def _outcome(fn, *operands):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn(*operands)
    except (RuntimeError, TypeError, ValueError, ZeroDivisionError, OverflowError, NotImplementedError) as error:
        return "error", error


def _as_float64(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy().astype(np.float64)
    return (t.float() if t.dtype is nd.bfloat16 else t).numpy().astype(np.float64)


def _mismatch(case: str, expected: tuple, got: tuple) -> str | None:
    if expected[0] != got[0]:
        return f"{case}: torch {expected[0]} ({expected[1]!r:.90}), numdiff {got[0]} ({got[1]!r:.160})"
    if expected[0] == "error":
        return None
    t, n = expected[1], got[1]
    if str(t.dtype).removeprefix("torch.") != n.dtype.name:
        return f"{case}: dtype torch {t.dtype}, numdiff {n.dtype}"
    tv, nv = _as_float64(t), _as_float64(n)
    half = t.dtype in (torch.float16, torch.bfloat16)
    if tv.shape != nv.shape or not np.allclose(nv, tv, rtol=1e-2 if half else 1e-6, atol=1e-6, equal_nan=True):
        return f"{case}: values torch {tv.tolist()}, numdiff {nv.tolist()}"
    return None


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_op_over_every_dtype_pair_matches_torch(name):
    op = BINARY[name]
    wrong = []
    for a, b in itertools.product(DTYPES, DTYPES):
        for zero_dim in (False, True):
            case = f"{name}({a}, {b}{' 0-d' if zero_dim else ''})"
            expected = _outcome(op, _make(torch, a), _make(torch, b, zero_dim))
            got = _outcome(op, _make(nd, a), _make(nd, b, zero_dim))
            wrong.append(_mismatch(case, expected, got))
    for a, number in itertools.product(DTYPES, SCALARS):
        for reflected in (False, True):
            case = f"{name}({number!r}, {a})" if reflected else f"{name}({a}, {number!r})"
            if reflected:
                expected = _outcome(op, number, _make(torch, a))
                got = _outcome(op, number, _make(nd, a))
            else:
                expected = _outcome(op, _make(torch, a), number)
                got = _outcome(op, _make(nd, a), number)
            if name in ACCEPTS_MORE and expected[0] == "error" and isinstance(expected[1], TypeError):
                continue
            wrong.append(_mismatch(case, expected, got))
    wrong = [w for w in wrong if w]
    assert not wrong, f"{len(wrong)} cases differ from torch:\n" + "\n".join(wrong[:40])


def _relu(t):
    return _lib(t).relu(t)


UNARY = {
    "neg": lambda t: -t, "invert": lambda t: ~t, "abs": lambda t: t.abs(), "exp": lambda t: t.exp(),
    "log": lambda t: t.log(), "sqrt": lambda t: t.sqrt(), "sin": lambda t: t.sin(), "tanh": lambda t: t.tanh(),
    "sigmoid": lambda t: t.sigmoid(), "floor": lambda t: t.floor(), "ceil": lambda t: t.ceil(),
    "round": lambda t: t.round(), "trunc": lambda t: t.trunc(), "reciprocal": lambda t: t.reciprocal(),
    "rsqrt": lambda t: t.rsqrt(), "erf": lambda t: t.erf(), "log1p": lambda t: t.log1p(),
    "isnan": lambda t: t.isnan(), "isinf": lambda t: t.isinf(), "isfinite": lambda t: t.isfinite(),
    "logical_not": lambda t: t.logical_not(), "nan_to_num": lambda t: _lib(t).nan_to_num(t),
    "sum": lambda t: t.sum(), "sum dim": lambda t: t.sum(1), "prod": lambda t: t.prod(),
    "prod dim": lambda t: t.prod(1), "mean": lambda t: t.mean(), "mean dim": lambda t: t.mean(1),
    "cumsum": lambda t: t.cumsum(1), "cumprod": lambda t: t.cumprod(1), "sum float64": lambda t: t.sum(dtype=_lib(t).float64),
    "cumsum float64": lambda t: t.cumsum(1, dtype=_lib(t).float64), "amax": lambda t: t.amax(), "amin": lambda t: t.amin(1),
    "max": lambda t: t.max(), "min dim": lambda t: t.min(1).values, "var": lambda t: t.var(), "std dim": lambda t: t.std(1),
    "all": lambda t: t.all(), "any dim": lambda t: t.any(1), "argmax dim": lambda t: t.argmax(1),
    "logsumexp": lambda t: t.logsumexp(1), "softmax": lambda t: t.softmax(1), "sort": lambda t: t.sort(1).values,
    "argsort": lambda t: t.argsort(dim=1, stable=True), "unique": lambda t: t.unique(), "nonzero": lambda t: t.nonzero(),
    "count_nonzero": lambda t: _lib(t).count_nonzero(t), "cummax": lambda t: t.cummax(1).values,
    "float": lambda t: t.float(), "half": lambda t: t.half(), "bfloat16": lambda t: t.bfloat16(),
    "long": lambda t: t.long(), "bool": lambda t: t.bool(), "int8": lambda t: t.to(_lib(t).int8),
    "zero_": lambda t: t.clone().zero_(), "fill_ 1": lambda t: t.clone().fill_(1), "fill_ 2.5": lambda t: t.clone().fill_(2.5),
    "add_ 1": lambda t: t.clone().add_(1), "mul_ 2": lambda t: t.clone().mul_(2),
    "masked_fill": lambda t: t.masked_fill(t > 1, 1), "where scalar": lambda t: _lib(t).where(t > 1, t, 0),
    "clamp": lambda t: t.clamp(0, 2), "clamp float": lambda t: t.clamp(0.5, 2.5),
    "setitem int": lambda t: _setitem(t, 1), "setitem float": lambda t: _setitem(t, 2.5),
    "index": lambda t: t[:, 1:], "cat": lambda t: _lib(t).cat([t, t]), "flip": lambda t: t.flip(0),
    "equal": lambda t: _lib(t).tensor(_lib(t).equal(t, t)), "isclose": lambda t: _lib(t).isclose(t, t),
    "item": lambda t: _lib(t).tensor(t[0, 1].item()), "tolist": lambda t: _lib(t).tensor(t.tolist(), dtype=t.dtype),
}


def _setitem(t, value):
    t = t.clone()
    t[0, 1] = value
    return t


def _make_2d(lib, name: str):
    values = [True, False, True, True, False, True] if name == "bool" else (
        [0, 1, 2, 3, 5, 7] if name == "uint8" else [0, 1, 2, -3, 5, -7])
    return lib.tensor(values, dtype=getattr(lib, name)).reshape(2, 3)


# torch refuses these on bool tensors; numdiff computes the obvious result (abs is the identity,
# argmax the first True).
UNARY_ACCEPTS_MORE = {("abs", "bool"), ("argmax dim", "bool")}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op_and_reduction_over_every_dtype_matches_torch(name):
    op = UNARY[name]
    wrong = []
    for dtype in DTYPES:
        expected = _outcome(op, _make_2d(torch, dtype))
        got = _outcome(op, _make_2d(nd, dtype))
        if (name, dtype) in UNARY_ACCEPTS_MORE and expected[0] == "error":
            continue
        wrong.append(_mismatch(f"{name}({dtype})", expected, got))
    wrong = [w for w in wrong if w]
    assert not wrong, f"{len(wrong)} cases differ from torch:\n" + "\n".join(wrong)


def test_refusals_name_the_op_and_the_dtypes():
    with pytest.raises(RuntimeError, match=r"sub: subtraction.*numdiff.bool tensor"):
        nd.tensor([True]) - nd.tensor([1])
    with pytest.raises(NotImplementedError, match=r"floor_divide: not implemented for bool operands"):
        nd.tensor([True]) // True
    with pytest.raises(NotImplementedError, match=r"pow: not implemented for bool operands"):
        nd.tensor([True]) ** nd.tensor([False])
    with pytest.raises(TypeError, match=r"bitwise_left_shift: not implemented for float32"):
        nd.tensor([1.0]) << 1


INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "&=": operator.iand,
    "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift, ">>=": operator.irshift,
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_operator_over_every_dtype_pair_writes_in_place_like_torch(name):
    """x op= y keeps x's dtype and storage (a view of x sees the result), or raises where the
    promoted result cannot be cast back to x's dtype, as in PyTorch. Without __ipow__, __iand__,
    ... Python fell back to x = x op y: a new tensor of the promoted dtype, x's views unchanged."""
    op = INPLACE[name]
    wrong = []
    for a in DTYPES:
        for other in [*((b, False) for b in DTYPES), *((b, True) for b in DTYPES), *((n, None) for n in SCALARS)]:
            value, zero_dim = other
            t_target, n_target = _make(torch, a), _make(nd, a)
            t_view, n_view = t_target[1:], n_target[1:]
            t_other = value if zero_dim is None else _make(torch, value, zero_dim)
            n_other = value if zero_dim is None else _make(nd, value, zero_dim)
            case = f"{a} {name} {value!r}{' 0-d' if zero_dim else ''}"
            expected, got = _outcome(op, t_target, t_other), _outcome(op, n_target, n_other)
            wrong.append(_mismatch(case, expected, got))
            if got[0] == "ok" and (got[1] is not n_target or not np.array_equal(
                    _as_float64(n_view), _as_float64(got[1][1:]), equal_nan=True)):
                wrong.append(f"{case}: not written in place")
            if expected[0] == "ok" and got[0] == "ok":
                wrong.append(_mismatch(case + " (view)", ("ok", t_view), ("ok", n_view)))
    wrong = [w for w in wrong if w]
    assert not wrong, f"{len(wrong)} cases differ from torch:\n" + "\n".join(wrong[:40])
