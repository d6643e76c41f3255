"""What numdiff's exported functions cost on top of their implementations (issue 25's no-regression
goal): one wrapper frame at the public entry, however many of the protocol hand-over, out= and
NumPy's argument names a function takes, no helper calls for plain arguments, and none at all when
numdiff's own layers call the implementations."""

from __future__ import annotations

from typing import Any

import pytest

import numdiff
import numdiff.nn.functional as F  # noqa: N812 - PyTorch's spelling
from numdiff import nn
from numdiff.nn import _implementations
from numdiff.ops import conv as conv_ops
from numdiff.ops import reduction
from tests.python_calls import calls_into

WRAPPER_FILES = ("numdiff/overrides.py", "numdiff/_numpy_names.py", "numdiff/_out_argument.py")


def _wrapper_frames(fn: Any) -> list[str]:
    """The export wrappers in `fn`'s ``__wrapped__`` chain (numdiff's host-function door aside)."""
    frames = []
    while fn is not None:
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_filename.endswith(WRAPPER_FILES):
            frames.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}")
        fn = getattr(fn, "__wrapped__", None)
    return frames


def test_every_exported_function_has_at_most_one_wrapper() -> None:
    stacked = {}
    for name in numdiff.__all__:
        fn = getattr(numdiff, name, None)
        if callable(fn) and not isinstance(fn, type) and len(_wrapper_frames(fn)) > 1:
            stacked[name] = _wrapper_frames(fn)
    assert stacked == {}


def test_sum_takes_numpy_names_out_and_a_protocol_operand_through_one_frame() -> None:
    assert numdiff.sum.__wrapped__ is reduction.sum
    x = numdiff.arange(6.0).reshape(2, 3)
    assert numdiff.sum(x, axis=1, keepdims=True).shape == (2, 1)
    out = numdiff.empty(3)
    assert numdiff.sum(x, dim=0, out=out) is out and out.tolist() == [3.0, 5.0, 7.0]
    with pytest.raises(TypeError, match="sum\\(\\) got both 'dim' and 'axis'"):
        numdiff.sum(x, dim=0, axis=1)
    with numdiff.no_grad():
        assert numdiff.sum(x, axis=0, out=out) is out


def test_plain_arguments_cost_no_helper_call_in_the_protocol_check() -> None:
    x, w = numdiff.ones(1, 2, 5, 5), numdiff.ones(3, 2, 3, 3)
    call = lambda: F.conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 1)  # noqa: E731
    call()  # the first call of an argument type looks it up once
    # the wrapper itself: Tensors, None, ints and tuples of ints are looked up inline
    assert calls_into(("numdiff/overrides.py",), call) == ["public"]


@pytest.mark.parametrize(("layer", "shape"), [
    (nn.Linear(3, 2), (4, 3)), (nn.Conv1d(2, 3, 3), (1, 2, 8)), (nn.Conv2d(2, 3, 3, padding=1), (1, 2, 6, 6)),
    (nn.Conv3d(2, 3, 3), (1, 2, 5, 5, 5)), (nn.ConvTranspose1d(2, 3, 3), (1, 2, 5)),
    (nn.ConvTranspose2d(2, 3, 3, stride=2), (1, 2, 4, 4)), (nn.ConvTranspose3d(2, 3, 2), (1, 2, 3, 3, 3)),
    (nn.MaxPool1d(2), (1, 2, 8)), (nn.MaxPool2d(2), (1, 2, 6, 6)), (nn.MaxPool3d(2), (1, 2, 4, 4, 4)),
    (nn.AvgPool1d(2), (1, 2, 8)), (nn.AvgPool2d(2), (1, 2, 6, 6)), (nn.AvgPool3d(2), (1, 2, 4, 4, 4)),
    (nn.AdaptiveAvgPool1d(3), (1, 2, 8)), (nn.AdaptiveAvgPool2d(3), (1, 2, 6, 6)),
    (nn.AdaptiveAvgPool3d(2), (1, 2, 4, 4, 4)), (nn.AdaptiveMaxPool2d(3), (1, 2, 6, 6)),
    (nn.AdaptiveMaxPool3d(2), (1, 2, 4, 4, 4)),
])  # fmt: skip
def test_numdiff_layers_call_the_implementations_without_the_export_wrapper(layer: nn.Module, shape: tuple[int, ...]) -> None:
    x = numdiff.randn(*shape)
    assert calls_into(("numdiff/overrides.py", "numdiff/_out_argument.py"), lambda: layer(x)) == []
    assert numdiff.allclose(layer(x), layer.forward(x))


class Logged:
    @classmethod
    def __numdiff_function__(cls, func, types, args=(), kwargs=None):
        return ("called", func, args, kwargs or {})


@pytest.mark.parametrize("name", ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "max_pool2d",
                                  "avg_pool3d", "adaptive_avg_pool2d", "adaptive_max_pool3d"])
def test_an_implementation_layers_call_still_hands_a_protocol_operand_over(name: str) -> None:
    implementation = getattr(_implementations, name)
    assert implementation is getattr(F, name).__wrapped__  # the unwrapped function itself
    value = Logged()
    extra = {"linear": (numdiff.ones(2, 2),), "conv1d": (numdiff.ones(1, 1, 1),), "conv2d": (numdiff.ones(1, 1, 1, 1),),
             "conv3d": (numdiff.ones(1, 1, 1, 1, 1),), "conv_transpose2d": (numdiff.ones(1, 1, 1, 1),)}
    tag, func, args, _ = implementation(value, *extra.get(name, (2,)))
    assert tag == "called" and args[0] is value
    assert getattr(func, "__wrapped__", func) is implementation  # reported under a public name


def test_a_weight_that_defines_the_protocol_is_handed_over_by_the_implementation() -> None:
    tag, func, args, _ = conv_ops.conv2d(numdiff.ones(1, 1, 3, 3), Logged(), stride=2)
    assert tag == "called" and isinstance(args[1], Logged)


def test_a_non_tensor_without_the_protocol_is_still_refused_by_name() -> None:
    with pytest.raises(TypeError, match="conv2d: argument 'weight' must be a Tensor, not str"):
        _implementations.conv2d(numdiff.ones(1, 1, 3, 3), "w")
