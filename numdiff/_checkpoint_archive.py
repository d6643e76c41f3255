"""Reading a numdiff checkpoint's zip archive without trusting it.

A checkpoint is a zip of ``.npy`` members (what ``np.savez`` writes). ``np.load`` would inflate
any member it is asked for, whatever size its header claims, so a crafted file could make a
small download allocate gigabytes. `CheckpointArchive` reads only the members the caller names
and, before inflating one, checks its ``.npy`` header against what the caller expects and
against the sizes the zip directory records:

- the header's dtype is a plain numeric one (no unicode, object or structured dtypes), and
  matches the expected dtype and shape (a Fortran-ordered member is read as NumPy reads it);
- the header plus ``prod(shape) * itemsize`` bytes is exactly the member's uncompressed size;
- that size is reachable from the member's compressed size (stored members are not compressed;
  deflate cannot expand more than 1032 times), and the compressed sizes of the members read add
  up to no more than the file itself (members whose data overlap would multiply one compressed
  kernel many times, as in overlapping-file zip bombs).

So an array is allocated only for data the file really holds: byte for byte for stored members
(what ``numdiff.save`` writes), at most 1032 times compressed for deflated ones
(``np.savez_compressed``), whose large arrays of zeros are legitimate.

Reads are bounded: an array is inflated into a buffer of the checked size, in chunks.
"""

from __future__ import annotations

import io
import math
import mmap
import os
import struct
import zipfile
import zlib
from typing import Any, BinaryIO

import numpy as np

_NUMERIC_KINDS = "biufc"
_NPY_MAGIC = b"\x93NUMPY"
_BYTES = np.dtype(np.uint8)
_MAX_DEFLATE_RATIO = 1032  # the most a deflate stream can expand (258-byte matches, 2 bits each)
_MAX_HEADER_BYTES = 10_000  # numpy's own limit for headers it reads without being told otherwise
_CHUNK_BYTES = 1 << 18  # measured: 4 MiB chunks loaded a 100 MiB checkpoint 1.8x slower than 256 KiB
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, NotImplementedError)


class CheckpointError(RuntimeError):
    """A file is not a readable numdiff checkpoint (truncated, corrupted, crafted, or another format)."""


class CheckpointArchive:
    """The members of a checkpoint archive, each read on request after its header is checked.

    >>> with CheckpointArchive("ckpt.pt", "'ckpt.pt'") as archive:
    ...     index_bytes = archive.read_array("__index__", np.dtype(np.uint8)).tobytes()
    """

    def __init__(self, f: str | BinaryIO, source: str, mmap: bool = False) -> None:
        self.source = source
        self._map: Any = None  # with mmap, the file mapped copy-on-write (arrays are views of it)
        try:
            start = _start_of(f)
            self._file_bytes = _size_of(f) - start
            if not zipfile.is_zipfile(f):
                raise self.fail(_what_it_is(f, start))
            self._zip = zipfile.ZipFile(f)
            names = self._zip.namelist()
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            raise
        except _READ_ERRORS as err:
            raise self.fail(f"{type(err).__name__}: {err}", readable=False) from err
        if len(set(names)) != len(names):
            self._zip.close()
            raise self.fail("it lists a member name twice")
        self._compressed_bytes_read = 0
        if mmap and self._file_bytes:
            with open(f, "rb") as handle:
                self._map = _map_file(handle)

    def __enter__(self) -> CheckpointArchive:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._zip.close()

    def fail(self, message: str, member: str | None = None, readable: bool = True) -> CheckpointError:
        what = "a valid" if readable else "a readable"
        where = f" (member {member!r})" if member is not None else ""
        return CheckpointError(
            f"numdiff.load: {self.source} is not {what} numdiff checkpoint{where}: {message}"
        )

    def __contains__(self, name: str) -> bool:
        """Whether the archive has a member `name`, as a ``.npy`` array or as raw bytes."""
        return name + ".npy" in self._zip.NameToInfo or name in self._zip.NameToInfo

    def read_array(
        self,
        name: str,
        dtype: np.dtype | None = None,
        shape: tuple[int, ...] | None = None,
        ndim: int | None = None,
    ) -> np.ndarray:
        """Member ``name + ".npy"`` as an array, refused before inflating unless its header is
        numeric, of `dtype`/`shape`/`ndim` where given, and consistent with its sizes."""
        info = self._zip.NameToInfo.get(name + ".npy")
        if info is None:
            if name in self._zip.NameToInfo:
                raise self.fail(
                    f"index refers to array {name!r}, but that member is raw bytes, not .npy", name
                )
            raise self.fail(f"index refers to a missing array {name!r}", name)
        self._check_compressed_size(info, name)
        try:
            with self._zip.open(info) as stream:
                header_dtype, header_shape, fortran_order, header_bytes = self._read_header(stream, name)
                self._check_header(name, header_dtype, header_shape, dtype, shape, ndim)
                data_bytes = math.prod(header_shape) * header_dtype.itemsize
                if header_bytes + data_bytes != info.file_size:
                    raise self.fail(
                        f"its header declares shape {header_shape} of {header_dtype} ({data_bytes} bytes), but "
                        f"the archive records {info.file_size - header_bytes} bytes of data",
                        name,
                    )
                mapped = self._mapped(info, header_bytes, header_dtype, header_shape, fortran_order)
                if mapped is not None:
                    return mapped
                try:
                    # A Fortran-ordered member (np.savez of a transposed array) is read as NumPy
                    # reads it, its data being the C-ordered transpose, and made C-ordered.
                    array = np.empty(header_shape[::-1] if fortran_order else header_shape, header_dtype)
                except MemoryError:
                    raise MemoryError(
                        f"numdiff.load: {self.source} member {name!r} holds {data_bytes} bytes "
                        f"({header_dtype} of shape {header_shape}), more than this machine can allocate"
                    ) from None
                self._read_into(stream, array, name)
                if fortran_order:
                    array = np.ascontiguousarray(array.T)
        except CheckpointError:
            raise
        except _READ_ERRORS as err:
            raise self.fail(f"{type(err).__name__}: {err}", name, readable=False) from err
        return array

    def member_names(self) -> list[str]:
        """The names of the archive's members, in the order the zip directory lists them."""
        return self._zip.namelist()

    def read_raw(self, name: str, dtype: np.dtype = _BYTES) -> np.ndarray:
        """Member `name` as a flat array of `dtype` (a PyTorch storage, a pickle), after the same
        size checks as `read_array`; refused unless its size is a whole number of elements."""
        info = self._zip.NameToInfo.get(name)
        if info is None:
            raise self.fail(f"it refers to a missing member {name!r}", name)
        self._check_compressed_size(info, name)
        if info.file_size % dtype.itemsize:
            raise self.fail(f"its {info.file_size} bytes are not a whole number of {dtype} elements", name)
        mapped = self._mapped(info, 0, dtype, (info.file_size // dtype.itemsize,), False)
        if mapped is not None:
            return mapped
        array = np.empty(info.file_size // dtype.itemsize, dtype)
        try:
            with self._zip.open(info) as stream:
                self._read_into(stream, array, name)
        except CheckpointError:
            raise
        except _READ_ERRORS as err:
            raise self.fail(f"{type(err).__name__}: {err}", name, readable=False) from err
        return array

    def _mapped(
        self, info: zipfile.ZipInfo, skip: int, dtype: np.dtype, shape: tuple[int, ...], fortran_order: bool
    ) -> np.ndarray | None:
        """With mmap, a stored member's data as a copy-on-write view of the mapped file (None when
        it is compressed, Fortran-ordered or misaligned for its dtype: it is then read as usual)."""
        if self._map is None or info.compress_type != zipfile.ZIP_STORED or fortran_order:
            return None
        local = info.header_offset
        if self._map[local : local + 4] != b"PK\x03\x04":
            raise self.fail("a member's local header is missing", info.filename)
        name_length, extra_length = struct.unpack("<HH", self._map[local + 26 : local + 30])
        offset = local + 30 + name_length + extra_length + skip
        count = math.prod(shape)
        if offset % dtype.alignment or offset + count * dtype.itemsize > len(self._map):
            return None
        return np.frombuffer(self._map, dtype=dtype, count=count, offset=offset).reshape(shape)

    def _check_compressed_size(self, info: zipfile.ZipInfo, name: str) -> None:
        if info.compress_type == zipfile.ZIP_STORED:
            plausible = info.file_size == info.compress_size
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            plausible = info.file_size <= _MAX_DEFLATE_RATIO * max(info.compress_size, 1)
        else:
            raise self.fail(f"compression method {info.compress_type} is not one numpy writes", name)
        if not plausible:
            raise self.fail(
                f"it declares {info.file_size} bytes from {info.compress_size} compressed bytes, "
                "more than its compression can produce",
                name,
            )
        self._compressed_bytes_read += info.compress_size
        if self._compressed_bytes_read > self._file_bytes:
            raise self.fail(
                "its members overlap (their data adds up to more bytes than the file holds)", name
            )

    def _read_header(self, stream: Any, name: str) -> tuple[np.dtype, tuple[int, ...], bool, int]:
        prefix = stream.read(len(_NPY_MAGIC) + 2)
        if prefix[: len(_NPY_MAGIC)] != _NPY_MAGIC or len(prefix) != len(_NPY_MAGIC) + 2:
            raise self.fail("it is not a .npy array", name)
        version = (prefix[-2], prefix[-1])
        if version == (1, 0):
            header = np.lib.format.read_array_header_1_0(stream, max_header_size=_MAX_HEADER_BYTES)
        elif version == (2, 0):
            header = np.lib.format.read_array_header_2_0(stream, max_header_size=_MAX_HEADER_BYTES)
        else:
            raise self.fail(f".npy format version {version} is not one numdiff.save writes", name)
        shape, fortran_order, dtype = header
        return dtype, tuple(shape), fortran_order and len(shape) > 1, stream.tell()

    def _check_header(
        self,
        name: str,
        found_dtype: np.dtype,
        found_shape: tuple[int, ...],
        dtype: np.dtype | None,
        shape: tuple[int, ...] | None,
        ndim: int | None,
    ) -> None:
        if found_dtype.kind not in _NUMERIC_KINDS or found_dtype.fields is not None or found_dtype.subdtype:
            raise self.fail(f"its dtype {found_dtype} is not a numeric dtype numdiff.save writes", name)
        if any(size < 0 for size in found_shape):
            raise self.fail(f"its shape {found_shape} has a negative size", name)
        if dtype is not None and found_dtype != dtype:
            raise self.fail(f"its dtype is {found_dtype}, but the index says {dtype}", name)
        if shape is not None and found_shape != shape:
            raise self.fail(f"its shape is {found_shape}, but the index says {shape}", name)
        if ndim is not None and len(found_shape) != ndim:
            raise self.fail(f"it has {len(found_shape)} dimensions, expected {ndim}", name)

    def _read_into(self, stream: Any, array: np.ndarray, name: str) -> None:
        buffer = memoryview(array.reshape(-1).view(np.uint8))
        filled = 0
        while filled < len(buffer):
            count = stream.readinto(buffer[filled : filled + _CHUNK_BYTES])
            if not count:
                raise self.fail(f"its data ends after {filled} of {len(buffer)} bytes", name)
            filled += count
        if stream.read(1):
            raise self.fail("it holds more data than its header declares", name)


def _map_file(handle: BinaryIO) -> mmap.mmap:
    """The whole file mapped copy-on-write: arrays made from it can be written without touching it."""
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)


def _start_of(f: str | BinaryIO) -> int:
    return 0 if isinstance(f, str) else f.tell()


def _size_of(f: str | BinaryIO) -> int:
    if isinstance(f, str):
        return os.path.getsize(f)
    position = f.tell()
    size = f.seek(0, io.SEEK_END)
    f.seek(position)
    return size


def _what_it_is(f: str | BinaryIO, start: int) -> str:
    if isinstance(f, str):
        with open(f, "rb") as handle:
            magic = handle.read(len(_NPY_MAGIC))
    else:
        f.seek(start)
        magic = f.read(len(_NPY_MAGIC))
    if magic == _NPY_MAGIC:
        return "it holds a single ndarray (a .npy file), not an archive"
    return "it is not a zip archive (truncated or corrupted?)"
