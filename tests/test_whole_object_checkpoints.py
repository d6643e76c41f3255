"""numdiff.save/load of whole objects (modules, optimizers, a user's classes) under PyTorch's
allow-list rules: weights_only (the default) loads only allowed globals, add_safe_globals and
safe_globals allow more, weights_only=False trusts the file. State dicts keep the npz+JSON format."""

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.head = nn.Linear(2, 2)
        self.act = nn.functional.relu  # a function attribute, as PyTorch programs keep

    def forward(self, x):
        return self.head(self.act(self.conv(x)).mean((2, 3)))


@pytest.fixture(autouse=True)
def _fresh_allow_list():
    clear_safe_globals()
    yield
    clear_safe_globals()


def _trained():
    numdiff.manual_seed(0)
    model = TwoLayer()
    x = numdiff.randn(2, 1, 5, 5)
    model(x).sum().backward()
    return model, x


def test_a_whole_model_needs_its_classes_allowed_under_weights_only(tmp_path):
    model, x = _trained()
    numdiff.save(model, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"refused the global .*TwoLayer.*add_safe_globals"):
        numdiff.load(tmp_path / "model.pt")
    with safe_globals([TwoLayer, nn.Conv2d, nn.Linear, nn.functional.relu]):
        again = numdiff.load(tmp_path / "model.pt")
    assert get_safe_globals() == []
    np.testing.assert_array_equal(again(x).detach().numpy(), model(x).detach().numpy())
    assert type(again.conv.weight) is nn.Parameter and again.conv.weight.requires_grad


def test_add_safe_globals_and_weights_only_false_load_a_model_optimizer_checkpoint(tmp_path):
    model, x = _trained()
    opt = numdiff.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.step()
    numdiff.save({"model": model, "opt": opt, "epoch": 3}, tmp_path / "ckpt.pt")
    trusted = numdiff.load(tmp_path / "ckpt.pt", weights_only=False)
    assert trusted["epoch"] == 3
    assert trusted["opt"].param_groups[0]["params"][0] is trusted["model"].conv.weight  # shared, as saved
    add_safe_globals([TwoLayer, nn.Conv2d, nn.Linear, nn.functional.relu, numdiff.optim.SGD])
    allowed = numdiff.load(tmp_path / "ckpt.pt")
    momentum = allowed["opt"].state[allowed["model"].conv.weight]["momentum_buffer"]
    np.testing.assert_array_equal(momentum.numpy(), opt.state[model.conv.weight]["momentum_buffer"].numpy())


def test_state_dicts_still_use_the_json_index_without_any_pickle(tmp_path):
    model, _ = _trained()
    numdiff.save(model.state_dict(), tmp_path / "sd.pt")
    with zipfile.ZipFile(tmp_path / "sd.pt") as archive:
        assert all(name.startswith("a") or name == "__index__.npy" for name in archive.namelist())
        assert b'"pickle"' not in archive.read("__index__.npy")


def test_a_crafted_pickle_cannot_run_code_under_weights_only(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.makedirs, (str(marker),))

    numdiff.save({"payload": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="refused the global posix.makedirs|refused the global os.makedirs"):
        numdiff.load(tmp_path / "evil.pt")
    assert not marker.exists()


def test_file_objects_and_unpicklable_objects():
    buffer = io.BytesIO()
    numdiff.save({"layer": nn.Linear(2, 2)}, buffer)
    buffer.seek(0)
    assert isinstance(numdiff.load(buffer, weights_only=False)["layer"], nn.Linear)
    with pytest.raises(TypeError, match="safe globals must be classes or functions"):
        add_safe_globals([3])
