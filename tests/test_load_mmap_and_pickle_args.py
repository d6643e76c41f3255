"""numdiff.load's mmap, pickle_module and pickle-argument keywords, and numdiff.save's
pickle_module/pickle_protocol, as PyTorch's torch.load/torch.save take them."""

from __future__ import annotations

import mmap
import pickle

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn


def _root(array: np.ndarray):
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def test_mmap_maps_the_arrays_and_writes_never_reach_the_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    state = {"w": numdiff.arange(12.0).reshape(3, 4), "b": numdiff.ones(5, dtype=numdiff.float64)}
    numdiff.save(state, path)
    before = path.read_bytes()
    loaded = numdiff.load(path, mmap=True)
    assert isinstance(_root(loaded["w"].numpy()), mmap.mmap)
    np.testing.assert_array_equal(loaded["w"].numpy(), state["w"].numpy())
    loaded["w"].add_(1.0)  # copy-on-write: the tensor changes, the file does not
    assert float(loaded["w"][0, 0]) == 1.0
    assert path.read_bytes() == before
    np.testing.assert_array_equal(numdiff.load(path)["w"].numpy(), state["w"].numpy())


def test_mmap_state_dict_loads_into_a_module(tmp_path):
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    numdiff.save(model.state_dict(), tmp_path / "m.pt")
    other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    other.load_state_dict(numdiff.load(tmp_path / "m.pt", mmap=True))
    x = numdiff.randn(2, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


def test_mmap_reads_a_checkpoint_pytorch_wrote(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, tmp_path / "t.pt")
    loaded = numdiff.load(tmp_path / "t.pt", mmap=True)
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(6.0).reshape(2, 3))


def test_mmap_needs_a_path():
    with open(__file__, "rb") as handle, pytest.raises(ValueError, match="mmap=True needs the path of a file"):
        numdiff.load(handle, mmap=True)


def test_pickle_protocol_and_module_of_save(tmp_path):
    model = nn.Linear(2, 2)
    numdiff.save(model, tmp_path / "whole.pt", pickle_module=pickle, pickle_protocol=2)
    loaded = numdiff.load(tmp_path / "whole.pt", weights_only=False, pickle_module=pickle, encoding="utf-8")
    np.testing.assert_array_equal(loaded.weight.detach().numpy(), model.weight.detach().numpy())
    with pytest.raises(ValueError, match="pickle_protocol=1 must be an int from 2"):
        numdiff.save(model, tmp_path / "x.pt", pickle_protocol=1)
    with pytest.raises(TypeError, match="must provide a Pickler"):
        numdiff.save(model, tmp_path / "x.pt", pickle_module=object())


def test_load_refuses_what_it_cannot_honour(tmp_path):
    numdiff.save({"a": numdiff.ones(2)}, tmp_path / "a.pt")
    with pytest.raises(ValueError, match="pickle_module=.* is not supported"):
        numdiff.load(tmp_path / "a.pt", pickle_module=object())
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['fix_imports_typo'\]"):
        numdiff.load(tmp_path / "a.pt", fix_imports_typo=True)
