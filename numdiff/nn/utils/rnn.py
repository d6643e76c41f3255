"""Variable-length sequences for the recurrent layers: PackedSequence, pack_padded_sequence,
pad_packed_sequence, pad_sequence and pack_sequence, and their inverses unpad_sequence and
unpack_sequence, with PyTorch's layout.

A PackedSequence holds the valid time steps of a batch sorted by length (longest first), time
step by time step: ``data`` is (sum(lengths), *), ``batch_sizes[t]`` counts the sequences still
running at step t. Packing and unpacking are slices and concatenations, so gradients flow.

>>> padded = numdiff.randn(4, 3, 2)                                  # (T, B, features)
>>> packed = pack_padded_sequence(padded, [2, 4, 1], enforce_sorted=False)
>>> output, (h_n, c_n) = numdiff.nn.LSTM(2, 5)(packed)
>>> unpacked, lengths = pad_packed_sequence(output)                  # (4, 3, 5), tensor([2, 4, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from numdiff import _dtype
from numdiff.creation import full, tensor
from numdiff.ops.joining import cat, stack
from numdiff.tensor import Tensor


class PackingLengthsError(ValueError, RuntimeError):
    """Lengths that packing refuses: unsorted with enforce_sorted=True, or not above 0. PyTorch
    raises RuntimeError for these, numdiff ValueError; this is both, so code written for either
    catches it."""


class PackedSequence(NamedTuple):
    """The valid steps of a batch of sequences, sorted longest first and stored step by step."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data` converted as by ``Tensor.to`` (dtype or device); the indices follow the device only."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if t is None else t.to(data.device) for t in (self.sorted_indices, self.unsorted_indices)
        )
        return PackedSequence(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    def double(self) -> PackedSequence:
        return self.to(_dtype.float64)

    def float(self) -> PackedSequence:
        return self.to(_dtype.float32)

    def half(self) -> PackedSequence:
        return self.to(_dtype.float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _lengths_array(op: str, lengths: Any, batch: int) -> np.ndarray:
    if isinstance(lengths, Tensor):
        lengths = lengths.detach().cpu().numpy()
    values = np.asarray(lengths)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise TypeError(f"{op}: lengths must be a 1-D sequence of integers, got {lengths!r}")
    values = values.astype(np.int64)
    if values.size != batch:
        raise ValueError(f"{op}: expected {batch} lengths (one per sequence in the batch), got {values.size}")
    if values.size and values.min() <= 0:
        raise PackingLengthsError(f"{op}: every length must be greater than 0, got {values.tolist()}")
    return values


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) whose sequence b has lengths[b] steps."""
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ValueError(f"{op}: input must be a Tensor of shape (T, B, *) or (B, T, *), got {getattr(input, 'shape', type(input).__name__)}")
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    values = _lengths_array(op, lengths, batch)
    if values.size and values.max() > steps:
        raise ValueError(f"{op}: a length of {values.max()} exceeds the {steps} time steps of the input (shape {tuple(input.shape)})")
    if enforce_sorted:
        if np.any(np.diff(values) > 0):
            raise PackingLengthsError(
                f"{op}: lengths must be sorted in decreasing order when enforce_sorted=True, got {values.tolist()}; "
                "pass enforce_sorted=False"
            )
        sorted_indices = unsorted_indices = None
        order = np.arange(batch)
    else:
        order = np.argsort(-values, kind="stable")
        sorted_indices = tensor(order, dtype=_dtype.int64)
        unsorted_indices = tensor(np.argsort(order, kind="stable"), dtype=_dtype.int64)
        input = input[:, order]
    sorted_lengths = values[order]
    batch_sizes = np.array([(sorted_lengths > t).sum() for t in range(int(sorted_lengths.max()))], dtype=np.int64)
    data = cat([input[t, : int(size)] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, tensor(batch_sizes, dtype=_dtype.int64), sorted_indices, unsorted_indices)


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: the padded batch (T, B, *) in the original order, and the lengths."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{op}: expected a PackedSequence, got {type(sequence).__name__}")
    data, sizes = sequence.data, sequence.batch_sizes.detach().cpu().numpy()
    steps, batch = len(sizes), int(sizes[0]) if len(sizes) else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"{op}: total_length={total_length} is smaller than the longest sequence ({steps} steps)")
        steps = total_length
    feature_shape = tuple(data.shape[1:])
    rows, offset = [], 0
    for size in sizes:
        step = data[offset : offset + int(size)]
        offset += int(size)
        if size < batch:
            filler = full((batch - int(size), *feature_shape), padding_value, dtype=data.dtype, device=data.device)
            step = cat([step, filler], 0)
        rows.append(step)
    for _ in range(steps - len(sizes)):
        rows.append(full((batch, *feature_shape), padding_value, dtype=data.dtype, device=data.device))
    padded = stack(rows, 0)
    lengths = (sizes[None, :] > np.arange(batch)[:, None]).sum(1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices.detach().cpu().numpy()
        padded = padded[:, order]
        lengths = lengths[order]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths, dtype=_dtype.int64)


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with padding_value."""
    op = "pad_sequence"
    if not sequences or not all(isinstance(s, Tensor) and s.ndim >= 1 for s in sequences):
        raise ValueError(f"{op}: expected a non-empty list of Tensors with at least 1 dim each")
    if padding_side not in ("right", "left"):
        raise ValueError(f"{op}: padding_side must be 'right' or 'left', got {padding_side!r}")
    trailing = tuple(sequences[0].shape[1:])
    if any(tuple(s.shape[1:]) != trailing for s in sequences):
        raise ValueError(f"{op}: every sequence must have trailing shape {trailing}, got {[tuple(s.shape) for s in sequences]}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            filler = full((missing, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, filler] if padding_side == "right" else [filler, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """pack_padded_sequence of pad_sequence(sequences), with each sequence's own length."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The inverse of pad_sequence: a (max L, B, *) (or (B, max L, *)) batch cut into B sequences of
    shapes (L_i, *). Unlike PyTorch's, the batch is not transposed in place when batch_first is False.

    >>> [s.shape for s in unpad_sequence(numdiff.zeros(4, 2, 3), numdiff.tensor([4, 1]))]
    [numdiff.Size([4, 3]), numdiff.Size([1, 3])]
    """
    op = "unpad_sequence"
    if not isinstance(padded_sequences, Tensor) or padded_sequences.ndim < 2:
        raise ValueError(f"{op}: expected a Tensor of at least 2 dims (time and batch), got {padded_sequences!r}")
    batch_major = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    longest = int(batch_major.shape[1])
    if isinstance(lengths, Tensor):
        lengths = lengths.detach().cpu().numpy()
    values = np.asarray(lengths)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        raise TypeError(f"{op}: lengths must be a 1-D sequence of integers, got {lengths!r}")
    if values.size != batch_major.shape[0]:
        raise ValueError(f"{op}: expected {batch_major.shape[0]} lengths (one per sequence in the batch), got {values.size}")
    if values.size and (values.min() < 0 or values.max() > longest):
        raise ValueError(f"{op}: every length must be between 0 and the padded length {longest}, got {values.tolist()}")
    return [batch_major[i, : int(length)] for i, length in enumerate(values)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of pack_sequence: the packed batch as a list of its sequences, in their original order.

    >>> [s.tolist() for s in unpack_sequence(pack_sequence([numdiff.tensor([1, 2]), numdiff.tensor([3])]))]
    [[1, 2], [3]]
    """
    if not isinstance(packed_sequences, PackedSequence):
        raise TypeError(f"unpack_sequence: expected a PackedSequence, got {type(packed_sequences).__name__}")
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
    "unpack_sequence", "unpad_sequence",
]
