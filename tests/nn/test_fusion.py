"""nn.utils.fusion: a BatchNorm in eval mode folded into the conv or Linear before it, against
PyTorch's fusion of the same weights and the unfused pair, with bad inputs refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import nn

torch = pytest.importorskip("torch")


def _bn_state(features: int, rng: np.random.Generator) -> dict:
    return {
        "weight": rng.standard_normal(features).astype(np.float32),
        "bias": rng.standard_normal(features).astype(np.float32),
        "running_mean": rng.standard_normal(features).astype(np.float32),
        "running_var": rng.uniform(0.5, 2.0, features).astype(np.float32),
        "num_batches_tracked": np.array(3),
    }


def _pair(lib, first, bn, state_first, state_bn):
    first.load_state_dict({k: lib.tensor(v) for k, v in state_first.items()})
    bn.load_state_dict({k: lib.tensor(v) for k, v in state_bn.items()})
    return first.eval(), bn.eval()


@pytest.mark.parametrize("kind", ["conv2d", "conv_transpose2d", "conv1d_no_bias", "linear", "linear_one_feature"])
def test_fused_layer_matches_torchs_fusion_and_the_pair(kind):
    rng = np.random.default_rng(3)
    make = {
        "conv2d": lambda lib: (lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4), (2, 3, 6, 6)),
        "conv_transpose2d": lambda lib: (lib.nn.ConvTranspose2d(3, 4, 3), lib.nn.BatchNorm2d(4), (2, 3, 5, 5)),
        "conv1d_no_bias": lambda lib: (lib.nn.Conv1d(3, 4, 3, bias=False), lib.nn.BatchNorm1d(4), (2, 3, 7)),
        "linear": lambda lib: (lib.nn.Linear(5, 4), lib.nn.BatchNorm1d(4), (6, 5)),
        "linear_one_feature": lambda lib: (lib.nn.Linear(5, 4), lib.nn.BatchNorm1d(1), (6, 5)),
    }[kind]
    first_t, bn_t, shape = make(torch)
    state_first = {k: v.detach().numpy() for k, v in first_t.state_dict().items()}
    state_bn = _bn_state(bn_t.num_features, rng)
    x = rng.standard_normal(shape).astype(np.float32)
    results = {}
    for lib in (torch, numdiff):
        first, bn = _pair(lib, *make(lib)[:2], state_first, state_bn)
        if kind.startswith("linear"):
            fused = lib.nn.utils.fusion.fuse_linear_bn_eval(first, bn)
            pair = bn(first(lib.tensor(x)).unsqueeze(1)).squeeze(1) if kind == "linear_one_feature" else bn(first(lib.tensor(x)))
        else:
            fused = lib.nn.utils.fusion.fuse_conv_bn_eval(first, bn, transpose=kind == "conv_transpose2d")
            pair = bn(first(lib.tensor(x)))
        assert isinstance(fused.weight, lib.nn.Parameter) and fused.weight.requires_grad
        results[lib.__name__] = (fused.weight.detach().numpy(), fused.bias.detach().numpy(), fused(lib.tensor(x)).detach().numpy(), pair.detach().numpy())
    for got, expected in zip(results["numdiff"], results["torch"]):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results["numdiff"][2], results["numdiff"][3], rtol=1e-4, atol=1e-5)


def test_fuse_weights_functions_return_parameters_and_keep_requires_grad():
    w, b = nn.utils.fusion.fuse_conv_bn_weights(
        numdiff.ones(2, 1, 1, 1, requires_grad=False), None, numdiff.zeros(2), numdiff.full((2,), 3.0), 1.0, None, None
    )
    np.testing.assert_allclose(w.detach().numpy().ravel(), [0.5, 0.5])
    assert not w.requires_grad and isinstance(b, nn.Parameter)
    lw, lb = nn.utils.fusion.fuse_linear_bn_weights(
        numdiff.ones(2, 3), numdiff.ones(2), numdiff.ones(2), numdiff.full((2,), 0.25), 0.0, numdiff.full((2,), 2.0), None
    )
    np.testing.assert_allclose(lw.detach().numpy(), np.full((2, 3), 4.0))
    np.testing.assert_allclose(lb.detach().numpy(), [0.0, 0.0])
    assert nn.utils.fuse_conv_bn_eval is nn.utils.fusion.fuse_conv_bn_eval


def test_fusion_refuses_training_modules_and_mismatched_features_naming_them():
    with pytest.raises(ValueError, match=r"fuse_linear_bn_eval: fusion is only for modules in eval mode; BatchNorm1d is training"):
        nn.utils.fusion.fuse_linear_bn_eval(nn.Linear(3, 2).eval(), nn.BatchNorm1d(2))
    with pytest.raises(ValueError, match=r"fuse_linear_bn_eval: the Linear's out_features \(2\) must equal the BatchNorm's num_features \(3\)"):
        nn.utils.fusion.fuse_linear_bn_eval(nn.Linear(3, 2).eval(), nn.BatchNorm1d(3).eval())
    with pytest.raises(ValueError, match=r"fuse_conv_bn_weights: running statistics of shape \(3,\) and \(3,\) do not match the conv weight \(2, 1, 1, 1\)'s 2"):
        nn.utils.fusion.fuse_conv_bn_weights(numdiff.ones(2, 1, 1, 1), None, numdiff.zeros(3), numdiff.ones(3), 1e-5, None, None)
