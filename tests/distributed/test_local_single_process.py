"""The distributed pieces that need no second rank: post-accumulate hooks, SyncBatchNorm alone."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn


def test_post_accumulate_grad_hook_sees_the_accumulated_gradient_each_backward():
    w = numdiff.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * 3).sum().backward()
    (w * w).sum().backward()
    handle.remove()
    (w * 3).sum().backward()
    assert seen == [[3.0, 3.0], [5.0, 7.0]]
    assert w.grad.tolist() == [8.0, 10.0]


def test_post_accumulate_grad_hook_is_refused_on_non_leaves_naming_the_op():
    w = numdiff.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf tensors: this tensor was produced by MulBackward"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        numdiff.ones(1).register_post_accumulate_grad_hook(lambda t: None)


def test_sync_batchnorm_without_a_process_group_is_batchnorm():
    numdiff.manual_seed(0)
    plain = nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3)).double()
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3)).double())
    synced.load_state_dict(plain.state_dict())
    assert isinstance(synced[1], nn.SyncBatchNorm)
    x = numdiff.randn(4, 1, 5, 5, dtype=numdiff.float64)
    np.testing.assert_allclose(synced(x).detach().numpy(), plain(x).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(synced[1].running_var.numpy(), plain[1].running_var.numpy(), rtol=1e-12)
