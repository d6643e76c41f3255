"""The __numdiff_function__ protocol: numdiff's public functions hand calls with a protocol operand
to it, under the name users call, and Tensor operators let such an operand take over."""

from __future__ import annotations

import operator

import pytest

import numdiff
import numdiff.nn.functional as F  # noqa: N812 - PyTorch's spelling
from numdiff import overrides


class Logged:
    """A tensor-like that records the calls handed to it."""

    @classmethod
    def __numdiff_function__(cls, func, types, args=(), kwargs=None):
        return ("called", func, args, kwargs or {})

    def __radd__(self, other):
        return ("radd", other)

    def __rmatmul__(self, other):
        return ("rmatmul", other)

    def __rfloordiv__(self, other):
        return ("rfloordiv", other)


class Declines:
    @classmethod
    def __numdiff_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


UNARY = ["exp", "log", "tanh", "sigmoid", "neg", "abs", "sin", "arctan", "relu", "sqrt", "floor", "sum", "mean",
         "flatten", "t", "clone", "isnan", "argmax", "softmax", "cumsum", "squeeze", "logsumexp", "std"]
BINARY = ["add", "sub", "mul", "div", "pow", "fmod", "remainder", "maximum", "atan2", "eq", "gt", "logical_and",
          "bitwise_and", "matmul", "where", "dot", "isclose"]
FUNCTIONAL = ["relu", "leaky_relu", "gelu", "silu", "softplus", "softmax", "log_softmax", "dropout", "layer_norm",
              "linear", "pad", "normalize", "conv2d", "max_pool2d", "adaptive_avg_pool2d", "embedding", "interpolate"]
EXTRA = {"softmax": (0,), "cumsum": (0,), "logsumexp": (0,), "log_softmax": (0,), "layer_norm": ((2,),),
         "pad": ((1, 1),), "max_pool2d": (2,), "adaptive_avg_pool2d": (1,)}


@pytest.mark.parametrize("name", UNARY)
def test_numdiff_functions_hand_a_protocol_operand_over(name: str) -> None:
    fn = getattr(numdiff, name)
    value = Logged()
    tag, func, args, _ = fn(value, *EXTRA.get(name, ()))
    # an alias (arctan) is reported under the name its function has (atan)
    assert tag == "called" and getattr(func, "__wrapped__", func) is getattr(fn, "__wrapped__", fn)
    assert args[0] is value


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("side", [0, 1])
def test_binary_functions_hand_over_from_either_side(name: str, side: int) -> None:
    fn = getattr(numdiff, name)
    value, tensor = Logged(), numdiff.ones(2, dtype=numdiff.int64 if "bitwise" in name else numdiff.float32)
    operands = [tensor, value] if side else [value, tensor]
    if name == "where":
        operands = [tensor > 0, *operands]
    tag, func, args, _ = fn(*operands)
    assert tag == "called" and func is fn and value in args


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_nn_functional_hands_a_protocol_operand_over(name: str) -> None:
    fn = getattr(F, name)
    value = Logged()
    extra = {"linear": (numdiff.ones(2, 2),), "conv2d": (numdiff.ones(1, 1, 1, 1),), "embedding": (numdiff.ones(3, 2),),
             "interpolate": (2,), "softmax": (0,)}.get(name, EXTRA.get(name, ()))
    tag, func, args, _ = fn(value, *extra)
    assert tag == "called" and func is fn and args[0] is value


def test_keyword_arguments_and_list_items_are_looked_at() -> None:
    value = Logged()
    tag, func, args, kwargs = numdiff.add(numdiff.ones(2), value, alpha=2)
    assert func is numdiff.add and kwargs == {"alpha": 2}
    tag, func, args, _ = numdiff.cat([numdiff.ones(2), value])
    assert func is numdiff.cat and args[0][1] is value
    tag, func, args, kwargs = F.linear(numdiff.ones(2, 2), weight=value)
    assert func is F.linear and kwargs == {"weight": value}


@pytest.mark.parametrize(("op", "expected"), [
    (operator.add, "called"), (operator.sub, "called"), (operator.mul, "called"), (operator.truediv, "called"),
    (operator.pow, "called"), (operator.lt, "called"), (operator.eq, "called"), (operator.mod, "called"),
    (operator.matmul, "rmatmul"), (operator.floordiv, "rfloordiv"),
])
def test_tensor_operators_let_a_protocol_operand_take_over(op, expected: str) -> None:
    result = op(numdiff.ones(2), Logged())
    assert result[0] == expected


def test_a_type_that_declines_gets_a_type_error_naming_the_function() -> None:
    with pytest.raises(TypeError, match="exp: no implementation for the operand types \\['Declines'\\]"):
        numdiff.exp(Declines())
    with pytest.raises(TypeError, match="matmul: no implementation"):
        numdiff.matmul(numdiff.ones(2), Declines())


def test_protocol_queries() -> None:
    assert overrides.has_numdiff_function([numdiff.ones(1), [Logged()]])
    assert not overrides.has_numdiff_function([numdiff.ones(1), 2.0, [numdiff.ones(1)]])
    assert overrides.is_overridable(Logged()) and not overrides.is_overridable(numdiff.ones(1))
    assert overrides.handle_torch_function is overrides.handle_numdiff_function
