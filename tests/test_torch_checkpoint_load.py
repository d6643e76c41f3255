"""numdiff.load reads checkpoints that PyTorch wrote (torch.save's zip with raw storages), without
torch and without running the file's pickle code; crafted storages and geometries are refused."""

import io
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import numdiff
from numdiff.serialization import CheckpointError

torch = pytest.importorskip("torch")


def test_a_pytorch_state_dict_loads_into_the_same_numdiff_model(tmp_path):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    reference(torch.randn(5, 3))  # running statistics move
    torch.save(reference.state_dict(), tmp_path / "ref.pt")
    model = numdiff.nn.Sequential(numdiff.nn.Linear(3, 4), numdiff.nn.BatchNorm1d(4), numdiff.nn.Linear(4, 2))
    model.load_state_dict(numdiff.load(tmp_path / "ref.pt"))
    model.eval(), reference.eval()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    expected = reference(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(model(numdiff.tensor(x)).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_views_dtypes_parameters_and_python_values_come_back(tmp_path):
    x = torch.arange(12.0).reshape(3, 4)
    saved = {
        "transposed": x.t(), "row": x[1], "bf16": x.bfloat16(), "half": x.half(), "long": torch.arange(3),
        "mask": x > 3, "double": x.double(), "param": torch.nn.Parameter(torch.ones(2)), "epoch": 7,
        "nested": [1.5, ("a", None)], "device": torch.device("cpu"), "dtype": torch.float64,
    }  # fmt: skip
    torch.save(saved, tmp_path / "mixed.pt")
    loaded = numdiff.load(tmp_path / "mixed.pt")
    for key in ("transposed", "row", "half", "long", "mask", "double"):
        np.testing.assert_array_equal(loaded[key].numpy(), saved[key].numpy())
        assert str(loaded[key].dtype).split(".")[1] == str(saved[key].dtype).split(".")[1]
    assert loaded["bf16"].dtype is numdiff.bfloat16
    np.testing.assert_array_equal(loaded["bf16"].float().numpy(), x.numpy())
    assert type(loaded["param"]) is numdiff.nn.Parameter and loaded["param"].requires_grad
    assert loaded["epoch"] == 7 and loaded["nested"] == [1.5, ("a", None)]
    assert loaded["device"] == numdiff.device("cpu") and loaded["dtype"] is numdiff.float64


def test_a_whole_pytorch_module_needs_weights_only_false_and_becomes_numdiffs(tmp_path):
    torch.save(torch.nn.Linear(2, 3), tmp_path / "linear.pt")
    with pytest.raises(pickle.UnpicklingError, match="refused the global torch.nn.modules.linear.Linear"):
        numdiff.load(tmp_path / "linear.pt")
    layer = numdiff.load(tmp_path / "linear.pt", weights_only=False)
    assert isinstance(layer, numdiff.nn.Linear) and layer(numdiff.ones(1, 2)).shape == (1, 3)


def test_loading_never_imports_torch(tmp_path):
    torch.save({"w": torch.ones(2, 2)}, tmp_path / "w.pt")
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now fails
        "import numdiff\n"
        f"print(numdiff.load({str(tmp_path / 'w.pt')!r})['w'].sum().item())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "4.0"


def _rewrite(path, member_suffix, new_bytes):
    with zipfile.ZipFile(path) as src:
        members = {name: src.read(name) for name in src.namelist()}
    name = next(n for n in members if n.endswith(member_suffix))
    members[name] = new_bytes(members[name])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as dst:
        for key, value in members.items():
            dst.writestr(key, value)
    buffer.seek(0)
    return buffer


def test_a_storage_shorter_than_its_reference_is_refused(tmp_path):
    torch.save({"w": torch.ones(100)}, tmp_path / "w.pt")
    crafted = _rewrite(tmp_path / "w.pt", "data/0", lambda raw: raw[:40])
    with pytest.raises(CheckpointError, match="storage 0 holds 10 elements, its reference says 100"):
        numdiff.load(crafted)


def test_a_tensor_reaching_past_its_storage_is_refused(tmp_path):
    torch.save({"w": torch.ones(4, 4)}, tmp_path / "w.pt")

    def bigger(raw):  # size (4, 4) -> (4, 400): the pickle stores the sizes as small ints
        position = raw.index(b"K\x04K\x04\x86")
        return raw[:position] + b"K\x04M\x90\x01\x86" + raw[position + 5 :]

    crafted = _rewrite(tmp_path / "w.pt", "data.pkl", bigger)
    with pytest.raises(CheckpointError, match="reaches past its storage of 16 elements"):
        numdiff.load(crafted)


def test_a_pytorch_file_with_a_code_running_global_is_refused(tmp_path):
    marker = tmp_path / "ran"
    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    payload = pickle.dumps({"x": _MakeDirs(str(marker))}, protocol=2)
    crafted = _rewrite(tmp_path / "w.pt", "data.pkl", lambda raw: payload)
    with pytest.raises(pickle.UnpicklingError, match="refused the global"):
        numdiff.load(crafted)
    assert not marker.exists()


class _MakeDirs:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.makedirs, (self.path,))
