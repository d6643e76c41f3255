"""Layers built from composed ops against torch 2.13: activations, reshaping, dropout, norms, embedding, losses."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from tests.nn.helpers import assert_close, check_module_parity, copy_state, twins

torch = pytest.importorskip("torch")

ACTIVATIONS = [
    ("ReLU", (), {}),
    ("LeakyReLU", (0.2,), {}),
    ("ELU", (), {"alpha": 0.7}),
    ("GELU", (), {}),
    ("GELU", (), {"approximate": "tanh"}),
    ("Tanh", (), {}),
    ("Sigmoid", (), {}),
    ("Softplus", (), {"beta": 2.0}),
    ("Softmax", (), {"dim": 1}),
    ("LogSoftmax", (), {"dim": -1}),
    ("Identity", (), {}),
    ("Flatten", (), {}),
    ("Flatten", (0, 1), {}),
    ("Unflatten", (1, (2, 2)), {}),
]


@pytest.mark.parametrize("name, args, kwargs", ACTIVATIONS, ids=[f"{n}{a}{k}" for n, a, k in ACTIVATIONS])
def test_parameterless_layer_matches_torch(rng, name, args, kwargs):
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    x = rng.uniform(0.1, 2.0, (3, 4, 2)) * rng.choice([-1.0, 1.0], (3, 4, 2))  # away from relu's kink
    check_module_parity(ours, theirs, x, rng=rng)


def test_inplace_relu_writes_into_a_non_leaf():
    x = numdiff.tensor([-1.0, 2.0], requires_grad=True)
    h = x * 1
    out = nn.ReLU(inplace=True)(h)
    assert out is h and h.tolist() == [0.0, 2.0]
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


# ----------------------------------------------------------------------------- dropout
def test_dropout_layer_is_active_in_training_and_identity_in_eval():
    layer = nn.Dropout(0.5)
    x = numdiff.ones(1000)
    numdiff.manual_seed(0)
    dropped = layer(x).numpy()
    assert 0.4 < (dropped == 0).mean() < 0.6 and set(np.unique(dropped)) == {0.0, 2.0}
    assert layer.eval()(x) is x


def test_dropout_layer_refuses_bad_probability():
    with pytest.raises(ValueError, match="Dropout: probability has to be between 0 and 1, but got 2"):
        nn.Dropout(2)


# ----------------------------------------------------------------------------- batch norm
def _batch_norm_pair(cls_name, channels, **kwargs):
    ours = getattr(nn, cls_name)(channels, **kwargs).double()
    theirs = getattr(torch.nn, cls_name)(channels, **kwargs).double()
    with numdiff.no_grad():
        if ours.weight is not None:
            ours.weight.copy_(numdiff.linspace(0.5, 1.5, channels, dtype=numdiff.float64))
            ours.bias.copy_(numdiff.linspace(-0.3, 0.3, channels, dtype=numdiff.float64))
    copy_state(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize(
    "cls_name, shape",
    [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (4, 3, 2)), ("BatchNorm2d", (2, 3, 2, 3)), ("BatchNorm3d", (2, 3, 2, 3, 2))],
)
@pytest.mark.parametrize("momentum", [0.1, None], ids=["momentum", "cumulative"])
def test_batch_norm_training_steps_then_eval_match_torch(rng, cls_name, shape, momentum):
    ours, theirs = _batch_norm_pair(cls_name, shape[1], momentum=momentum)
    for _ in range(3):  # running statistics (unbiased variance) accumulate over steps
        check_module_parity(ours, theirs, rng.standard_normal(shape) * 3 + 1, rng=rng)
        ours.zero_grad()
        theirs.zero_grad()
    assert ours.num_batches_tracked.item() == 3
    assert_close(ours.running_mean, theirs.running_mean, what="running_mean")
    assert_close(ours.running_var, theirs.running_var, what="running_var")
    ours.eval()
    theirs.eval()
    check_module_parity(ours, theirs, rng.standard_normal(shape), rng=rng)
    assert ours.num_batches_tracked.item() == 3  # eval leaves the statistics alone


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_without_running_stats_uses_batch_stats_in_eval_too(rng, affine):
    ours, theirs = _batch_norm_pair("BatchNorm1d", 3, affine=affine, track_running_stats=False)
    assert ours.running_mean is None and list(ours.state_dict()) == (["weight", "bias"] if affine else [])
    ours.eval()
    theirs.eval()
    check_module_parity(ours, theirs, rng.standard_normal((4, 3)), rng=rng)


def test_batch_norm_wrong_input_names_the_layer_and_expected_shape():
    with pytest.raises(ValueError) as info:
        nn.BatchNorm2d(3)(numdiff.ones(2, 4, 5, 5))
    assert str(info.value) == (
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True): "
        "expected input of shape (N, 3, H, W), got (2, 4, 5, 5)"
    )
    with pytest.raises(ValueError, match=r"expected input of shape \(N, 3\) or \(N, 3, L\), got \(2, 3, 4, 4\)"):
        nn.BatchNorm1d(3)(numdiff.ones(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected input of shape \(N, 3, D, H, W\), got \(2, 3, 4, 4\)"):
        nn.BatchNorm3d(3)(numdiff.ones(2, 3, 4, 4))


def test_batch_norm_single_sample_in_training_is_refused():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(numdiff.ones(1, 3))


# ----------------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("kwargs", [{}, {"elementwise_affine": False}, {"bias": False}], ids=["affine", "plain", "no-bias"])
def test_layer_norm_matches_torch(rng, kwargs):
    ours = nn.LayerNorm((3, 2), **kwargs).double()
    theirs = torch.nn.LayerNorm((3, 2), **kwargs).double()
    if ours.weight is not None:
        with numdiff.no_grad():
            ours.weight.copy_(numdiff.tensor(rng.uniform(0.5, 1.5, (3, 2))))
    check_module_parity(ours, theirs, rng.standard_normal((2, 3, 2)), rng=rng)


def test_layer_norm_wrong_input_names_the_expected_trailing_shape():
    with pytest.raises(ValueError, match=r"LayerNorm\(\(4,\).*expected input of shape \(\*, 4\), got \(2, 3\)"):
        nn.LayerNorm(4)(numdiff.ones(2, 3))


# ----------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("padding_idx", [None, 0, -1])
def test_embedding_matches_torch(rng, padding_idx):
    ours = nn.Embedding(5, 3, padding_idx=padding_idx).double()
    theirs = torch.nn.Embedding(5, 3, padding_idx=padding_idx).double()
    assert repr(ours) == repr(theirs)
    indices = numdiff.tensor([[0, 4, 4], [1, 0, 2]])
    copy_state(ours, theirs)
    out = ours(indices)
    expected = theirs(torch.tensor(indices.numpy()))
    assert_close(out, expected)
    seed = rng.standard_normal(tuple(out.shape))
    out.backward(numdiff.tensor(seed))
    expected.backward(torch.tensor(seed))
    assert_close(ours.weight.grad, theirs.weight.grad)


def test_embedding_from_pretrained_is_frozen_by_default():
    table = numdiff.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb(numdiff.tensor([1])).tolist() == [[3.0, 4.0]]
    assert emb(numdiff.tensor([1])).grad_fn is None
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad


def test_embedding_index_out_of_range_is_refused():
    with pytest.raises(IndexError, match=r"indices must be in \[0, 4\]"):
        nn.Embedding(5, 2)(numdiff.tensor([5]))


# ----------------------------------------------------------------------------- loss modules
LOSSES = [
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, "class"),
    ("CrossEntropyLoss", {"weight": [1.0, 2.0, 0.5], "ignore_index": 1, "reduction": "sum"}, "class"),
    ("NLLLoss", {"weight": [1.0, 2.0, 0.5]}, "class"),
    ("MSELoss", {}, "float"),
    ("L1Loss", {"reduction": "none"}, "float"),
    ("SmoothL1Loss", {"beta": 0.5}, "float"),
    ("BCELoss", {"weight": [[1.0, 2.0, 0.5]]}, "probability"),
    ("BCEWithLogitsLoss", {"pos_weight": [1.0, 3.0, 0.5]}, "float"),
]


@pytest.mark.parametrize("name, kwargs, kind", LOSSES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LOSSES)])
def test_loss_module_matches_torch(rng, name, kwargs, kind):
    ours_kwargs = {k: numdiff.tensor(np.array(v)) if isinstance(v, list) else v for k, v in kwargs.items()}
    theirs_kwargs = {k: torch.tensor(np.array(v)) if isinstance(v, list) else v for k, v in kwargs.items()}
    ours = getattr(nn, name)(**ours_kwargs)
    theirs = getattr(torch.nn, name)(**theirs_kwargs)
    if kind == "probability":
        x = rng.uniform(0.05, 0.95, (4, 3))
        target = rng.uniform(0, 1, (4, 3))
    else:
        x = rng.standard_normal((4, 3))
        target = rng.integers(0, 3, 4) if kind == "class" else rng.uniform(0, 1, (4, 3))
    mine, their_x = twins(x)
    value = ours(mine, numdiff.tensor(target))
    expected = theirs(their_x, torch.tensor(target))
    assert_close(value, expected, rtol=1e-7)
    value.sum().backward()
    expected.sum().backward()
    assert_close(mine.grad, their_x.grad, rtol=1e-7)


def test_loss_module_weight_follows_the_module_dtype():
    loss = nn.CrossEntropyLoss(weight=numdiff.tensor([1.0, 2.0])).double()
    assert loss.weight.dtype is numdiff.float64
    value = loss(numdiff.zeros(2, 2, dtype=numdiff.float64), numdiff.tensor([0, 1]))
    assert value.dtype is numdiff.float64


def test_loss_module_refuses_unknown_reduction():
    with pytest.raises(ValueError, match="MSELoss: reduction must be 'none', 'mean' or 'sum', got 'max'"):
        nn.MSELoss(reduction="max")
