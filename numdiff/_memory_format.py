"""Memory formats, as torch's: ``contiguous_format`` (row-major), ``channels_last`` (NHWC
order in memory for an (N, C, H, W) tensor), ``channels_last_3d`` (NDHWC) and
``preserve_format`` (keep the source's layout).

A tensor in channels_last keeps its (N, C, H, W) shape; only its strides change, so every op
reads it as before. numdiff's kernels take any strides (they copy what they need contiguous), so
the format is a layout a program can ask for and test, not a different code path.

>>> x = numdiff.empty(2, 3, 4, 5).contiguous(memory_format=numdiff.channels_last)
>>> x.stride()
(60, 1, 15, 3)
"""

from __future__ import annotations

from typing import Any

__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout (see the module docstring); compare with ``is``."""

    __slots__ = ("name", "rank", "order")

    def __init__(self, name: str, rank: int | None, order: tuple[int, ...] | None) -> None:
        self.name, self.rank, self.order = name, rank, order

    def __repr__(self) -> str:
        return f"numdiff.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module attribute of that name


contiguous_format = memory_format("contiguous_format", None, None)
channels_last = memory_format("channels_last", 4, (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", 5, (0, 2, 3, 4, 1))
preserve_format = memory_format("preserve_format", None, None)


def checked(fmt: Any, caller: str) -> memory_format:
    """`fmt` if it is a memory format (None reads as contiguous_format), else TypeError."""
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(
            f"{caller}: memory_format must be numdiff.contiguous_format, channels_last, channels_last_3d or "
            f"preserve_format, got {fmt!r}"
        )
    return fmt


def check_rank(fmt: memory_format, ndim: int, caller: str) -> None:
    if fmt.rank is not None and ndim != fmt.rank:
        raise RuntimeError(f"{caller}: memory_format={fmt!r} needs a {fmt.rank}-D tensor, got {ndim}-D")


def is_contiguous_in(shape: tuple[int, ...], strides: tuple[int, ...], fmt: memory_format) -> bool:
    """Whether element `strides` lay `shape` out densely in `fmt`'s order (size-1 dims may have
    any stride, as in PyTorch's check)."""
    if fmt.order is None:
        order = tuple(range(len(shape)))
    elif len(shape) != fmt.rank:
        return False
    else:
        order = fmt.order
    expected = 1
    for dim in reversed(order):
        if shape[dim] != 1:
            if strides[dim] != expected:
                return False
            expected *= shape[dim]
    return True


def layout_of(shape: tuple[int, ...], strides: tuple[int, ...]) -> memory_format:
    """The format `preserve_format` keeps for a tensor of these strides: channels_last(_3d) when it
    is laid out so and not row-major, else contiguous_format."""
    for fmt in (channels_last, channels_last_3d):
        if is_contiguous_in(shape, strides, fmt) and not is_contiguous_in(shape, strides, contiguous_format):
            return fmt
    return contiguous_format
