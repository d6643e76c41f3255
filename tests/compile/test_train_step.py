"""A whole training step under numdiff.compile: ``zero_grad()``, ``loss.backward()`` and
``optimizer.step()`` inside the compiled function join the compiled call (numdiff/compile/host_steps.py)
and give eager's numbers bit for bit in float64; what a replay cannot redo runs eagerly, saying why."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import numdiff
from numdiff import nn, optim

F = nn.functional


def _model(seed: int = 0, frozen_bias: bool = False) -> nn.Module:
    numdiff.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 9), nn.Tanh(), nn.Linear(9, 4)).double()
    if frozen_bias:
        model[2].bias.requires_grad_(False)  # a parameter that never gets a gradient
    return model


def _data(batch: int = 10) -> tuple:
    rng = np.random.default_rng(3)
    return numdiff.tensor(rng.standard_normal((batch, 6))), numdiff.tensor(rng.integers(0, 4, batch))


def _train_step(model: nn.Module, optimizer: optim.Optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def _step_in(mode: str, model: nn.Module, optimizer: optim.Optimizer):
    """The training step with only the loss compiled ("loss": backward and step run eagerly,
    outside), or compiled whole ("step")."""
    if mode == "step":
        return numdiff.compile(_train_step(model, optimizer))
    loss_of = numdiff.compile(lambda x, y: F.cross_entropy(model(x), y))

    def run(x, y):
        optimizer.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        optimizer.step()
        return loss

    return run


def _run_both(make_optimizer, steps: int = 5, frozen_bias: bool = False, between=None, batches=(10,)):
    """Train three copies of one model: eagerly, with only the loss compiled (backward and step
    eager, outside), and with the whole step compiled. Return each run's losses and weights and
    the compiled step's trace count. No warning may be raised (no fallback)."""
    runs = []
    for mode in ("eager", "loss", "step"):
        model = _model(frozen_bias=frozen_bias)
        optimizer = make_optimizer(model)
        schedule = between(optimizer) if between is not None else None
        run = _train_step(model, optimizer) if mode == "eager" else _step_in(mode, model, optimizer)
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i in range(steps):
                x, y = _data(batches[i % len(batches)])
                losses.append(run(x, y).item())
                if schedule is not None:
                    schedule.step()
        weights = [p.detach().numpy().copy() for p in model.parameters()]
        runs.append((losses, weights, run.compiled.compile_count if mode == "step" else 0))
    return runs


def _assert_same(runs) -> None:
    """The compiled step is the compiled loss plus eager's step, bit for bit; and both are eager's
    numbers up to the rounding of the compiled graph's fused kernels."""
    (eager_losses, eager_weights, _), (loss_losses, loss_weights, _), (losses, weights, _) = runs
    assert losses == loss_losses
    for w, expected in zip(weights, loss_weights):
        np.testing.assert_array_equal(w, expected)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-12)
    for w, expected in zip(weights, eager_weights):
        np.testing.assert_allclose(w, expected, rtol=1e-10, atol=1e-13)


OPTIMIZERS = {
    "sgd": lambda m: optim.SGD(m.parameters(), lr=0.1),
    "sgd_momentum_decay": lambda m: optim.SGD(m.parameters(), lr=0.1, momentum=0.9, dampening=0.1,
                                              weight_decay=1e-2),
    "sgd_nesterov_maximize": lambda m: optim.SGD(m.parameters(), lr=0.05, momentum=0.8, nesterov=True,
                                                 maximize=True),
    "adam": lambda m: optim.Adam(m.parameters(), lr=1e-2),
    "adam_amsgrad_decay": lambda m: optim.Adam(m.parameters(), lr=1e-2, weight_decay=0.1, amsgrad=True),
    "adam_maximize": lambda m: optim.Adam(m.parameters(), lr=1e-2, maximize=True),
    "adamw": lambda m: optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.05),
    "adamw_amsgrad": lambda m: optim.AdamW(m.parameters(), lr=1e-2, amsgrad=True),
    "rmsprop": lambda m: optim.RMSprop(m.parameters(), lr=1e-2, momentum=0.5, centered=True),
    "adagrad": lambda m: optim.Adagrad(m.parameters(), lr=0.1, weight_decay=1e-3),
    "adamax": lambda m: optim.Adamax(m.parameters(), lr=1e-2),
    "nadam": lambda m: optim.NAdam(m.parameters(), lr=1e-2),
    "radam": lambda m: optim.RAdam(m.parameters(), lr=1e-2, weight_decay=1e-2),
    "adadelta": lambda m: optim.Adadelta(m.parameters()),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_compiled_train_step_matches_eager_bit_for_bit(name):
    runs = _run_both(OPTIMIZERS[name])
    _assert_same(runs)
    # The first call sees no .grad yet and the second does: one trace serves both.
    assert runs[2][2] == 1


def test_a_scheduler_changing_lr_between_calls_is_honoured_without_retracing():
    runs = _run_both(lambda m: optim.Adam(m.parameters(), lr=0.05), steps=6,
                     between=lambda o: optim.lr_scheduler.ExponentialLR(o, gamma=0.5))
    _assert_same(runs)
    assert runs[2][2] == 1


def test_param_groups_and_a_parameter_without_grad_are_respected():
    def make(m):
        return optim.SGD([{"params": m[0].parameters(), "lr": 0.3},
                          {"params": m[2].parameters(), "momentum": 0.9}], lr=0.05, weight_decay=1e-3)

    runs = _run_both(make, frozen_bias=True)
    _assert_same(runs)
    bias_before = _model()[2].bias.detach().numpy()
    np.testing.assert_array_equal(runs[2][1][-1], bias_before)  # the frozen bias never moved


def test_another_batch_size_retraces_and_still_matches_eager():
    runs = _run_both(lambda m: optim.AdamW(m.parameters(), lr=1e-2), steps=6, batches=(10, 3))
    _assert_same(runs)


def test_the_optimizer_state_after_compiled_steps_is_eagers():
    states = []
    for mode in ("loss", "step"):
        model = _model()
        optimizer = optim.Adam(model.parameters(), lr=1e-2, amsgrad=True)
        run = _step_in(mode, model, optimizer)
        for _ in range(3):
            run(*_data())
        states.append(optimizer.state_dict()["state"])
    for index, state in states[0].items():
        for key, value in state.items():
            np.testing.assert_array_equal(states[1][index][key].numpy(), value.numpy())
    assert float(states[1][0]["step"]) == 3.0


def _step_returning_nothing(model, optimizer):
    def step(x, y):
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def test_a_step_that_returns_nothing_and_calls_module_zero_grad_compiles():
    losses = []
    for compiled in (False, True):
        model = _model()
        step = _step_returning_nothing(model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        run = numdiff.compile(step) if compiled else step
        x, y = _data()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(4):
                assert run(x, y) is None
        losses.append(F.cross_entropy(model(x), y).item())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-12)


def test_compiling_only_the_optimizer_step_as_torch_users_do():
    weights = []
    for compiled in (False, True):
        model = _model()
        optimizer = optim.Adam(model.parameters(), lr=1e-2)
        opt_step = numdiff.compile(lambda opt=optimizer: opt.step()) if compiled else optimizer.step
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                optimizer.zero_grad()
                F.cross_entropy(model(_data()[0]), _data()[1]).backward()
                opt_step()
        weights.append([p.detach().numpy().copy() for p in model.parameters()])
    for w, expected in zip(weights[1], weights[0]):
        np.testing.assert_array_equal(w, expected)


def test_a_batchnorm_model_updates_running_stats_and_parameters_like_eager():
    results = []
    for mode in ("loss", "step"):
        numdiff.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4)).double()
        run = _step_in(mode, model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                run(*_data())
        results.append([t.detach().numpy().copy() for t in (*model.parameters(), *model.buffers())])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, expected)


def _clip_between(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.01)
        optimizer.step()
        return loss

    return step


def _create_graph_backward(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward(create_graph=True)
        optimizer.step()
        return loss

    return step


def _forward_after_step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        return model(x)  # reads the parameters the step changed

    return step


@pytest.mark.parametrize("make_step, reason", [
    (_clip_between, r"reading \.grad after|runs ops after loss\.backward\(\)"),
    (_create_graph_backward, r"backward\(create_graph=True\)"),
    (_forward_after_step, r"runs ops after loss\.backward\(\)"),
])
def test_a_step_a_replay_cannot_redo_runs_eagerly_and_says_why(make_step, reason):
    results = []
    for compiled in (False, True):
        model = _model()
        optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = make_step(model, optimizer)
        run = numdiff.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                run(*_data())
        if compiled:
            messages = [str(w.message) for w in caught]
            assert any(re.search(reason, message) for message in messages), messages
        results.append([p.detach().numpy().copy() for p in model.parameters()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, expected)


def _step_with_closure(model, optimizer):
    def step(x, y):
        def closure():
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        return optimizer.step(closure)

    return step


def test_an_optimizer_step_with_a_closure_runs_eagerly_and_says_why():
    results = []
    for compiled in (False, True):
        model = _model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        step = _step_with_closure(model, optimizer)
        run = numdiff.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                run(*_data())
        if compiled:
            assert any(r"SGD.step(closure) inside the compiled function" in str(w.message) for w in caught)
        results.append([p.detach().numpy().copy() for p in model.parameters()])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, expected)
