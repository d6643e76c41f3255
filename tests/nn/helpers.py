"""Shared helpers for the nn tests: numdiff/PyTorch twins of the same data, and closeness checks."""

from __future__ import annotations

from typing import Any

import numpy as np

import numdiff


def twins(array: np.ndarray, requires_grad: bool = True) -> tuple[numdiff.Tensor, Any]:
    """The same values as a numdiff leaf and a torch leaf (float arrays require grad by default)."""
    import torch

    requires_grad = requires_grad and array.dtype.kind == "f"
    ours = numdiff.tensor(array, requires_grad=requires_grad)
    theirs = torch.tensor(array, requires_grad=requires_grad)
    return ours, theirs


def assert_close(ours: Any, theirs: Any, rtol: float = 1e-6, atol: float = 1e-8, what: str = "") -> None:
    """Compare a numdiff tensor with a torch tensor (or arrays), shapes included."""
    if isinstance(ours, numdiff.Tensor):
        ours = ours.detach().numpy()
    if hasattr(theirs, "detach"):
        theirs = theirs.detach().numpy()
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != torch's {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


def copy_state(ours: numdiff.nn.Module, theirs: Any) -> None:
    """Load our module's parameters and buffers into the torch twin (key for key)."""
    import torch

    state = {key: torch.tensor(value.numpy()) for key, value in ours.state_dict().items()}
    theirs.load_state_dict(state)


def check_module_parity(
    ours: numdiff.nn.Module,
    theirs: Any,
    *arrays: np.ndarray,
    rng: np.random.Generator,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """Same weights, same inputs: outputs, input gradients and parameter gradients must agree."""
    copy_state(ours, theirs)
    pairs = [twins(a) for a in arrays]
    out = ours(*(p[0] for p in pairs))
    expected = theirs(*(p[1] for p in pairs))
    assert_close(out, expected, rtol, atol, "forward")
    seed = rng.standard_normal(tuple(out.shape)).astype(out.detach().numpy().dtype)
    out.backward(numdiff.tensor(seed))
    import torch

    expected.backward(torch.tensor(seed))
    for i, (mine, theirs_input) in enumerate(pairs):
        if mine.requires_grad:
            assert_close(mine.grad, theirs_input.grad, rtol, atol, f"grad of input {i}")
    torch_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        assert_close(param.grad, torch_params[name].grad, rtol, atol, f"grad of {name}")
    torch_buffers = dict(theirs.named_buffers())
    for name, buffer in ours.named_buffers():
        assert_close(buffer, torch_buffers[name], rtol, atol, f"buffer {name}")
