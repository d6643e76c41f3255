"""numdiff.save / numdiff.load: round trips, no pickle, corrupted files, atomic replacement."""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import numdiff
from numdiff import serialization
from numdiff.serialization import CheckpointError, load, save


def _tree():
    w = numdiff.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    return {
        "weights": OrderedDict(
            [("layer.weight", w), ("layer.bias", numdiff.zeros(3, dtype=numdiff.float64))]
        ),
        "shared": [w, w],
        "labels": numdiff.tensor([1, 2, 3]),
        "mask": numdiff.tensor([True, False]),
        "scalar": numdiff.tensor(2.5),
        "numbers": (1, -2.5, float("inf"), True, None, "text"),
        "int_keys": {0: "zero", 1: {"nested": [1, 2]}, (2, "x"): 3.0},
        "meta": {"dtype": numdiff.float64, "device": numdiff.device("cpu"), "size": numdiff.Size([2, 3])},
        "array": np.array([[1, 2], [3, 4]], dtype=np.int32),
        "nan": float("nan"),
    }


def test_round_trip_keeps_types_values_and_dtypes(tmp_path):
    path = tmp_path / "ckpt.pt"
    obj = _tree()
    save(obj, path)
    got = load(path)
    assert type(got["weights"]) is OrderedDict and list(got["weights"]) == ["layer.weight", "layer.bias"]
    w = got["weights"]["layer.weight"]
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(6).reshape(2, 3))
    assert w.dtype is numdiff.float32 and w.requires_grad and w.is_leaf
    assert got["weights"]["layer.bias"].dtype is numdiff.float64
    assert got["shared"][0] is got["shared"][1] is w  # one tensor saved twice loads as one object
    assert got["labels"].dtype is numdiff.int64 and got["labels"].tolist() == [1, 2, 3]
    assert got["mask"].dtype is numdiff.bool and got["scalar"].shape == () and got["scalar"].item() == 2.5
    assert got["numbers"] == (1, -2.5, float("inf"), True, None, "text")
    assert type(got["numbers"][0]) is int and type(got["numbers"][3]) is bool
    assert got["int_keys"] == {0: "zero", 1: {"nested": [1, 2]}, (2, "x"): 3.0}
    assert got["meta"]["dtype"] is numdiff.float64 and got["meta"]["device"] == numdiff.device("cpu")
    assert isinstance(got["meta"]["size"], numdiff.Size) and got["meta"]["size"] == (2, 3)
    assert got["array"].dtype == np.int32 and got["array"].tolist() == [[1, 2], [3, 4]]
    assert math.isnan(got["nan"])


def test_parameters_load_as_parameters_and_tensors_as_writable_leaves(tmp_path):
    p = numdiff.nn.Parameter(numdiff.ones(2))
    save({"p": p, "t": numdiff.ones(2)}, tmp_path / "p.pt")
    got = load(tmp_path / "p.pt")
    assert isinstance(got["p"], numdiff.nn.Parameter) and got["p"].requires_grad
    assert not isinstance(got["t"], numdiff.nn.Parameter)
    got["t"].add_(1)
    assert got["t"].tolist() == [2.0, 2.0]


def test_file_is_an_npz_with_a_json_index_and_no_pickle(tmp_path):
    path = tmp_path / "ckpt.pt"
    save({"a": numdiff.ones(2), "b": [1, "x"]}, path)
    with zipfile.ZipFile(path) as archive:
        names = sorted(archive.namelist())
    assert names == ["__index__.npy", "a0.npy"]
    with np.load(path, allow_pickle=False) as archive:
        index = json.loads(archive["__index__"].tobytes())
    assert index["format"] == "numdiff" and index["version"] == 1
    assert index["root"][0] == "dict"


def test_optimizer_and_model_state_round_trip_and_training_continues_identically(tmp_path):
    numdiff.manual_seed(0)
    x, y = numdiff.randn(4, 3), numdiff.randn(4)

    def make_model():
        return OrderedDict(w=numdiff.nn.Parameter(numdiff.randn(3)), b=numdiff.nn.Parameter(numdiff.zeros(1)))

    def train_step(model, opt):
        opt.zero_grad()
        (((x * model["w"]).sum(1) + model["b"] - y) ** 2).mean().backward()
        opt.step()

    model = make_model()
    opt = numdiff.optim.Adam(model.values(), lr=0.1)
    train_step(model, opt)
    state = OrderedDict((k, p.detach()) for k, p in model.items())
    save({"model": state, "optim": opt.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = load(tmp_path / "ckpt.pt")
    assert sorted(ckpt["optim"]["state"]) == [0, 1]
    assert ckpt["optim"]["state"][0]["step"].item() == 1.0

    model2 = make_model()
    with numdiff.no_grad():
        for key, p in model2.items():
            p.copy_(ckpt["model"][key])
    opt2 = numdiff.optim.Adam(model2.values(), lr=0.5)
    opt2.load_state_dict(ckpt["optim"])
    assert opt2.param_groups[0]["lr"] == 0.1
    for _ in range(2):
        train_step(model, opt)
        train_step(model2, opt2)
    for key in model:
        np.testing.assert_array_equal(model[key].detach().numpy(), model2[key].detach().numpy())


def test_file_objects_work_too():
    buffer = io.BytesIO()
    save([numdiff.ones(3)], buffer)
    buffer.seek(0)
    assert load(buffer)[0].tolist() == [1.0, 1.0, 1.0]


def test_unsupported_objects_are_refused_naming_where_they_are(tmp_path):
    with pytest.raises(TypeError, match=r"cannot save the function at obj\['opts'\]\[1\]"):
        save({"opts": [1, lambda: 0]}, tmp_path / "x.pt")  # other objects pickle; a lambda cannot
    with pytest.raises(TypeError, match="NumPy array of dtype object"):
        save(np.array([None]), tmp_path / "x.pt")
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "flip_byte", "garbage", "empty"])
def test_damaged_files_raise_a_checkpoint_error_naming_the_path(tmp_path, damage):
    path = tmp_path / "ckpt.pt"
    save({"w": numdiff.tensor(np.arange(1000, dtype=np.float32))}, path)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip_byte":
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("a0.npy")
        position = info.header_offset + 30 + len(info.filename) + 200  # inside the array's data
        path.write_bytes(raw[:position] + bytes([raw[position] ^ 0xFF]) + raw[position + 1 :])
    elif damage == "garbage":
        path.write_bytes(b"not a checkpoint at all" * 10)
    else:
        path.write_bytes(b"")
    with pytest.raises(CheckpointError, match=str(path).replace("\\", "\\\\")):
        load(path)


def test_other_npz_and_npy_files_are_refused(tmp_path):
    np.savez(tmp_path / "plain.npz", x=np.ones(2))
    with pytest.raises(CheckpointError, match="no numdiff index"):
        load(tmp_path / "plain.npz")
    np.save(tmp_path / "one.npy", np.ones(2))
    with pytest.raises(CheckpointError, match="single ndarray"):
        load(tmp_path / "one.npy")


def _write_with_index(path, index: dict, arrays: dict) -> None:
    members = dict(arrays)
    members["__index__"] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    with open(path, "wb") as handle:
        np.savez(handle, **members)


@pytest.mark.parametrize(
    ("root", "arrays", "message"),
    [
        (["tensor", {"array": "a9", "dtype": "float32", "shape": [2]}], {}, "missing array 'a9'"),
        (
            ["tensor", {"array": "a0", "dtype": "float64", "shape": [2]}],
            {"a0": np.ones(2, np.float32)},
            "index says",
        ),
        (
            ["tensor", {"array": "a0", "dtype": "uint32", "shape": [2]}],
            {"a0": np.ones(2, np.uint32)},
            "unknown dtype",
        ),
        (["callable", "os.system"], {}, "unknown or malformed node kind 'callable'"),
        (["int", "3"], {}, "malformed node kind .int."),
    ],
)
def test_inconsistent_indexes_are_refused(tmp_path, root, arrays, message):
    path = tmp_path / "bad.pt"
    _write_with_index(path, {"format": "numdiff", "version": 1, "root": root}, arrays)
    with pytest.raises(CheckpointError, match=message):
        load(path)


def test_a_newer_format_version_is_refused(tmp_path):
    _write_with_index(tmp_path / "v2.pt", {"format": "numdiff", "version": 2, "root": ["none"]}, {})
    with pytest.raises(CheckpointError, match="format version 2 is not supported"):
        load(tmp_path / "v2.pt")


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load(tmp_path / "nope.pt")


class _InterruptedError(Exception):
    pass


@pytest.mark.parametrize("failure", [_InterruptedError, KeyboardInterrupt])
def test_a_save_interrupted_mid_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch, failure):
    path = tmp_path / "ckpt.pt"
    save({"epoch": 1, "w": numdiff.ones(4)}, path)
    before = path.read_bytes()
    real_write_array = np.lib.format.write_array
    calls = []

    def write_half_then_fail(fp, array, *args, **kwargs):
        calls.append(array.shape)
        if len(calls) == 2:
            fp.write(b"\0" * 64)
            raise failure("disk unplugged")
        return real_write_array(fp, array, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", write_half_then_fail)
    with pytest.raises(failure):
        save({"epoch": 2, "w": numdiff.zeros(4), "v": numdiff.zeros(100)}, path)
    assert len(calls) == 2  # the failure really happened mid-archive
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert load(path)["epoch"] == 1
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # the temporary file is gone


def test_a_failed_fsync_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save("old", path)

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(serialization.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        save("new", path)
    monkeypatch.undo()
    assert load(path) == "old" and os.listdir(tmp_path) == ["ckpt.pt"]


def test_saving_over_a_checkpoint_keeps_its_permissions(tmp_path):
    path = tmp_path / "ckpt.pt"
    save(1, path)
    os.chmod(path, 0o640)
    save(2, path)
    assert load(path) == 2 and (os.stat(path).st_mode & 0o777) == 0o640


def test_map_location_and_missing_cuda(tmp_path):
    path = tmp_path / "ckpt.pt"
    save(numdiff.ones(2), path)
    assert load(path, map_location="cpu").device == numdiff.device("cpu")
    assert load(path, map_location={"cpu": "cpu"}).tolist() == [1.0, 1.0]
    _write_with_index(
        path,
        {
            "format": "numdiff",
            "version": 1,
            "root": ["tensor", {"array": "a0", "dtype": "float32", "shape": [2], "device": "cuda:0"}],
        },
        {"a0": np.ones(2, np.float32)},
    )
    assert load(path, map_location="cpu").tolist() == [1.0, 1.0]
    if not numdiff.cuda.is_available():
        with pytest.raises(RuntimeError, match="map_location='cpu'"):
            load(path)


def test_a_container_that_contains_itself_is_refused_naming_where(tmp_path):
    loop = [numdiff.ones(2)]
    loop.append({"again": loop})
    with pytest.raises(TypeError, match=r"list at obj\[1\]\['again'\] contains itself"):
        save(loop, tmp_path / "x.pt")
    shared = [1, 2]
    assert _round_trip({"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}  # shared, not a cycle
    assert not os.listdir(tmp_path)


def _round_trip(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer)


def test_map_location_may_be_torchs_storage_function(tmp_path):
    # `torch.load(path, map_location=lambda storage, loc: storage)`, the old tutorials' CPU load,
    # raised "device must be a string" on numdiff.
    path = tmp_path / "state.pt"
    numdiff.save({"w": numdiff.arange(3.0), "n": 2}, path)
    seen = []

    def keep(storage, location):
        seen.append(location)
        return storage

    state = numdiff.load(path, map_location=keep)
    assert state["w"].tolist() == [0.0, 1.0, 2.0] and state["w"].device.type == "cpu" and state["n"] == 2
    assert seen == ["cpu"]
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(3.0)}, path)
    assert numdiff.load(path, map_location=lambda storage, loc: storage)["w"].tolist() == [0.0, 1.0, 2.0]
