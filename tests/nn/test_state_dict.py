"""state_dict / load_state_dict: round trips, key order, refusals that list every difference."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def test_state_dict_keys_follow_pytorch_order_with_buffers():
    assert list(_model().state_dict()) == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked",
        "3.weight", "3.bias",
    ]


def test_state_dict_values_are_detached_unless_keep_vars():
    model = _model()
    state = model.state_dict()
    assert not state["0.weight"].requires_grad and state["0.weight"].is_leaf
    assert model.state_dict(keep_vars=True)["0.weight"] is model[0].weight


def test_state_dict_shares_storage_with_the_parameters():
    model = _model()
    state = model.state_dict()
    with numdiff.no_grad():
        model[0].weight.fill_(3.0)
    assert np.all(state["0.weight"].numpy() == 3.0)


def test_non_persistent_buffers_stay_out_of_the_state_dict():
    layer = nn.Module()
    layer.register_buffer("kept", numdiff.ones(1))
    layer.register_buffer("scratch", numdiff.ones(1), persistent=False)
    assert list(layer.state_dict()) == ["kept"]


def test_round_trip_restores_every_value_in_place():
    numdiff.manual_seed(0)
    source = _model()
    source[1].running_mean.fill_(0.5)
    source[1].num_batches_tracked.fill_(7)
    target = _model()
    weight_object = target[0].weight
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    assert target[0].weight is weight_object and weight_object.is_leaf and weight_object.requires_grad
    assert target[1].num_batches_tracked.item() == 7


def test_loading_another_models_state_dict_lists_missing_and_unexpected_keys():
    other = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    model = _model()
    before = model[0].weight.detach().numpy().copy()
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(other.state_dict())
    message = str(info.value)
    assert "Error(s) in loading state_dict for Sequential" in message
    assert 'Missing key(s) in state_dict: "1.running_mean", "1.running_var", "1.num_batches_tracked", "3.weight", "3.bias".' in message
    assert "size mismatch for 1.weight: copying a param with shape (2, 4) from checkpoint, the shape in current model is (4,)." in message
    assert 'Unexpected key(s)' not in message
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), before)  # nothing copied


def test_unexpected_keys_are_listed():
    model = nn.Linear(2, 2)
    state = dict(model.state_dict())
    state["extra.weight"] = numdiff.ones(1)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra.weight"'):
        model.load_state_dict(state)


def test_non_strict_load_returns_the_differences_and_copies_the_rest():
    model = nn.Linear(2, 3)
    state = {"weight": numdiff.full((3, 2), 0.25), "stray": numdiff.zeros(1)}
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["stray"]
    missing, unexpected = result
    assert missing == ["bias"] and unexpected == ["stray"]
    assert np.all(model.weight.detach().numpy() == 0.25)


def test_shape_mismatch_is_refused_even_when_not_strict():
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape \(2, 2\)"):
        nn.Linear(2, 3).load_state_dict({"weight": numdiff.zeros(2, 2)}, strict=False)


def test_loading_casts_to_the_parameter_dtype():
    model = nn.Linear(2, 1).double()
    model.load_state_dict({"weight": numdiff.ones(1, 2), "bias": numdiff.zeros(1)})
    assert model.weight.dtype is numdiff.float64 and model.weight.tolist() == [[1.0, 1.0]]


def test_a_non_tensor_entry_is_refused_with_its_key():
    with pytest.raises(TypeError, match=r'entry "bias" must be a numdiff Tensor.*got list$'):
        nn.Linear(2, 1).load_state_dict({"weight": numdiff.ones(1, 2), "bias": [0.0]})


def test_another_librarys_tensor_is_named_with_its_module_and_how_to_convert_it():
    class Tensor:  # as torch.Tensor is named: "got Tensor" alone would read as a contradiction
        def numpy(self):
            return np.zeros(1)

    with pytest.raises(TypeError, match=r'"bias" must be a numdiff Tensor .*got tests\.nn\.test_state_dict\..*Tensor; '
                       r"convert it with numdiff\.tensor\(value\.numpy\(\)\)"):
        nn.Linear(2, 1).load_state_dict({"weight": numdiff.ones(1, 2), "bias": Tensor()})


def test_loss_class_weights_are_buffers_in_the_state_dict():
    loss = nn.CrossEntropyLoss(weight=numdiff.tensor([1.0, 2.0]))
    assert list(loss.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []


def test_state_dict_loads_into_torch_and_back():
    torch = pytest.importorskip("torch")
    ours = _model()
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    back = _model()
    back.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    for name, value in ours.state_dict().items():
        np.testing.assert_array_equal(back.state_dict()[name].numpy(), value.numpy(), err_msg=name)


def test_load_state_dict_assign_puts_the_state_dicts_tensors_in_place():
    model = numdiff.nn.Sequential(numdiff.nn.Linear(2, 3), numdiff.nn.BatchNorm1d(3))
    model[0].bias.requires_grad_(False)
    state = {k: v.clone().double() if v.is_floating_point() else v.clone() for k, v in model.state_dict().items()}
    old_weight = model[0].weight
    result = model.load_state_dict(state, assign=True)
    assert repr(result) == "<All keys matched successfully>"
    weight = model[0].weight
    assert isinstance(weight, numdiff.nn.Parameter) and weight is not old_weight
    assert weight.dtype == numdiff.float64 and weight.requires_grad
    assert not model[0].bias.requires_grad  # the module's requires_grad is kept
    assert np.shares_memory(weight.detach().numpy(), state["0.weight"].numpy())
    assert model[1].running_mean is state["1.running_mean"]
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    model(numdiff.ones(4, 2, dtype=numdiff.float64)).sum().backward()
    assert weight.grad is not None and weight.grad.shape == (3, 2)


def test_load_state_dict_assign_checks_shapes_before_assigning_anything():
    model = numdiff.nn.Linear(2, 3)
    state = {"weight": numdiff.zeros(3, 2), "bias": numdiff.zeros(4)}
    weight = model.weight
    with pytest.raises(RuntimeError, match=r"size mismatch for bias: copying a param with shape \(4,\)"):
        model.load_state_dict(state, assign=True)
    assert model.weight is weight
