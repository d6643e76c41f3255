"""numdiff.load on crafted checkpoints: zip bombs, lying .npy headers, hostile indexes.

Each file here is built by hand the way an attacker would build it; loading must end in a
CheckpointError that names the file (and the member), after reading only what the index names
and never allocating what a header merely claims.
"""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import numdiff
from numdiff.serialization import CheckpointError, load

_HEADER = {"format": "numdiff", "version": 1}


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def _index_bytes(root) -> bytes:
    return _npy_bytes(np.frombuffer(json.dumps({**_HEADER, "root": root}).encode(), dtype=np.uint8))


def _write_zip(path, members: dict[str, bytes], deflated: tuple[str, ...] = ()) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            method = zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED
            archive.writestr(name, data, compress_type=method)


def _load_peak_bytes(path) -> tuple[BaseException | None, int]:
    """Load `path` and return the exception it raised and the peak bytes traced meanwhile."""
    tracemalloc.start()
    try:
        load(path)
        error = None
    except Exception as err:
        error = err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return error, peak


def test_members_the_index_does_not_name_are_never_inflated(tmp_path):
    # 64 MiB of zeros deflates to 64 KiB: np.load inflated every member, named or not
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1 << 26, np.uint8))
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, header)
    path = tmp_path / "bomb.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__index__.npy", _index_bytes(["str", "harmless"]))
        with archive.open("junk.npy", "w", force_zip64=True) as member:
            member.write(head.getvalue())
            block = bytes(1 << 20)
            for _ in range(64):
                member.write(block)
    assert path.stat().st_size < 1 << 20
    error, peak = _load_peak_bytes(path)
    assert error is None
    assert peak < 8 << 20, f"loading allocated {peak} bytes for a one-string checkpoint"
    assert load(path) == "harmless"


def test_a_header_that_declares_more_data_than_the_member_holds_is_refused_before_allocating(tmp_path):
    declared = (1 << 28,)  # 2 GiB of float64 in a member of a few hundred bytes
    lying = io.BytesIO()
    np.lib.format.write_array_header_1_0(lying, {"descr": "<f8", "fortran_order": False, "shape": declared})
    lying.write(bytes(16))
    path = tmp_path / "huge.pt"
    root = ["tensor", {"array": "a0", "dtype": "float64", "shape": list(declared), "device": "cpu"}]
    _write_zip(path, {"__index__.npy": _index_bytes(root), "a0.npy": lying.getvalue()})
    error, peak = _load_peak_bytes(path)
    assert isinstance(error, CheckpointError), repr(error)
    assert str(path) in str(error) and "'a0'" in str(error) and "2147483648 bytes" in str(error)
    assert peak < 8 << 20


def _patch_member_sizes(raw: bytes, name: str, crc: int, compressed: int, uncompressed: int) -> bytes:
    """Rewrite member `name`'s CRC and sizes in the central directory (where zipfile reads them)."""
    entry = raw.index(b"PK\x01\x02")
    while True:
        name_length = struct.unpack_from("<H", raw, entry + 28)[0]
        if raw[entry + 46 : entry + 46 + name_length] == name.encode():
            break
        entry = raw.index(b"PK\x01\x02", entry + 4)
    patched = bytearray(raw)
    struct.pack_into("<III", patched, entry + 16, crc, compressed, uncompressed)
    return bytes(patched)


def test_a_stored_member_whose_sizes_disagree_is_refused(tmp_path):
    path = tmp_path / "sizes.pt"
    array = _npy_bytes(np.arange(4, dtype=np.int64))
    root = ["ndarray", "a0"]
    _write_zip(path, {"__index__.npy": _index_bytes(root), "a0.npy": array})
    raw = path.read_bytes()
    path.write_bytes(_patch_member_sizes(raw, "a0.npy", zlib.crc32(array), len(array), len(array) * 1000))
    with pytest.raises(CheckpointError, match=r"member 'a0'.*more than its compression can produce"):
        load(path)


def test_members_whose_data_overlap_are_refused(tmp_path):
    # member a0 is stretched over a1's local header and data: one kernel read twice
    small, big = np.zeros(64, np.uint8), np.arange(20_000, dtype=np.int64)
    path = tmp_path / "overlap.pt"
    root = ["list", [["ndarray", "a0"], ["ndarray", "a1"]]]
    _write_zip(
        path, {"__index__.npy": _index_bytes(root), "a0.npy": _npy_bytes(small), "a1.npy": _npy_bytes(big)}
    )
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        first, second = archive.getinfo("a0.npy"), archive.getinfo("a1.npy")
    start = first.header_offset + 30 + len("a0.npy")
    end = second.header_offset + 30 + len("a1.npy") + second.compress_size
    stretched = bytearray(raw[start:end])
    header_bytes = len(_npy_bytes(small)) - small.nbytes
    new_header = _npy_bytes(np.zeros(end - start - header_bytes, np.uint8))[:header_bytes]
    stretched[:header_bytes] = new_header
    raw = raw[:start] + bytes(stretched) + raw[end:]
    path.write_bytes(_patch_member_sizes(raw, "a0.npy", zlib.crc32(stretched), end - start, end - start))
    with pytest.raises(CheckpointError, match=r"member 'a1'.*overlap"):
        load(path)


_CRAFTED = {
    "raw-bytes index": (
        {"__index__": json.dumps({**_HEADER, "root": ["none"]}).encode()},
        "'__index__'.*raw bytes",
    ),
    "index nested 200,000 deep": (None, "'__index__'.*RecursionError"),
    "list key": ({"root": ["dict", [[["list", []], ["int", 1]]]]}, r"dict key \['list', \[\]\]"),
    "dict key": ({"root": ["dict", [[["dict", []], ["int", 1]]]]}, r"dict key \['dict', \[\]\]"),
    "tuple key holding a list": (
        {"root": ["dict", [[["tuple", [["list", []]]], ["int", 1]]]]},
        "dict key",
    ),
    "array node on a raw member": ({"root": ["ndarray", "a0"], "a0": b"raw bytes"}, "'a0'.*raw bytes"),
    "unicode array": (
        {"root": ["ndarray", "a0"], "a0.npy": _npy_bytes(np.array(["text"]))},
        "'a0'.*dtype <U4",
    ),
    "structured array": (
        {"root": ["ndarray", "a0"], "a0.npy": _npy_bytes(np.zeros(2, [("x", "<f4")]))},
        "'a0'.*not a numeric dtype",
    ),
    "object array": (
        {"root": ["ndarray", "a0"], "a0.npy": _npy_bytes(np.array([None, 1], dtype=object))},
        "'a0'.*dtype object",
    ),
    "tensor on a pickled object array": (
        {
            "root": ["tensor", {"array": "a0", "dtype": "float32", "shape": [2], "device": "cpu"}],
            "a0.npy": _npy_bytes(np.array([{"x": 1}, [2]], dtype=object)),
        },
        "'a0'.*dtype object is not a numeric dtype",
    ),
    "tensor shape disagreeing with its header": (
        {
            "root": ["tensor", {"array": "a0", "dtype": "float32", "shape": [3], "device": "cpu"}],
            "a0.npy": _npy_bytes(np.ones(2, np.float32)),
        },
        r"'a0'.*shape is \(2,\), but the index says \(3,\)",
    ),
    "tensor with a negative shape": (
        {"root": ["tensor", {"array": "a0", "dtype": "float32", "shape": [-1], "device": "cpu"}]},
        "bad shape",
    ),
    "member that is not .npy": ({"root": ["ndarray", "a0"], "a0.npy": b"PK not numpy"}, "'a0'.*not a .npy"),
}


@pytest.mark.parametrize("case", list(_CRAFTED))
def test_crafted_checkpoints_raise_a_checkpoint_error_naming_the_file(tmp_path, case):
    spec, message = _CRAFTED[case]
    path = tmp_path / "crafted.pt"
    if spec is None:
        depth = 200_000
        root = '["list", [' * depth + '["none"]' + "]]" * depth
        text = json.dumps({**_HEADER, "root": "ROOT"}).replace('"ROOT"', root)
        _write_zip(path, {"__index__.npy": _npy_bytes(np.frombuffer(text.encode(), dtype=np.uint8))})
    elif "__index__" in spec:
        _write_zip(path, spec)
    else:
        members = {name: data for name, data in spec.items() if name != "root"}
        _write_zip(path, {"__index__.npy": _index_bytes(spec["root"]), **members})
    with pytest.raises(CheckpointError, match=message) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_a_deflated_checkpoint_still_loads(tmp_path):
    # np.savez_compressed writes deflated members; checking sizes must not refuse honest ones
    weights = np.zeros((64, 64), np.float32)
    root = ["tensor", {"array": "a0", "dtype": "float32", "shape": [64, 64], "device": "cpu"}]
    path = tmp_path / "deflated.pt"
    members = {"__index__.npy": _index_bytes(root), "a0.npy": _npy_bytes(weights)}
    _write_zip(path, members, deflated=("a0.npy",))
    with zipfile.ZipFile(path) as archive:
        assert archive.getinfo("a0.npy").compress_size * 100 < weights.nbytes
    got = load(path)
    assert got.shape == (64, 64) and got.dtype is numdiff.float32 and not got.detach().numpy().any()


def test_running_out_of_memory_names_the_file_and_the_member(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    numdiff.save({"w": numdiff.ones(3)}, path)
    real_empty = np.empty

    def empty_without_memory_for_the_tensor(shape, dtype=float):
        if tuple(shape) == (3,):
            raise MemoryError()
        return real_empty(shape, dtype)

    monkeypatch.setattr(np, "empty", empty_without_memory_for_the_tensor)
    with pytest.raises(MemoryError, match=r"ckpt.pt' member 'a0' holds 12 bytes \(float32 of shape \(3,\)\)"):
        load(path)


def test_a_fortran_ordered_member_is_read_as_numpy_reads_it(tmp_path):
    """np.savez writes a Fortran-ordered array with fortran_order in its header; np.load reads its
    values correctly, and so does numdiff.load (as C-ordered arrays and tensors)."""
    values = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    path = tmp_path / "fortran.pt"
    tensor_meta = {"array": "a1", "dtype": "float32", "shape": [3, 2], "device": "cpu"}
    root = ["list", [["ndarray", "a0"], ["tensor", tensor_meta]]]
    _write_zip(path, {
        "__index__.npy": _index_bytes(root),
        "a0.npy": _npy_bytes(values),
        "a1.npy": _npy_bytes(np.asfortranarray(values.T.astype(np.float32))),
    })
    array, tensor = load(path)
    np.testing.assert_array_equal(array, values)
    assert array.flags.c_contiguous
    np.testing.assert_array_equal(tensor.numpy(), values.T)
