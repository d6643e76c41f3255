"""numdiff.accelerator (backed by numdiff.cuda), numdiff.backends flags and the runtime switches."""

import importlib

import pytest
import torch

import numdiff as nd


def test_accelerator_answers_as_numdiff_cuda_does():
    assert nd.accelerator.is_available() == nd.cuda.is_available()
    assert nd.accelerator.device_count() == nd.cuda.device_count()
    expected = nd.device("cuda") if nd.cuda.is_available() else None
    assert nd.accelerator.current_accelerator(check_available=True) == expected


def test_accelerator_device_choice_in_a_ported_program():
    device = nd.accelerator.current_accelerator().type if nd.accelerator.is_available() else "cpu"
    assert nd.zeros(2, device=device).device.type == device


@pytest.mark.skipif(nd.cuda.is_available(), reason="checks the no-GPU error")
def test_accelerator_device_index_without_a_gpu_says_what_is_missing():
    with pytest.raises(nd.cuda.CudaUnavailableError, match="CUDA is not available"):
        nd.accelerator.set_device_index(0)
    with pytest.raises(nd.cuda.CudaUnavailableError, match="CUDA is not available"):
        nd.accelerator.current_device_index()


def test_accelerator_device_index_none_changes_nothing():
    with nd.accelerator.device_index(None):
        pass


def test_backend_modules_import_like_torchs():
    cudnn = importlib.import_module("numdiff.backends.cudnn")
    for flag in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert isinstance(getattr(cudnn, flag), bool)
    assert nd.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert nd.backends.cudnn.deterministic == torch.backends.cudnn.deterministic
    assert nd.backends.mps.is_available() is False and nd.backends.mps.is_built() is False
    assert nd.backends.cudnn.is_available() is False and nd.backends.cudnn.version() is None


def test_backend_flags_keep_what_a_program_sets():
    saved = nd.backends.cudnn.deterministic, nd.backends.cudnn.benchmark
    try:
        nd.backends.cudnn.deterministic = True
        nd.backends.cudnn.benchmark = False
        assert nd.backends.cudnn.deterministic is True
    finally:
        nd.backends.cudnn.deterministic, nd.backends.cudnn.benchmark = saved


def test_deterministic_algorithms_flag_round_trips():
    assert nd.are_deterministic_algorithms_enabled() is False
    try:
        nd.use_deterministic_algorithms(True)
        assert nd.are_deterministic_algorithms_enabled() is True
    finally:
        nd.use_deterministic_algorithms(False)
    with pytest.raises(TypeError, match="mode must be a bool"):
        nd.use_deterministic_algorithms("yes")


def test_num_threads_round_trips_and_refuses_bad_counts():
    before = nd.get_num_threads()
    nd.set_num_threads(1)
    try:
        assert nd.get_num_threads() == 1
    finally:
        nd.set_num_threads(before)
    with pytest.raises(ValueError, match=r"set_num_threads: n must be between 1 and"):
        nd.set_num_threads(0)


def test_cuda_reports_no_bfloat16_compute():
    # Programs such as nanoGPT pick float16 over bfloat16 from this answer.
    assert nd.cuda.is_bf16_supported() is False
