"""nn.utils.prune: masks chosen as PyTorch chooses them, applied through a pre-hook, combined when a
tensor is pruned again, made permanent by remove; bad amounts are refused with the value named."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.nn.utils import prune


def _linear(seed: int = 0, out_features: int = 4, in_features: int = 5) -> nn.Linear:
    numdiff.manual_seed(seed)
    return nn.Linear(in_features, out_features)


def test_l1_unstructured_zeros_the_smallest_magnitudes():
    layer = _linear()
    w = layer.weight.detach().numpy().copy()
    prune.l1_unstructured(layer, name="weight", amount=0.3)
    n = round(0.3 * w.size)
    expected = np.ones(w.size)
    expected[np.argsort(np.abs(w).ravel())[:n]] = 0
    np.testing.assert_array_equal(layer.weight_mask.numpy().ravel(), expected)
    np.testing.assert_allclose(layer.weight.detach().numpy(), w * expected.reshape(w.shape))
    assert [name for name, _ in layer.named_parameters()] == ["bias", "weight_orig"]
    assert [name for name, _ in layer.named_buffers()] == ["weight_mask"]


def test_the_pre_hook_recomputes_the_weight_and_gradients_skip_pruned_entries():
    layer = _linear()
    prune.l1_unstructured(layer, name="weight", amount=6)
    with numdiff.no_grad():
        layer.weight_orig.mul_(2.0)  # an optimizer step on the original
    x = numdiff.randn(3, 5)
    out = layer(x)
    expected = F.linear(x, layer.weight_orig * layer.weight_mask, layer.bias)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    out.sum().backward()
    grad = layer.weight_orig.grad.numpy()
    assert np.all(grad[layer.weight_mask.numpy() == 0] == 0)
    assert np.count_nonzero(grad) == 20 - 6


def test_random_unstructured_prunes_the_requested_count():
    layer = _linear()
    prune.random_unstructured(layer, name="weight", amount=7)
    assert int((layer.weight_mask == 0).sum()) == 7


def test_ln_structured_drops_whole_channels_of_smallest_norm():
    layer = _linear(out_features=6)
    w = layer.weight.detach().numpy().copy()
    prune.ln_structured(layer, name="weight", amount=0.5, n=2, dim=0)
    dropped = np.argsort(np.linalg.norm(w, axis=1))[:3]
    mask = layer.weight_mask.numpy()
    assert np.all(mask[dropped] == 0) and np.all(np.delete(mask, dropped, axis=0) == 1)


def test_pruning_again_acts_on_what_is_left_through_a_container():
    layer = _linear()
    prune.l1_unstructured(layer, name="weight", amount=4)
    prune.l1_unstructured(layer, name="weight", amount=4)
    assert int((layer.weight_mask == 0).sum()) == 8
    (hook,) = layer._forward_pre_hooks.values()
    assert isinstance(hook, prune.PruningContainer) and len(list(hook)) == 2
    prune.random_structured(layer, name="weight", amount=1, dim=0)
    (hook,) = layer._forward_pre_hooks.values()
    assert len(hook) == 3
    assert (layer.weight_mask.numpy().sum(axis=1) == 0).sum() >= 1
    assert int((layer.weight_mask == 0).sum()) >= 8


def test_global_unstructured_ranks_all_tensors_together():
    a, b = _linear(0), _linear(1, out_features=3)
    values = np.concatenate([a.weight.detach().numpy().ravel(), b.weight.detach().numpy().ravel()])
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.25)
    n = round(0.25 * values.size)
    threshold = np.sort(np.abs(values))[n - 1]
    masks = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel()])
    np.testing.assert_array_equal(masks == 0, np.abs(values) <= threshold)


def test_remove_makes_the_pruning_permanent():
    layer = _linear()
    prune.l1_unstructured(layer, name="weight", amount=5)
    pruned = layer.weight.detach().numpy().copy()
    prune.remove(layer, "weight")
    assert isinstance(layer.weight, nn.Parameter)
    np.testing.assert_array_equal(layer.weight.detach().numpy(), pruned)
    assert not layer._forward_pre_hooks and not dict(layer.named_buffers())
    assert not prune.is_pruned(layer)


def test_a_custom_method_from_the_base_class():
    class EveryOther(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.flatten()[::2] = 0
            return mask

    layer = _linear()
    EveryOther.apply(layer, "bias")
    np.testing.assert_array_equal(layer.bias_mask.numpy(), [0, 1, 0, 1])
    assert prune.is_pruned(layer)


def test_state_dict_holds_the_original_and_the_mask():
    layer = _linear()
    prune.l1_unstructured(layer, name="weight", amount=2)
    assert list(layer.state_dict()) == ["bias", "weight_orig", "weight_mask"]


@pytest.mark.parametrize("amount", [1.5, -1, "half"])
def test_bad_amounts_are_refused_naming_the_amount(amount):
    with pytest.raises((ValueError, TypeError), match="amount"):
        prune.l1_unstructured(_linear(), name="weight", amount=amount)


def test_more_entries_than_the_tensor_has_is_refused():
    with pytest.raises(ValueError, match="amount=30"):
        prune.l1_unstructured(_linear(), name="weight", amount=30)


def test_structured_pruning_needs_two_dims_and_remove_needs_pruning():
    with pytest.raises(ValueError, match="at least 2 dims"):
        prune.ln_structured(_linear(), name="bias", amount=1, n=2, dim=0)
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(_linear(), "weight")
    with pytest.raises(AttributeError, match="no tensor named 'kernel'"):
        prune.l1_unstructured(_linear(), name="kernel", amount=1)
