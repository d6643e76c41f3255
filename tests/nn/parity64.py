"""float64 parity helpers for the recurrent and attention tests: twin leaves, 1e-10 comparisons,
one backward through both libraries, and loading torch's state_dict into a numdiff module."""

from __future__ import annotations

from typing import Any

import numpy as np

import numdiff

TOL = {"rtol": 1e-10, "atol": 1e-12}


def leaf(array: np.ndarray, requires_grad: bool = True) -> tuple[numdiff.Tensor, Any]:
    """The same values as a numdiff tensor and a torch tensor (bool arrays never require grad)."""
    import torch

    if array.dtype == bool:
        return numdiff.tensor(array), torch.tensor(array)
    return numdiff.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad)


def close(ours: Any, theirs: Any, what: str) -> None:
    """Shapes equal and values within 1e-10 (relative) of torch's."""
    ours = ours.detach().numpy() if isinstance(ours, numdiff.Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != torch's {theirs.shape}"
    np.testing.assert_allclose(ours, theirs, err_msg=what, **TOL)


def backward_both(rng: np.random.Generator, outs: list, outs_t: list) -> None:
    """Backward through both libraries with the same random weight on every output element."""
    import torch

    seeds = [rng.standard_normal(tuple(o.shape)) for o in outs]
    sum((o * numdiff.tensor(s)).sum() for o, s in zip(outs, seeds)).backward()
    sum((o * torch.tensor(s)).sum() for o, s in zip(outs_t, seeds)).backward()


def load_from_torch(ours: numdiff.nn.Module, theirs: Any, eval_mode: bool = True) -> tuple[numdiff.nn.Module, Any]:
    """Load torch's state_dict into our (float64) module; both in eval mode unless told otherwise."""
    ours.load_state_dict({k: numdiff.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    if eval_mode:
        theirs.eval()
        ours.eval()
    return ours, theirs


def compare_parameter_grads(ours: numdiff.nn.Module, theirs: Any) -> None:
    torch_params = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        close(param.grad, torch_params[name].grad, f"grad of {name}")
