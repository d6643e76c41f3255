"""Every plan the conv2d routing rules choose between, for a caller that times them instead of
trusting the rules' thresholds (numdiff.compile, once per traced convolution).

The rules of numdiff.kernels._conv_routing were measured on a few machines and shapes; where a
shape falls on the wrong side of a threshold the step pays for it every call (one thread, the small
ResNet's 32x16->16 32x32 3x3: direct loops 2.2 / 2.7 / 2.9 ms forward / input / weight gradient,
Winograd 1.5 / 1.5 / 1.8). `conv2d_plans` lists the rules' own plan first, then each other plan
that turning a route off (direct loops, the flat weight gradient, batched im2col), Winograd on
or off, or batching without the host's rule reaches. Only these switches are offered: each leads to a core the rules also pick for
other shapes, given the sizes the rules compute for it, so every plan here is one the kernels run.
"""

from __future__ import annotations

import itertools
from typing import Any

from numdiff.kernels import _conv_routing as routing
from numdiff.kernels.conv import conv2d_plan

__all__ = ["conv2d_plans"]


def _never(*args: Any, **kwargs: Any) -> bool:
    return False


def _always(*args: Any, **kwargs: Any) -> bool:
    return True


def _no_batch(*args: Any, **kwargs: Any) -> int:
    return 0


def _batch_without_host_rule(*args: Any, **kwargs: Any) -> int:
    """The batched cores' image count as the rules compute it on any host (the full-width AVX-512
    rule sends some shapes to per-image im2col: timing may still prefer batching)."""
    return routing.batched_images(*args, **kwargs, host_rule=False)


class _FixedRules:
    """numdiff.kernels._conv_routing with some of its decisions replaced by constants."""

    def __init__(self, fixed: dict) -> None:
        self._fixed = fixed

    def __getattr__(self, name: str) -> Any:
        return self._fixed[name] if name in self._fixed else getattr(routing, name)


# Each switch: the rules' own decision (None), or one forced; all their combinations.
_SWITCHES = (
    ("use_direct", (None, _never)),
    ("use_winograd", (None, _never, _always)),
    ("use_flat_weight", (None, _never)),
    ("use_phase_winograd", (None, _never)),
    ("batched_images", (None, _no_batch, _batch_without_host_rule)),
)
_CHOICES = [
    _FixedRules({name: rule for (name, _), rule in zip(_SWITCHES, rules) if rule is not None})
    for rules in itertools.product(*(options for _, options in _SWITCHES))
][1:]  # the first is the rules unchanged: conv2d_plan itself


def conv2d_plans(kind: str, x_shape: tuple, w_shape: tuple, go_shape: tuple, stride: tuple, padding: tuple,
                 dilation: tuple, groups: int) -> list:  # fmt: skip
    """The distinct ``(core, sizes)`` plans for the conv2d kernel `kind`, the rules' own first
    (:func:`numdiff.kernels.conv.conv2d_plan`, whose arguments these are); an empty list for an
    empty batch. Raises as the kernel does for a bad configuration.

    >>> shapes = (2, 16, 8, 8), (16, 16, 3, 3), (2, 16, 8, 8)
    >>> len(conv2d_plans("forward", *shapes, (1, 1), (1,) * 4, (1, 1), 1)) > 1
    True
    """
    first = conv2d_plan(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups)
    if first[0] is None:
        return []
    found = [first]
    for rules in _CHOICES:
        plan = conv2d_plan(kind, x_shape, w_shape, go_shape, stride, padding, dilation, groups, rules)
        if not any(plan[0] is core and plan[1] == sizes for core, sizes in found):
            found.append(plan)
    return found
