"""AdaptiveLogSoftmaxWithLoss against PyTorch's (same weights): target log-probabilities, loss,
gradients, log_prob and predict; float64 gradient checks; arguments refused before any product."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

TARGETS = np.array([0, 4, 5, 11, 12, 19, 3, 7, 15, 19])


def _pair(dtype: str, head_bias: bool, div_value: float = 2.0):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], div_value=div_value, head_bias=head_bias)
    theirs = theirs.to(getattr(torch, dtype))
    ours = numdiff.nn.AdaptiveLogSoftmaxWithLoss(8, 20, (5, 12), div_value=div_value, head_bias=head_bias)
    ours = ours.to(getattr(numdiff, dtype))
    ours.load_state_dict({name: numdiff.tensor(value.detach().numpy()) for name, value in theirs.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("head_bias", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adaptive_softmax_matches_pytorch(dtype, head_bias):
    ours, theirs = _pair(dtype, head_bias)
    rng = np.random.default_rng(1)
    x0 = (rng.standard_normal((len(TARGETS), 8)) * 2).astype(dtype)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    results = []
    for lib, module in ((numdiff, ours), (torch, theirs)):
        x = lib.tensor(x0, requires_grad=True)
        out = module(x, lib.tensor(TARGETS))
        out.loss.backward()
        single = module(x[3], lib.tensor(TARGETS[3]))
        results.append({
            "output": out.output.detach().numpy(), "loss": out.loss.item(), "input grad": x.grad.numpy(),
            "head grad": module.head.weight.grad.numpy(), "tail grad": module.tail[1][1].weight.grad.numpy(),
            "log_prob": module.log_prob(x).detach().numpy(), "predict": module.predict(x).numpy(),
            "single output": single.output.detach().numpy(), "single loss": single.loss.item(),
        })  # fmt: skip
    for key, expected in results[1].items():
        np.testing.assert_allclose(results[0][key], expected, err_msg=key, **tol)
    assert tuple(results[0]["log_prob"].shape) == (len(TARGETS), 20)
    np.testing.assert_allclose(np.exp(results[0]["log_prob"]).sum(1), 1.0, rtol=1e-5)


def test_predict_picks_tail_classes_as_the_full_distribution_does():
    ours, _ = _pair("float64", True)
    with numdiff.no_grad():
        ours.head.bias[5:] = 6.0  # every row's best head entry is a cluster
    x = numdiff.tensor(np.random.default_rng(2).standard_normal((6, 8)))
    predicted = ours.predict(x)
    assert (predicted >= 5).all().item()
    np.testing.assert_array_equal(predicted.numpy(), ours.log_prob(x).argmax(1).numpy())


def test_adaptive_softmax_passes_float64_gradcheck():
    ours, _ = _pair("float64", True)
    x = numdiff.tensor(np.random.default_rng(3).standard_normal((5, 8)), requires_grad=True)
    targets = numdiff.tensor([1, 6, 13, 19, 4])
    assert gradcheck(lambda a: ours(a, targets).output, (x,))
    assert gradgradcheck(lambda a: ours(a, targets).loss, (x,))
    assert gradcheck(lambda a: ours.log_prob(a), (x,))


def test_adaptive_softmax_refuses_bad_arguments_naming_the_values():
    name = "AdaptiveLogSoftmaxWithLoss"
    with pytest.raises(ValueError, match=rf"{name}: cutoffs should be a sequence of length larger than 0"):
        numdiff.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [])
    with pytest.raises(ValueError, match=rf"{name}: cutoffs should be .* between 1 and n_classes-1 \(19\), got \[12, 5\]"):
        numdiff.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [12, 5])
    with pytest.raises(ValueError, match=r"got \[5, 20\]"):
        numdiff.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 20])
    module = numdiff.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12])
    x = numdiff.randn(3, 8)
    with pytest.raises(RuntimeError, match=rf"{name}: target values should be in \[0, 19\], but values in range \[-1, 20\]"):
        module(x, numdiff.tensor([-1, 3, 20]))
    with pytest.raises(RuntimeError, match=rf"{name}: input and target should have the same size .* \(3, 8\) and \(2,\)"):
        module(x, numdiff.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=rf"{name}: 0-D or 1-D target tensor expected.*\(3, 1\)"):
        module(x, numdiff.tensor([[1], [2], [3]]))
    with pytest.raises(ValueError, match=rf"{name}.log_prob: expected input of shape \(N, 8\) or \(8,\), got \(3, 4\)"):
        module.log_prob(numdiff.randn(3, 4))
