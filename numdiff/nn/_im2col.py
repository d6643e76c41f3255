"""unfold (im2col) and fold (col2im): sliding 2-D blocks as columns, and columns summed back.

unfold(input (N, C, H, W)) is (N, C * kh * kw, L): column l holds the block at output position
l = oy * ow + ox, row c * kh * kw + i * kw + j the element padded[c, oy * sh + i * dh, ox * sw + j * dw].
fold is its adjoint: every column's elements are added back at those positions of an (N, C, H, W)
output (overlapping blocks sum). Both are one registered op and a reshape: unfold is block_taps,
fold block_taps_backward (numdiff.ops._block_taps), each the other's backward. So gradients of
any order come from those ops, and numdiff.compile replays them.
"""

from __future__ import annotations

from typing import Any

from numdiff._ground.args import int_tuple
from numdiff.ops._block_taps import BlockTaps, BlockTapsBackward
from numdiff.ops._util import ensure_tensor
from numdiff.tensor import Tensor


def _pair(op: str, name: str, value: Any, minimum: int) -> tuple[int, int]:
    """An int or two ints (NumPy ints too) as a pair; floats, bools, None and wrong lengths are a
    TypeError or ValueError naming `op` and `name` (see numdiff._ground.args)."""
    return int_tuple(op, name, value, 2, minimum, expand=True)


def _block_grid(size: tuple[int, int], kernel: tuple, dilation: tuple, padding: tuple, stride: tuple,
                op: str) -> tuple[int, int]:
    """The grid of sliding blocks (oh, ow) over an image of `size`; a ValueError naming `op` when no block fits."""
    padded = (size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    span = tuple(dilation[d] * (kernel[d] - 1) + 1 for d in range(2))
    blocks = tuple((padded[d] - span[d]) // stride[d] + 1 for d in range(2))
    if min(blocks) <= 0:
        raise ValueError(
            f"{op}: a kernel of {kernel} with dilation {dilation} spans {span}, more than the padded size "
            f"{padded} (input {size}, padding {padding}): no block fits"
        )
    return blocks


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sliding blocks of a (N, C, H, W) or (C, H, W) input as columns: (N, C * kh * kw, L).

    >>> F.unfold(numdiff.arange(9.0).reshape(1, 1, 3, 3), 2).shape
    numdiff.Size([1, 4, 4])
    """
    input = ensure_tensor("unfold", input)
    if input.ndim not in (3, 4):
        raise ValueError(f"unfold: expects a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape {tuple(input.shape)}")
    kernel = _pair("unfold", "kernel_size", kernel_size, 1)
    dilation, stride = _pair("unfold", "dilation", dilation, 1), _pair("unfold", "stride", stride, 1)
    padding = _pair("unfold", "padding", padding, 0)
    batched = input if input.ndim == 4 else input.unsqueeze(0)
    n, c, h, w = batched.shape
    blocks = _block_grid((h, w), kernel, dilation, padding, stride, "unfold")
    taps = BlockTaps.apply(batched, kernel=kernel, stride=stride, dilation=dilation, padding=padding, blocks=blocks)
    columns = taps.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])
    return columns if input.ndim == 4 else columns.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Columns (N, C * kh * kw, L) summed back into a (N, C, H, W) image of `output_size`:
    unfold's adjoint (overlapping blocks add up).

    >>> F.fold(numdiff.ones(1, 4, 4), (3, 3), 2)[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]])
    """
    input = ensure_tensor("fold", input)
    if input.ndim not in (2, 3):
        raise ValueError(f"fold: expects a 2-D (C * kh * kw, L) or 3-D (N, C * kh * kw, L) input, got shape {tuple(input.shape)}")
    size = _pair("fold", "output_size", output_size, 1)
    kernel = _pair("fold", "kernel_size", kernel_size, 1)
    dilation, stride = _pair("fold", "dilation", dilation, 1), _pair("fold", "stride", stride, 1)
    padding = _pair("fold", "padding", padding, 0)
    batched = input if input.ndim == 3 else input.unsqueeze(0)
    n, rows, length = batched.shape
    area = kernel[0] * kernel[1]
    if rows % area:
        raise ValueError(f"fold: the input's {rows} rows (shape {tuple(input.shape)}) are not a multiple of kernel_size {kernel} = {area}")
    blocks = _block_grid(size, kernel, dilation, padding, stride, "fold")
    if length != blocks[0] * blocks[1]:
        raise ValueError(
            f"fold: the input has {length} blocks (shape {tuple(input.shape)}), but output_size {size} with kernel_size "
            f"{kernel}, dilation {dilation}, padding {padding} and stride {stride} gives {blocks[0]} x {blocks[1]} = "
            f"{blocks[0] * blocks[1]}"
        )
    taps = batched.reshape(n, rows // area, kernel[0], kernel[1], *blocks)
    image = BlockTapsBackward.apply(taps, kernel=kernel, stride=stride, dilation=dilation, padding=padding, size=size)
    return image if input.ndim == 3 else image.squeeze(0)
