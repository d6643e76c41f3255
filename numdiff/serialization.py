"""numdiff.save / numdiff.load: checkpoints as a .npz archive plus a JSON index, never pickle.

The archive holds one ``.npy`` member per distinct tensor or array, and a member ``__index__``
with UTF-8 JSON describing the saved object as a tree of typed nodes::

    {"format": "numdiff", "version": 1, "root": ["dict", [[["str", "step"], ["int", 3]], ...]]}

Node kinds: none, bool, int, float (as repr, so nan/inf survive), str, list, tuple, dict,
odict (OrderedDict), size, dtype, device, ndarray and tensor (array member, dtype, shape,
device, requires_grad, and whether it was an nn.Parameter). A tensor saved twice is stored once
and loads as one object. Loading checks every node, so a checkpoint can only produce these
types, and reads only the members the index names, each after checking its ``.npy`` header
against the index and the archive's sizes (numdiff._checkpoint_archive), so a crafted file can
neither allocate more than its members really hold nor produce arrays save would refuse.

Any other object (a whole module, an optimizer, a user's class) is stored as a ``pickle`` node: a
member holding a pickle whose tensors, arrays, dtypes, devices and sizes are nodes of the index
(persistent ids). Loading it goes through numdiff._safe_unpickle's allow-list (``weights_only``,
``add_safe_globals``, ``safe_globals``). A zip that PyTorch wrote is read by numdiff._torch_checkpoint.

Saving to a path is atomic (numdiff._atomic_file): the archive goes to a temporary file in the
same directory, is fsync'ed, and replaces the target with ``os.replace``; a path that is a
symlink has its target replaced. An interrupted save leaves the previous checkpoint untouched
and removes its temporary file; the temporary of a killed save is removed by a later save.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from collections import OrderedDict
from typing import Any, BinaryIO

import numpy as np

from numdiff import _dtype
from numdiff._atomic_file import replace_file
from numdiff._checkpoint_archive import CheckpointArchive, CheckpointError
from numdiff._checkpoint_encoder import Encoder as _Encoder
from numdiff._device import device, to_device
from numdiff._safe_unpickle import (
    RestrictedUnpickler,
    add_safe_globals,
    allowed_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from numdiff._torch_checkpoint import is_torch_archive, load_torch_archive
from numdiff.backend import move_array
from numdiff.cuda import CudaUnavailableError
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Size, Tensor

FORMAT = "numdiff"
VERSION = 1
INDEX_MEMBER = "__index__"
__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]


def save(
    obj: Any,
    f: str | os.PathLike | BinaryIO,
    pickle_module: Any = pickle,
    pickle_protocol: int = 4,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save tensors, state dicts and nested containers of them to a path or binary file.

    `pickle_module` and `pickle_protocol` write the pickle of whole objects (a module, an
    optimizer); tensors never go through pickle. PyTorch's two underscore flags choose between its
    own formats and are accepted: numdiff writes its one format whatever they say.

    >>> numdiff.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.pt")
    """
    if not hasattr(pickle_module, "Pickler"):
        raise TypeError(f"numdiff.save: pickle_module must provide a Pickler (like pickle), got {pickle_module!r:.60}")
    if not isinstance(pickle_protocol, int) or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(
            f"numdiff.save: pickle_protocol={pickle_protocol!r} must be an int from 2 to {pickle.HIGHEST_PROTOCOL}"
        )
    encoder = _Encoder(pickle_module, pickle_protocol)
    index = {"format": FORMAT, "version": VERSION, "root": encoder.encode(obj, "obj")}
    members = dict(encoder.arrays)
    members[INDEX_MEMBER] = np.frombuffer(json.dumps(index).encode("utf-8"), dtype=np.uint8)
    if hasattr(f, "write"):
        np.savez(f, **members)
    else:
        replace_file(f, lambda handle: np.savez(handle, **members))


# --------------------------------------------------------------------------- decoding


class _Decoder:
    """Rebuilds objects from the node tree, checking every node; arrays are read from the
    archive only when a node names them, each member once."""

    def __init__(
        self, archive: CheckpointArchive, map_location: Any, weights_only: bool = True, pickle_load_args: dict | None = None
    ) -> None:
        self.archive = archive
        self.pickle_load_args = pickle_load_args or {}
        self.map_location = map_location
        self.weights_only = weights_only
        self._arrays: dict[str, np.ndarray] = {}
        self._tensors: dict[str, Tensor] = {}

    def fail(self, message: str, member: str | None = None) -> CheckpointError:
        return self.archive.fail(message, member)

    def decode(self, node: Any) -> Any:
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise self.fail(f"malformed index node {node!r:.80}")
        kind, payload = node[0], node[1:]
        simple = {"bool": bool, "int": int, "str": str}
        if kind == "none" and not payload:
            return None
        if kind in simple and len(payload) == 1 and type(payload[0]) is simple[kind]:
            return payload[0]
        if kind == "float" and len(payload) == 1 and isinstance(payload[0], str):
            try:
                return float(payload[0])
            except ValueError:
                raise self.fail(f"bad float {payload[0]!r:.40}") from None
        if len(payload) != 1:
            raise self.fail(f"malformed {kind!r:.40} node")
        (value,) = payload
        if kind in ("list", "tuple", "size") and isinstance(value, list):
            items = [self.decode(v) for v in value] if kind != "size" else value
            if kind == "size" and not all(type(n) is int for n in items):
                raise self.fail("bad size node")
            return {"list": list, "tuple": tuple, "size": Size}[kind](items)
        if kind in ("dict", "odict") and isinstance(value, list):
            return self._dict(kind, value)
        if kind == "dtype" and isinstance(value, str):
            return self._dtype(value)
        if kind == "device" and isinstance(value, str):
            try:
                return device(value)
            except (TypeError, ValueError) as err:
                raise self.fail(str(err)) from None
        if kind == "ndarray" and isinstance(value, str):
            return self._array(value)
        if kind == "tensor" and isinstance(value, dict):
            return self._tensor(value)
        if kind == "pickle" and isinstance(value, str):
            return self._unpickle(value)
        raise self.fail(f"unknown or malformed node kind {kind!r:.40}")

    def _unpickle(self, name: str) -> Any:
        data = self._array(name, np.dtype(np.uint8))
        if data.ndim != 1:
            raise self.fail("a pickle member must be 1-D bytes", name)
        allowed = allowed_globals()
        unpickler = RestrictedUnpickler(
            io.BytesIO(data.tobytes()), self.archive.source, lambda module, qualname: allowed.get((module, qualname)),
            self.decode, self.weights_only, **self.pickle_load_args,
        )
        try:
            return unpickler.load()
        except (pickle.UnpicklingError, CheckpointError):
            raise
        except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError) as err:
            raise self.fail(f"its pickle does not load: {type(err).__name__}: {err}", name) from None

    def _dict(self, kind: str, items: list[Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = OrderedDict() if kind == "odict" else {}
        for pair in items:
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.fail("malformed dict item")
            key = self.decode(pair[0])
            try:
                hashable = hash(key) is not None and not isinstance(key, Tensor)  # save refuses tensor keys
            except TypeError:
                hashable = False
            if not hashable:
                raise self.fail(f"dict key {pair[0]!r:.80} is not one numdiff.save writes")
            out[key] = self.decode(pair[1])
        return out

    def _dtype(self, name: Any) -> _dtype.dtype:
        found = [d for d in _dtype.ALL_DTYPES if d.name == name]
        if not found:
            raise self.fail(f"unknown dtype {name!r:.40}")
        return found[0]

    def _array(
        self, name: Any, dtype: np.dtype | None = None, shape: tuple[int, ...] | None = None
    ) -> np.ndarray:
        if not isinstance(name, str) or name == INDEX_MEMBER:
            raise self.fail(f"index refers to a missing array {name!r:.40}")
        array = self._arrays.get(name)
        if array is None:
            array = self._arrays[name] = self.archive.read_array(name, dtype, shape)
        elif (dtype is not None and array.dtype != dtype) or (shape is not None and array.shape != shape):
            raise self.fail(
                f"it is named twice in the index, as {array.dtype} {array.shape} and {dtype} {shape}", name
            )
        return array

    def _tensor(self, meta: dict[str, Any]) -> Tensor:
        name = meta.get("array")
        if isinstance(name, str) and name in self._tensors:
            return self._tensors[name]
        dtype = self._dtype(meta.get("dtype"))
        shape = meta.get("shape")
        if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
            raise self.fail(f"tensor {name!r:.40} has a bad shape {shape!r:.80}")
        if dtype is _dtype.bfloat16:  # stored as its uint16 bit patterns (see _Encoder._tensor)
            array = self._array(name, np.dtype(np.uint16), tuple(shape)).view(_dtype.BFLOAT16_STORAGE)
        else:
            array = self._array(name, dtype.numpy, tuple(shape))
        target = self._target_device(meta.get("device"))
        data = array
        if target.type != "cpu":
            try:
                data = move_array(array, target)
            except CudaUnavailableError as err:
                raise CudaUnavailableError(
                    f"numdiff.load: {self.archive.source} holds a tensor saved on {meta.get('device')}, which "
                    f"cannot be restored on {target} here ({err}). Pass map_location='cpu' to load it on the CPU."
                ) from None
        requires_grad = meta.get("requires_grad") is True and dtype.is_floating_point
        if meta.get("parameter") is True:
            t = Parameter(Tensor._wrap(data, None, None), requires_grad=requires_grad)
        else:
            t = Tensor._wrap(data, None, None)
            if requires_grad:
                t.requires_grad_(True)
        self._tensors[name] = t
        return t

    def _target_device(self, saved: Any) -> device:
        try:
            saved_device = device(saved)
        except (TypeError, ValueError) as err:
            raise self.fail(f"bad tensor device: {err}") from None
        location = self.map_location
        if isinstance(location, dict):
            location = location.get(str(saved_device), saved_device)
        elif callable(location) and not isinstance(location, device):
            # PyTorch calls it with each storage (loaded on the CPU) and its saved location, and
            # keeps what it returns: `lambda storage, loc: storage` loads on the CPU,
            # `storage.cuda()` moves. A CPU tensor stands in for the storage here.
            moved = location(Tensor._wrap(np.empty(0, np.uint8), None, None), str(saved_device))
            return getattr(moved, "device", device("cpu"))
        return saved_device if location is None else to_device(location)


def load(
    f: str | os.PathLike | BinaryIO,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load an object saved by `numdiff.save`.

    `map_location` moves tensors: a device (``"cpu"``), a dict from saved device names to
    devices (``{"cuda:0": "cpu"}``), or PyTorch's function of (storage, location) whose result's
    device is used (``lambda storage, loc: storage`` loads on the CPU). Tensors, arrays and containers load without any pickle. A
    checkpoint of whole objects (``numdiff.save(model, f)``) carries a pickle: with `weights_only`
    True or None (the default, as in PyTorch 2.6+) its classes must be allowed through
    `add_safe_globals` or `safe_globals`; ``weights_only=False`` imports them (trusted files only).
    A checkpoint that PyTorch wrote (``torch.save``'s zip) loads the same way, without torch.

    With ``mmap=True`` (a path only), arrays stored uncompressed are mapped from the file
    copy-on-write instead of read: memory is used as they are touched, and writing to them never
    changes the file. `pickle_module` (the standard `pickle` only: numdiff's own unpickler reads
    the tensors of a pickle) and `pickle_load_args` (``encoding``, ``errors``) apply to pickles of
    whole objects.

    >>> state = numdiff.load("ckpt.pt", map_location="cpu")
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(
            f"numdiff.load: pickle_module={pickle_module!r:.60} is not supported; numdiff reads the pickles "
            "in its checkpoints with the standard pickle module (leave pickle_module unset)"
        )
    unknown = sorted(set(pickle_load_args) - {"encoding", "errors"})
    if unknown:
        raise TypeError(f"numdiff.load got unexpected keyword arguments {unknown} (pickle accepts encoding and errors)")
    source = repr(f) if hasattr(f, "read") else repr(os.fspath(f))
    handle: Any = f if hasattr(f, "read") else os.fspath(f)
    if mmap and not isinstance(handle, str):
        raise ValueError(f"numdiff.load: mmap=True needs the path of a file, got {type(f).__name__}")
    if isinstance(handle, str) and not os.path.exists(handle):
        raise FileNotFoundError(f"numdiff.load: no such file {handle!r}")
    with CheckpointArchive(handle, source, mmap=bool(mmap)) as archive:
        decoder = _Decoder(archive, map_location, weights_only is not False, pickle_load_args)
        if INDEX_MEMBER not in archive and is_torch_archive(archive):
            return load_torch_archive(archive, decoder._target_device, weights_only is not False)
        if INDEX_MEMBER not in archive:
            raise decoder.fail("it has no numdiff index (saved by another program?)")
        raw_index = archive.read_array(INDEX_MEMBER, np.dtype(np.uint8), ndim=1)
        try:
            index = json.loads(raw_index.tobytes().decode("utf-8"))
        except (ValueError, RecursionError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise decoder.fail(
                f"its index is not valid JSON: {type(err).__name__}: {err}", INDEX_MEMBER
            ) from None
        if not isinstance(index, dict) or index.get("format") != FORMAT or "root" not in index:
            raise decoder.fail("its index is not a numdiff index")
        if index.get("version") != VERSION:
            raise decoder.fail(
                f"format version {index.get('version')!r:.40} is not supported (this numdiff reads {VERSION})"
            )
        try:
            return decoder.decode(index["root"])
        except RecursionError:
            raise decoder.fail("its index is nested too deeply") from None
