"""Every numdiff object a training program holds pickles (pickle, copy, multiprocessing, whole-object
checkpoints): tensors, Parameters, modules after training steps, optimizers with state, lr
schedulers, generators."""

import copy
import pickle

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn


def _trained():
    numdiff.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    opt = numdiff.optim.Adam(model.parameters(), lr=0.1)
    sched = numdiff.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    x = numdiff.randn(2, 1, 4, 4)
    model(x).sum().backward()  # leaves gradient accumulators (weak references) on every parameter
    opt.step()
    sched.step()
    return model, opt, sched, x


def test_a_module_pickles_after_backward_and_gives_the_same_outputs():
    model, _, _, x = _trained()
    again = pickle.loads(pickle.dumps(model))
    assert type(again[0].weight) is nn.Parameter and again[0].weight.requires_grad
    np.testing.assert_array_equal(again(x).detach().numpy(), model(x).detach().numpy())
    np.testing.assert_array_equal(again[1].running_mean.numpy(), model[1].running_mean.numpy())
    again(x).sum().backward()  # the copy trains on its own
    assert again[0].weight.grad is not None


def test_an_optimizer_and_its_scheduler_pickle_together_and_keep_stepping():
    model, opt, sched, x = _trained()
    opt2, sched2 = pickle.loads(pickle.dumps((opt, sched)))
    assert sched2.optimizer is opt2 and sched2.get_last_lr() == sched.get_last_lr() == [0.05]
    p0 = opt2.param_groups[0]["params"][0]
    np.testing.assert_array_equal(opt2.state[p0]["exp_avg"].numpy(), opt.state[model[0].weight]["exp_avg"].numpy())
    p0.grad = numdiff.ones_like(p0)
    opt2.step()
    sched2.step()
    assert sched2.get_last_lr() == [0.025]


def test_tensor_pickles_keep_dtype_and_requires_grad_and_come_back_as_leaves():
    for dtype in (numdiff.float32, numdiff.float64, numdiff.int64, numdiff.bool, numdiff.bfloat16):
        t = numdiff.arange(6).reshape(2, 3).to(dtype)
        again = pickle.loads(pickle.dumps(t))
        assert again.dtype is dtype and again.shape == (2, 3)
        np.testing.assert_array_equal(again.float().numpy(), t.float().numpy())
    leaf = numdiff.randn(3, requires_grad=True)
    computed = leaf * 2
    again = pickle.loads(pickle.dumps(computed))
    assert again.is_leaf and again.requires_grad and again.grad_fn is None
    view = numdiff.arange(10.0)[::3]  # a non-contiguous view pickles as its values
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(view)).numpy(), [0, 3, 6, 9])


def test_shared_tensors_stay_shared_through_one_pickle():
    w = nn.Parameter(numdiff.ones(2))
    a, b = pickle.loads(pickle.dumps([w, w]))
    assert a is b


def test_generator_and_deepcopy_of_a_trained_model():
    g = numdiff.Generator().manual_seed(5)
    expected = numdiff.rand(3, generator=numdiff.Generator().manual_seed(5))
    np.testing.assert_array_equal(numdiff.rand(3, generator=pickle.loads(pickle.dumps(g))).numpy(), expected.numpy())
    model, _, _, _ = _trained()
    clone = copy.deepcopy(model)
    assert clone[0].weight.grad is not None  # deepcopy keeps .grad, as in PyTorch


def test_unpicklable_user_hooks_fail_naming_the_function():
    layer = nn.Linear(2, 2)
    layer.register_forward_hook(lambda *args: None)
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(layer)


def test_legacy_tensor_constructor_takes_sizes_or_data_of_the_default_dtype():
    assert numdiff.Tensor(2, 3).shape == (2, 3) and numdiff.Tensor(2, 3).dtype is numdiff.float32
    assert numdiff.Tensor([1, 2]).dtype is numdiff.float32
    assert numdiff.Tensor().shape == (0,)
    np.testing.assert_array_equal(numdiff.Tensor(numdiff.tensor([1.5, 2.5], dtype=numdiff.float64)).numpy(), [1.5, 2.5])
    with pytest.raises(TypeError, match="expected sizes"):
        numdiff.Tensor(2, "a")
