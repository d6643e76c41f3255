"""numdiff.hub (torch.hub's file side) and numdiff.utils.model_zoo: downloads go through a
temporary file with an optional SHA-256 prefix check, checkpoints are cached in the hub folder
and loaded with numdiff.load (a torch.save'd file too), and the repository loaders are refused
on use with what works instead. URLs here are file:// URLs, so no network is needed."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.utils import model_zoo


def test_download_checks_the_hash_prefix_and_leaves_no_partial_file(tmp_path):
    source = tmp_path / "weights.bin"
    source.write_bytes(b"numdiff" * 100)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    numdiff.hub.download_url_to_file(source.as_uri(), tmp_path / "copy.bin", digest[:8], progress=False)
    assert (tmp_path / "copy.bin").read_bytes() == source.read_bytes()
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000"'):
        numdiff.hub.download_url_to_file(source.as_uri(), tmp_path / "bad.bin", "00000000", progress=False)
    assert not (tmp_path / "bad.bin").exists()
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".partial"] == []


def test_checkpoints_from_a_url_are_cached_in_the_hub_folder_and_load(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    numdiff.manual_seed(0)
    model = nn.Linear(3, 2)
    published = tmp_path / "linear.pt"
    numdiff.save(model.state_dict(), published)
    state = numdiff.hub.load_state_dict_from_url(published.as_uri(), progress=False)
    assert (tmp_path / "home" / "hub" / "checkpoints" / "linear.pt").exists()
    np.testing.assert_array_equal(state["weight"].numpy(), model.weight.detach().numpy())
    published.unlink()  # the second call reads the cache, not the URL
    again = model_zoo.load_url(published.as_uri(), progress=False)
    np.testing.assert_array_equal(again["bias"].numpy(), model.bias.detach().numpy())


def test_a_checkpoint_pytorch_wrote_loads_from_a_url(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(numdiff.hub, "_hub_dir", None)  # set_dir below must not outlive the test
    numdiff.hub.set_dir(tmp_path / "hub")
    weights = torch.arange(6.0).reshape(2, 3)
    torch.save({"weight": weights}, tmp_path / "torch_written.pth")
    state = numdiff.hub.load_state_dict_from_url((tmp_path / "torch_written.pth").as_uri(), progress=False)
    assert numdiff.hub.get_dir() == str(tmp_path / "hub")
    assert (tmp_path / "hub" / "checkpoints" / "torch_written.pth").exists()
    np.testing.assert_array_equal(state["weight"].numpy(), weights.numpy())


@pytest.mark.parametrize("call", [lambda: numdiff.hub.load("pytorch/vision", "resnet18"),
                                  lambda: numdiff.hub.list("pytorch/vision"),
                                  lambda: numdiff.hub.help("pytorch/vision", "resnet18")])
def test_repository_loaders_are_refused_on_use_naming_what_works(call):
    with pytest.raises(NotImplementedError, match="load_state_dict_from_url"):
        call()
