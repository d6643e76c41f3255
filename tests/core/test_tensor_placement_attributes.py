"""Tensor and Module attributes about placement that PyTorch programs use: is_<device> flags,
layout flags, .to(..., non_blocking=True), .cuda(non_blocking=...), memory_format."""

import pytest

import numdiff

FLAGS = ["is_xpu", "is_mps", "is_ipu", "is_hpu", "is_mtia", "is_vulkan", "is_mkldnn", "is_xla", "is_maia",
         "is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested"]


@pytest.mark.parametrize("flag", FLAGS)
def test_flags_of_devices_and_layouts_numdiff_lacks_are_false_as_for_a_pytorch_cpu_tensor(flag):
    torch = pytest.importorskip("torch")
    assert getattr(numdiff.ones(2), flag) is False
    assert getattr(torch.ones(2), flag, False) is False  # where PyTorch has the flag, it agrees


def test_every_is_flag_of_a_pytorch_tensor_exists():
    torch = pytest.importorskip("torch")
    theirs = {name for name in dir(torch.ones(1)) if name.startswith("is_") and not callable(getattr(torch.ones(1), name))}
    assert theirs - set(dir(numdiff.ones(1))) == set()


def test_to_accepts_non_blocking_and_memory_format_and_positional_flags():
    t = numdiff.ones(2, dtype=numdiff.float64)
    assert t.to("cpu", non_blocking=True) is t
    assert t.to(numdiff.float32, non_blocking=True).dtype is numdiff.float32
    assert t.to("cpu", numdiff.float32, True).dtype is numdiff.float32  # (device, dtype, non_blocking)
    assert t.cpu().to(device="cpu", copy=True, non_blocking=False) is not t
    layer = numdiff.nn.Linear(2, 2)
    assert layer.to("cpu", non_blocking=True) is layer
    assert layer.to(numdiff.float64, non_blocking=True).weight.dtype is numdiff.float64
