"""Recurrent layers read parametrized weights (an orthogonal hidden-to-hidden matrix, weight_norm)
through their properties, as PyTorch's read them through getattr: forward and gradients match torch's."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff

torch = pytest.importorskip("torch")

X = np.random.default_rng(3).standard_normal((2, 5, 3))


def _run(lib, kind, how):
    layer = getattr(lib.nn, kind)(3, 4, num_layers=2, batch_first=True, bidirectional=True).double()
    with lib.no_grad():
        for i, (_, p) in enumerate(sorted(layer.named_parameters())):
            p.copy_(lib.tensor(np.random.default_rng(i).uniform(-0.4, 0.4, tuple(p.shape))))
    if how == "orthogonal":  # a square hidden-to-hidden matrix only exists for the plain RNN
        lib.nn.utils.parametrizations.orthogonal(layer, "weight_hh_l0_reverse" if kind == "RNN" else "weight_ih_l1")
    elif how == "weight_norm":
        lib.nn.utils.parametrizations.weight_norm(layer, "weight_ih_l0")
    else:
        lib.nn.utils.weight_norm(layer, "weight_hh_l1")  # the hook-based form: a plain attribute
    x = lib.tensor(X, requires_grad=True)
    out, _ = layer(x)
    out.pow(2).sum().backward()
    grads = {name: p.grad.numpy() for name, p in sorted(layer.named_parameters())}
    return out.detach().numpy(), x.grad.numpy(), grads


@pytest.mark.parametrize("how", ["orthogonal", "weight_norm", "weight_norm-hook"])
@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_parametrized_recurrent_weights_match_torch(kind, how):
    ours, theirs = _run(numdiff, kind, how), _run(torch, kind, how)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
    assert sorted(ours[2]) == sorted(theirs[2])
    for name in ours[2]:
        if how == "orthogonal" and kind != "RNN" and name.endswith("original"):
            # A tall matrix's orthogonal base is completed with random columns (torch.randn in torch),
            # and the gradient of `original` goes through them: equal in law, not in value.
            continue
        np.testing.assert_allclose(ours[2][name], theirs[2][name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_parametrized_gru_gradchecks_in_float64():
    layer = numdiff.nn.GRU(2, 3, batch_first=True).double()
    numdiff.nn.utils.parametrizations.orthogonal(layer, "weight_hh_l0", orthogonal_map="cayley")
    x = numdiff.tensor(X[:, :3, :2], requires_grad=True)
    assert numdiff.autograd.gradcheck(lambda t: layer(t)[0], (x,))
    assert len(layer.all_weights[0]) == 4  # the parametrized matrix is still listed


def test_a_missing_recurrent_weight_is_named():
    layer = numdiff.nn.GRU(2, 3)
    del layer.weight_hh_l0
    with pytest.raises(TypeError, match="w_hh must be a Tensor, got NoneType"):
        layer(numdiff.zeros(4, 1, 2))
