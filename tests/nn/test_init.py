"""numdiff.nn.init: gains, fans, distributions (loose statistical checks), seeding, default inits."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.nn import init


@pytest.mark.parametrize(
    "nonlinearity, param, expected",
    [
        ("linear", None, 1.0), ("conv2d", None, 1.0), ("sigmoid", None, 1.0), ("tanh", None, 5 / 3),
        ("relu", None, math.sqrt(2)), ("leaky_relu", None, math.sqrt(2 / (1 + 0.01**2))),
        ("leaky_relu", math.sqrt(5), math.sqrt(2 / 6)), ("selu", None, 0.75),
    ],
)
def test_calculate_gain_matches_pytorch(nonlinearity, param, expected):
    torch = pytest.importorskip("torch")
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


def test_calculate_gain_unknown_nonlinearity_is_refused():
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swishy'"):
        init.calculate_gain("swishy")


def test_fans_count_the_receptive_field():
    assert init._calculate_fan_in_and_fan_out(numdiff.empty(8, 3, 5, 5)) == (75, 200)
    with pytest.raises(ValueError, match=r"fewer than 2 dimensions \(got shape \(4,\)\)"):
        init._calculate_fan_in_and_fan_out(numdiff.empty(4))


def _stats(t):
    values = t.detach().numpy().astype(np.float64)
    return values.mean(), values.std(), values.min(), values.max()


def test_uniform_and_normal_fill_with_the_right_moments():
    numdiff.manual_seed(0)
    u = init.uniform_(numdiff.empty(200, 100), -2.0, 4.0)
    mean, std, low, high = _stats(u)
    assert -2.0 <= low and high < 4.0
    assert abs(mean - 1.0) < 0.05 and abs(std - 6 / math.sqrt(12)) < 0.05
    n = init.normal_(numdiff.empty(200, 100), 3.0, 0.5)
    mean, std, _, _ = _stats(n)
    assert abs(mean - 3.0) < 0.02 and abs(std - 0.5) < 0.02


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_uniform_bound(mode):
    numdiff.manual_seed(1)
    w = init.kaiming_uniform_(numdiff.empty(300, 40, 3), a=0.0, mode=mode, nonlinearity="relu")
    fan = 40 * 3 if mode == "fan_in" else 300 * 3
    bound = math.sqrt(2) * math.sqrt(3 / fan)
    _, std, low, high = _stats(w)
    assert -bound <= low and high <= bound and high > 0.95 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.03 * bound


def test_kaiming_normal_std():
    numdiff.manual_seed(2)
    w = init.kaiming_normal_(numdiff.empty(400, 50), nonlinearity="relu")
    _, std, _, _ = _stats(w)
    assert abs(std - math.sqrt(2 / 50)) < 0.03 * math.sqrt(2 / 50)


def test_xavier_uniform_and_normal():
    numdiff.manual_seed(3)
    fan_in, fan_out = 60, 240
    u = init.xavier_uniform_(numdiff.empty(fan_out, fan_in), gain=2.0)
    bound = 2.0 * math.sqrt(6 / (fan_in + fan_out))
    _, _, low, high = _stats(u)
    assert -bound <= low and high <= bound and high > 0.95 * bound
    n = init.xavier_normal_(numdiff.empty(fan_out, fan_in))
    _, std, _, _ = _stats(n)
    expected = math.sqrt(2 / (fan_in + fan_out))
    assert abs(std - expected) < 0.03 * expected


def test_constant_zeros_ones_and_eye():
    assert init.constant_(numdiff.empty(2), 0.3).tolist() == pytest.approx([0.3, 0.3])
    assert init.zeros_(numdiff.ones(2)).tolist() == [0.0, 0.0]
    assert init.ones_(numdiff.zeros(2)).tolist() == [1.0, 1.0]
    assert init.eye_(numdiff.empty(2, 3)).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_init_is_in_place_on_a_parameter_and_keeps_it_a_leaf():
    p = nn.Parameter(numdiff.zeros(4, 4))
    out = init.kaiming_uniform_(p)
    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert numdiff.is_grad_enabled()


def test_manual_seed_makes_initialisation_reproducible():
    numdiff.manual_seed(123)
    first = nn.Linear(5, 4)
    numdiff.manual_seed(123)
    second = nn.Linear(5, 4)
    np.testing.assert_array_equal(first.weight.detach().numpy(), second.weight.detach().numpy())
    np.testing.assert_array_equal(first.bias.detach().numpy(), second.bias.detach().numpy())
    assert not np.array_equal(first.weight.detach().numpy(), nn.Linear(5, 4).weight.detach().numpy())


def test_explicit_generator_is_used():
    a = init.normal_(numdiff.empty(5), generator=numdiff.Generator().manual_seed(9))
    b = init.normal_(numdiff.empty(5), generator=numdiff.Generator().manual_seed(9))
    assert a.tolist() == b.tolist()


def test_integer_tensor_is_refused():
    with pytest.raises(TypeError, match="init.uniform_: expected a floating point tensor, got dtype numdiff.int64"):
        init.uniform_(numdiff.tensor([1, 2]))


# ----------------------------------------------------------------------------- layers' defaults
@pytest.mark.parametrize(
    "make, fan_in",
    [
        (lambda: nn.Linear(30, 200), 30),
        (lambda: nn.Conv2d(4, 100, 3), 36),
        (lambda: nn.Conv1d(6, 100, 5, groups=2), 15),
        (lambda: nn.ConvTranspose2d(200, 8, 2), 32),
    ],
    ids=["Linear", "Conv2d", "Conv1d-groups", "ConvTranspose2d"],
)
def test_default_init_is_uniform_within_one_over_sqrt_fan_in(make, fan_in):
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias uses the same bound."""
    numdiff.manual_seed(4)
    layer = make()
    bound = 1 / math.sqrt(fan_in)
    _, std, low, high = _stats(layer.weight)
    assert -bound <= low and high <= bound and high > 0.9 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.05 * bound
    bias = layer.bias.detach().numpy()
    assert np.all(np.abs(bias) <= bound) and np.abs(bias).max() > 0.5 * bound


def test_embedding_default_is_standard_normal_with_a_zero_padding_row():
    numdiff.manual_seed(5)
    emb = nn.Embedding(400, 50, padding_idx=3)
    values = emb.weight.detach().numpy()
    assert np.all(values[3] == 0)
    rest = np.delete(values, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1) < 0.02


def test_norm_layers_start_as_identity_affine():
    bn = nn.BatchNorm2d(3)
    ln = nn.LayerNorm((2, 3))
    assert bn.weight.tolist() == [1.0] * 3 and bn.bias.tolist() == [0.0] * 3
    assert bn.running_mean.tolist() == [0.0] * 3 and bn.running_var.tolist() == [1.0] * 3
    assert bn.num_batches_tracked.item() == 0 and bn.num_batches_tracked.dtype is numdiff.int64
    assert ln.weight.shape == (2, 3) and np.all(ln.weight.detach().numpy() == 1)
