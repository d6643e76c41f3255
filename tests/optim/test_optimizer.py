"""Optimizer base behaviour: parameter groups, zero_grad, state dicts, validation, leaf contract."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff import optim


def _param(*values: float) -> numdiff.Tensor:
    return numdiff.tensor(list(values), requires_grad=True)


def _grad(p: numdiff.Tensor, *values: float) -> None:
    p.grad = numdiff.tensor(list(values), dtype=p.dtype)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda ps: optim.SGD(ps, lr=-1), "Invalid learning rate: -1"),
        (lambda ps: optim.SGD(ps, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda ps: optim.SGD(ps, weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
        (lambda ps: optim.SGD(ps, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (lambda ps: optim.SGD(ps, momentum=0.9, dampening=0.1, nesterov=True), "zero dampening"),
        (lambda ps: optim.Adam(ps, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda ps: optim.Adam(ps, eps=-1.0), "Invalid epsilon value: -1.0"),
        (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (lambda ps: optim.AdamW(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda ps: optim.AdamW(ps, weight_decay=-2), "Invalid weight_decay value: -2"),
        (lambda ps: optim.RMSprop(ps, alpha=-0.5), "Invalid alpha value: -0.5"),
        (lambda ps: optim.RMSprop(ps, momentum=-1), "Invalid momentum value: -1"),
        (lambda ps: optim.RMSprop(ps, eps=-1), "Invalid epsilon value: -1"),
        (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
        (
            lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1),
            "Invalid initial_accumulator_value value: -1",
        ),
        (lambda ps: optim.Adagrad(ps, eps=-1), "Invalid epsilon value: -1"),
    ],
)
def test_invalid_hyperparameters_are_refused_with_pytorchs_message(factory, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        factory([_param(1.0)])


def test_params_must_be_an_iterable_of_leaf_tensors():
    w = _param(1.0, 2.0)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts, but got numdiff.Tensor"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors, but param 1 of the group is ndarray"):
        optim.SGD([w, np.zeros(2)], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {w}}], lr=0.1)


def test_param_groups_get_defaults_and_keep_their_own_options():
    a, b = _param(1.0), _param(2.0)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert all(g["momentum"] == 0.9 for g in opt.param_groups)
    assert opt.param_groups[1]["params"][0] is b
    c = _param(3.0)
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)


def test_named_parameters_record_their_names_in_the_group():
    w, b = _param(1.0), _param(2.0)
    opt = optim.Adam([("w", w), ("b", b)])
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="Some param names are missing"):
        optim.Adam([("w", w), b])


def test_step_updates_leaves_in_place_and_keeps_them_leaves():
    w = _param(1.0, 2.0)
    storage = w._data
    version = w._version
    opt = optim.SGD([w], lr=0.5)
    _grad(w, 1.0, -2.0)
    opt.step()
    assert w.is_leaf and w.requires_grad and w._data is storage
    np.testing.assert_allclose(w.detach().numpy(), [0.5, 3.0])
    assert w._version == version + 1


def test_parameters_without_grad_are_skipped_and_get_no_state():
    a, b = _param(1.0), _param(2.0)
    opt = optim.Adam([a, b], lr=0.1)
    _grad(a, 1.0)
    opt.step()
    assert b.item() == 2.0 and a.item() != 1.0
    assert b not in opt.state and a in opt.state


def test_step_returns_the_closure_loss_computed_with_grad_enabled():
    w = _param(3.0)
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        assert numdiff.is_grad_enabled()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with numdiff.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    assert w.item() == pytest.approx(3.0 - 0.1 * 6.0)


def test_zero_grad_sets_none_by_default_or_zeros_in_place():
    w = _param(1.0, 2.0)
    opt = optim.SGD([w], lr=0.1)
    _grad(w, 3.0, 4.0)
    opt.zero_grad()
    assert w.grad is None
    _grad(w, 3.0, 4.0)
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad
    np.testing.assert_array_equal(grad.numpy(), [0.0, 0.0])


def test_zero_grad_in_place_detaches_recorded_gradients_and_restores_grad_mode():
    w, v = _param(1.0, 2.0), _param(3.0)
    (w * w).sum().backward(create_graph=True)  # w.grad = 2 w, recorded
    v.grad = numdiff.ones(1)
    opt = optim.SGD([w, v], lr=0.1)
    grads = (w.grad, v.grad)
    assert grads[0].grad_fn is not None
    opt.zero_grad(set_to_none=False)
    assert w.grad is grads[0] and v.grad is grads[1]
    for grad in grads:
        assert grad.grad_fn is None and not grad.requires_grad
        np.testing.assert_array_equal(grad.numpy(), 0.0)
    assert numdiff.is_grad_enabled()


def test_non_contiguous_parameter_is_updated_through_its_own_storage():
    base = numdiff.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = base.t().detach().requires_grad_()
    assert not w.is_contiguous()
    opt = optim.SGD([w], lr=1.0)
    w.grad = numdiff.ones(3, 2)
    opt.step()
    np.testing.assert_array_equal(base.numpy(), np.arange(6).reshape(2, 3) - 1)


def test_state_dict_numbers_params_across_groups_and_round_trips():
    rng = np.random.default_rng(0)
    a, b, c = (
        numdiff.tensor(rng.standard_normal(3).astype(np.float32), requires_grad=True) for _ in range(3)
    )
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.01}], amsgrad=True)
    for _ in range(2):
        for p in (a, b, c):
            p.grad = numdiff.tensor(rng.standard_normal(3).astype(np.float32))
        opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sorted(sd["state"]) == [0, 1, 2]
    assert set(sd["state"][2]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    assert sd["state"][0]["step"].item() == 2.0

    a2, b2, c2 = (numdiff.tensor(p.detach().numpy().copy(), requires_grad=True) for p in (a, b, c))
    opt2 = optim.Adam([{"params": [a2, b2]}, {"params": [c2]}])
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.01 and opt2.param_groups[0]["amsgrad"] is True
    assert opt2.param_groups[0]["params"][0] is a2
    assert opt2.state[a2]["exp_avg"]._data is not opt.state[a]["exp_avg"]._data  # copied, not aliased
    for p, q in ((a, a2), (b, b2), (c, c2)):
        g = rng.standard_normal(3).astype(np.float32)
        p.grad, q.grad = numdiff.tensor(g), numdiff.tensor(g)
    opt.step()
    opt2.step()
    for p, q in ((a, a2), (b, b2), (c, c2)):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_casts_state_to_the_parameter_dtype_but_keeps_step():
    w32 = _param(1.0, 2.0)
    opt = optim.SGD([w32], lr=0.1, momentum=0.9)
    _grad(w32, 1.0, 1.0)
    opt.step()
    w64 = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)
    opt64 = optim.SGD([w64], lr=0.1, momentum=0.9)
    opt64.load_state_dict(opt.state_dict())
    assert opt64.state[w64]["momentum_buffer"].dtype is numdiff.float64

    adam = optim.Adam([w32])
    adam.step()  # no grads: nothing happens
    _grad(w32, 1.0, 1.0)
    adam.step()
    adam64 = optim.Adam([w64])
    adam64.load_state_dict(adam.state_dict())
    assert adam64.state[w64]["step"].dtype is numdiff.float32
    assert adam64.state[w64]["exp_avg"].dtype is numdiff.float64


def test_state_held_as_numpy_arrays_or_another_librarys_tensors_loads_and_steps():
    class ForeignTensor:  # as a torch.optim state dict holds torch.Tensor values
        def __init__(self, values):
            self.values = np.asarray(values, dtype=np.float32)
            self.shape = self.values.shape

        def __array__(self, dtype=None, copy=None):
            return self.values

    w = _param(1.0, 2.0)
    opt = optim.Adam([w], lr=0.1)
    saved = {
        "state": {0: {"step": ForeignTensor(3.0), "exp_avg": ForeignTensor([0.1, 0.2]),
                      "exp_avg_sq": np.array([0.01, 0.04], dtype=np.float32)}},
        "param_groups": [dict(opt.param_groups[0], params=[0])],
    }
    opt.load_state_dict(saved)
    assert all(isinstance(v, numdiff.Tensor) for v in opt.state[w].values())
    _grad(w, 1.0, 1.0)
    opt.step()
    assert opt.state[w]["step"].item() == 4.0
    m = 0.9 * np.array([0.1, 0.2]) + 0.1
    v = 0.999 * np.array([0.01, 0.04]) + 0.001
    expected = np.array([1.0, 2.0]) - 0.1 * (m / (1 - 0.9**4)) / (np.sqrt(v / (1 - 0.999**4)) + 1e-8)
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-6)


def test_load_state_dict_refuses_mismatched_groups_with_counts():
    a, b = _param(1.0), _param(2.0)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match=r"doesn't match the size.*2 saved, 1 here"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_state_of_the_wrong_shape_is_refused_before_any_kernel_runs():
    a = _param(1.0, 2.0)
    opt = optim.Adam([a])
    _grad(a, 1.0, 1.0)
    opt.step()
    sd = opt.state_dict()
    b = _param(1.0, 2.0, 3.0)
    opt_b = optim.Adam([b])
    opt_b.load_state_dict(sd)
    _grad(b, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"'exp_avg' has shape \(2,\) but its parameter has shape \(3,\)"):
        opt_b.step()
    assert b.tolist() == [1.0, 2.0, 3.0]


def test_plain_sgd_keeps_no_state_and_momentum_sgd_keeps_a_buffer():
    w = _param(1.0)
    plain = optim.SGD([w], lr=0.1)
    _grad(w, 1.0)
    plain.step()
    assert plain.state_dict()["state"] == {}
    heavy = optim.SGD([w], lr=0.1, momentum=0.9)
    heavy.step()
    assert set(heavy.state_dict()["state"][0]) == {"momentum_buffer"}


def test_adagrad_state_exists_from_construction():
    w = _param(1.0, 2.0)
    opt = optim.Adagrad([w], initial_accumulator_value=0.5)
    state = opt.state_dict()["state"][0]
    assert state["step"].item() == 0.0
    np.testing.assert_array_equal(state["sum"].numpy(), [0.5, 0.5])


def test_repr_lists_each_group_and_its_options():
    opt = optim.SGD([{"params": [_param(1.0)]}, {"params": [_param(2.0)], "lr": 0.5}], lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n")
    assert "Parameter Group 1\n    dampening: 0" in text and "    lr: 0.5" in text


def test_sgd_minimizes_a_quadratic():
    w = _param(5.0, -3.0)
    opt = optim.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(100):
        opt.zero_grad()
        ((w - numdiff.tensor([1.0, 2.0])) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [1.0, 2.0], atol=1e-3)


def test_a_non_contiguous_gradient_is_read_in_its_logical_order():
    w = numdiff.zeros(3, 2, requires_grad=True)
    grad = numdiff.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).t()
    assert not grad.is_contiguous()
    w.grad = grad
    optim.SGD([w], lr=1.0).step()
    np.testing.assert_array_equal(w.detach().numpy(), -np.arange(6).reshape(2, 3).T)
