"""numdiff.safetensors: the safetensors format, under the names of ``safetensors.torch``.

A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then one byte buffer::

    {"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}

Each tensor is stored C-ordered and little-endian at its ``data_offsets`` in the buffer. The format
holds no code, so loading runs none; numdiff reads it with NumPy alone (the ``safetensors`` package is
needed only by the tests that check files against it). Reading checks the whole header before any
tensor is allocated: the JSON's shape, each dtype and shape against its offsets, and that the
offsets tile the buffer exactly (no overlap, no gap, nothing past the end), as the reference
implementation does; every refusal is a :class:`SafetensorError` naming the file and the tensor.

>>> numdiff.safetensors.save_file({"w": numdiff.ones(2, 3)}, "model.safetensors")
>>> numdiff.safetensors.load_file("model.safetensors")["w"].shape
numdiff.Size([2, 3])
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from numdiff import _dtype
from numdiff._atomic_file import replace_file
from numdiff._checkpoint_archive import CheckpointError
from numdiff.tensor import Tensor

__all__ = ["SafetensorError", "load", "load_file", "load_model", "safe_open", "save", "save_file", "save_model"]

_MAX_HEADER = 100_000_000  # the reference implementation's limit
_CODES = {
    "F64": _dtype.float64, "F32": _dtype.float32, "F16": _dtype.float16, "BF16": _dtype.bfloat16,
    "I64": _dtype.int64, "I32": _dtype.int32, "I16": _dtype.int16, "I8": _dtype.int8,
    "U8": _dtype.uint8, "BOOL": _dtype.bool_,
}  # fmt: skip
_CODE_OF = {d: code for code, d in _CODES.items()}
_UNSUPPORTED = ("U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64")


class SafetensorError(CheckpointError):
    """A safetensors file or buffer that breaks the format, named with the tensor at fault."""


# --------------------------------------------------------------------------- writing


def _storage(t: Tensor) -> np.ndarray:
    return t.detach().cpu()._data


def _check_tensors(tensors: dict[str, Tensor]) -> None:
    if not isinstance(tensors, dict):
        raise TypeError(f"safetensors: expected a dict of name -> Tensor, got {type(tensors).__name__}")
    seen: list[tuple[str, np.ndarray]] = []
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors: tensor names must be str, got {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"safetensors: {name!r} is a {type(t).__name__}, not a Tensor")
        if not t.is_contiguous():
            raise ValueError(
                f"safetensors: {name!r} is not contiguous (shape {tuple(t.shape)}, stride {t.stride()}); "
                "save t.contiguous() instead"
            )
        array = _storage(t)
        for other, other_array in seen:
            if array.size and other_array.size and np.shares_memory(array, other_array):
                raise RuntimeError(
                    f"safetensors: {other!r} and {name!r} share memory, which would be stored twice and load as "
                    "two tensors; save a clone of one, or use save_model, which keeps one of the tied names"
                )
        seen.append((name, array))


def _serialize(tensors: dict[str, Tensor], metadata: dict[str, str] | None) -> tuple[bytes, list[np.ndarray]]:
    _check_tensors(tensors)
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise TypeError(f"safetensors: metadata must map str to str, got {metadata!r}")
    # Largest items first, then by name, as the reference writer orders them (keeps each aligned).
    order = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    arrays, offset = [], 0
    for name in order:
        t = tensors[name]
        array = _storage(t)
        little = array.astype(array.dtype.newbyteorder("<"), copy=False) if array.dtype.byteorder == ">" else array
        header[name] = {"dtype": _CODE_OF[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + array.nbytes]}
        arrays.append(np.ascontiguousarray(little))
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the buffer starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text, arrays


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors bytes of `tensors` (``safetensors.torch.save``)."""
    head, arrays = _serialize(tensors, metadata)
    return head + b"".join(a.tobytes() for a in arrays)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Write `tensors` to `filename` atomically (``safetensors.torch.save_file``)."""
    head, arrays = _serialize(tensors, metadata)

    def write(handle: BinaryIO) -> None:
        handle.write(head)
        for array in arrays:
            handle.write(memoryview(array.reshape(-1).view(np.uint8)))

    replace_file(filename, write)


# --------------------------------------------------------------------------- reading


def _refuse(source: str, message: str) -> SafetensorError:
    return SafetensorError(f"safetensors: {source}: {message}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _parse_header(raw: bytes, total: int, source: str) -> tuple[dict, dict[str, str], int]:
    """(entries by name, metadata, buffer start) from a file's first bytes; `total` is its length."""
    if total < 8:
        raise _refuse(source, f"{total} bytes is too short to hold the 8-byte header length")
    (size,) = struct.unpack("<Q", raw[:8])
    if size > _MAX_HEADER:
        raise _refuse(source, f"the header length {size} is over the {_MAX_HEADER}-byte limit")
    if 8 + size > total:
        raise _refuse(source, f"the header length {size} runs past the end of the {total}-byte file")
    text = raw[8 : 8 + size]
    if not text.startswith(b"{"):
        raise _refuse(source, "the header is not a JSON object")
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _refuse(source, f"the header is not valid JSON ({type(error).__name__}: {error})") from None
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _refuse(source, f"__metadata__ must map str to str, got {metadata!r}")
    start, buffer = 8 + size, total - 8 - size
    spans = []
    for name, entry in header.items():
        what = f"tensor {name!r}"
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _refuse(source, f"{what}: an entry holds dtype, shape and data_offsets, got {entry!r}")
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if code in _UNSUPPORTED:
            raise _refuse(source, f"{what}: dtype {code} has no numdiff dtype (it has {', '.join(_CODES)})")
        if code not in _CODES:
            raise _refuse(source, f"{what}: unknown dtype {code!r}")
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
            raise _refuse(source, f"{what}: bad shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int and o >= 0 for o in offsets)):
            raise _refuse(source, f"{what}: bad data_offsets {offsets!r}")
        begin, end = offsets
        nbytes = int(np.prod(shape, dtype=object)) * _CODES[code].numpy.itemsize
        if end - begin != nbytes:
            raise _refuse(source, f"{what}: {code} of shape {tuple(shape)} is {nbytes} bytes, but its offsets "
                                  f"[{begin}, {end}] span {end - begin}")
        spans.append((begin, end, name))
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            gap = "overlaps the tensor before it" if begin < position else f"leaves a gap at byte {position}"
            raise _refuse(source, f"tensor {name!r} at [{begin}, {end}] {gap}")
        position = end
    if position != buffer:
        raise _refuse(source, f"the tensors cover {position} bytes of the {buffer}-byte buffer")
    return header, metadata, start


def _tensor_from(raw: Any, entry: dict, start: int) -> Tensor:
    begin, end = entry["data_offsets"]
    dtype = _CODES[entry["dtype"]]
    storage = dtype.numpy.newbyteorder("<") if dtype.numpy.kind in "iuf" else dtype.numpy
    array = np.frombuffer(raw, dtype=storage, count=(end - begin) // dtype.numpy.itemsize, offset=start + begin)
    array = array.astype(dtype.numpy, copy=True).reshape(entry["shape"])  # owned, writable, native order
    return Tensor._wrap(array, None, None)


def _place(t: Tensor, device: Any) -> Tensor:
    return t if device in (None, "cpu") else t.to(device)


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors held by safetensors bytes (``safetensors.torch.load``)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"safetensors.load expects bytes, got {type(data).__name__}")
    header, _, start = _parse_header(bytes(data[:8 + _MAX_HEADER]), len(data), "<bytes>")
    return {name: _tensor_from(data, entry, start) for name, entry in header.items()}


def load_file(filename: str | os.PathLike, device: Any = "cpu") -> dict[str, Tensor]:
    """The tensors of a safetensors file, in file order (``safetensors.torch.load_file``)."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}


class _Slice:
    """One tensor of an open file, read only where indexed: ``f.get_slice("w")[:, :2]``."""

    def __init__(self, handle: safe_open, name: str) -> None:
        self._handle, self._name = handle, name

    def get_shape(self) -> list[int]:
        return list(self._handle._header[self._name]["shape"])

    def get_dtype(self) -> str:
        return self._handle._header[self._name]["dtype"]

    def __getitem__(self, index: Any) -> Tensor:
        view = self._handle._mapped(self._name)[index]
        return _place(Tensor._wrap(np.array(view, dtype=view.dtype.newbyteorder("=")), None, None), self._handle._device)


class safe_open:  # noqa: N801 - the safetensors name
    """A safetensors file opened for reading tensor by tensor (``safetensors.safe_open``).

    >>> with numdiff.safetensors.safe_open("model.safetensors", framework="pt") as f:
    ...     w = f.get_tensor("w")
    """

    def __init__(self, filename: str | os.PathLike, framework: str = "pt", device: Any = "cpu") -> None:
        if framework not in ("pt", "torch", "numdiff", "np", "numpy"):
            raise ValueError(f"safe_open: framework {framework!r} is not one numdiff reads (use 'pt' or 'numdiff')")
        self._path = os.fspath(filename)
        self._device = device
        total = os.path.getsize(self._path)
        with open(self._path, "rb") as handle:
            head = handle.read(min(total, 8 + _MAX_HEADER))
        self._header, self._metadata, self._start = _parse_header(head, total, repr(self._path))
        self._map = np.memmap(self._path, dtype=np.uint8, mode="r") if total else np.zeros(0, np.uint8)

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._map = None

    def keys(self) -> list[str]:
        """The tensors' names, in the order of their data in the file."""
        return sorted(self._header, key=lambda n: self._header[n]["data_offsets"][0])

    def offset_keys(self) -> list[str]:
        return self.keys()

    def metadata(self) -> dict[str, str]:
        return dict(self._metadata)

    def _mapped(self, name: str) -> np.ndarray:
        if self._map is None:
            raise RuntimeError(f"safe_open: {self._path!r} is closed")
        if name not in self._header:
            raise KeyError(f"safe_open: {self._path!r} holds no tensor {name!r}; it holds {self.keys()}")
        entry = self._header[name]
        dtype = _CODES[entry["dtype"]].numpy
        begin, end = entry["data_offsets"]
        raw = self._map[self._start + begin : self._start + end]
        return raw.view(dtype.newbyteorder("<") if dtype.kind in "iuf" else dtype).reshape(entry["shape"])

    def get_tensor(self, name: str) -> Tensor:
        self._mapped(name)  # names the file and the tensor when absent or closed
        return _place(_tensor_from(self._map, self._header[name], self._start), self._device)

    def get_slice(self, name: str) -> _Slice:
        self._mapped(name)
        return _Slice(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


# --------------------------------------------------------------------------- whole models


def _untied(state: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The state with tied tensors (one storage, several names) kept once: (kept, dropped -> kept)."""
    kept: dict[str, Tensor] = {}
    dropped: dict[str, str] = {}
    for name in sorted(state):
        array = _storage(state[name])
        twin = next((k for k, t in kept.items() if array.size and np.shares_memory(array, _storage(t))), None)
        if twin is not None and _storage(kept[twin]).shape == array.shape:
            dropped[name] = twin
        else:
            kept[name] = state[name]
    return kept, dropped


def save_model(model: Any, filename: str | os.PathLike, metadata: dict[str, str] | None = None,
               force_contiguous: bool = False) -> None:
    """Save `model.state_dict()`, storing tied weights once (``safetensors.torch.save_model``)."""
    state = {k: v.detach() for k, v in model.state_dict().items()}
    if force_contiguous:
        state = {k: v.contiguous() for k, v in state.items()}
    kept, dropped = _untied(state)
    metadata = {**(metadata or {}), **dropped}
    save_file(kept, filename, metadata=metadata or None)


def load_model(model: Any, filename: str | os.PathLike, strict: bool = True,
               device: Any = "cpu") -> tuple[list[str], list[str]]:
    """Load a file written by save_model into `model`: (missing, unexpected) names, as torch's."""
    state = load_file(filename, device=device)
    own = model.state_dict()
    with safe_open(filename) as f:
        tied = {k: v for k, v in f.metadata().items() if k in own and v in state}
    for name, twin in tied.items():
        state[name] = state[twin]
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if strict and (missing or unexpected):
        raise RuntimeError(
            f"load_model: {os.fspath(filename)!r} does not match the model: missing {missing}, unexpected {unexpected}"
        )
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    return missing, unexpected


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
