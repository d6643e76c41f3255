"""numdiff.compile replays what models update in place (BatchNorm's running statistics, counters)
and the random draws of dropout, as eager mode does them; what it cannot replay runs eagerly with
a warning that says why."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
from numdiff import nn


def _cifar_cnn(seed: int) -> nn.Module:
    numdiff.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Dropout(0.25),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 10),
    )


def _train(model: nn.Module, forward, steps: int) -> list:
    optimizer = numdiff.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    numdiff.manual_seed(1234)
    data = [(numdiff.randn(8, 3, 8, 8), numdiff.randint(0, 10, (8,))) for _ in range(steps)]
    for step, (x, y) in enumerate(data):
        numdiff.manual_seed(step)  # the same dropout draws in both runs
        optimizer.zero_grad()  # before the call: every call sees parameters without .grad
        loss = nn.functional.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_a_cnn_with_batchnorm_and_dropout_compiles_and_trains_like_eager():
    eager, compiled_model = _cifar_cnn(0), _cifar_cnn(0)
    compiled = numdiff.compile(compiled_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager
        compiled_losses = _train(compiled_model, compiled, steps=5)
    eager_losses = _train(eager, eager, steps=5)
    assert compiled.compile_count == 1
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-4)
    for name, buffer in eager.named_buffers():
        np.testing.assert_allclose(dict(compiled_model.named_buffers())[name].numpy(), buffer.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(compiled_model[1].num_batches_tracked.item()) == 5


def test_eval_mode_reads_the_running_statistics_written_by_compiled_training_steps():
    model = nn.BatchNorm1d(3)
    compiled = numdiff.compile(model)
    numdiff.manual_seed(0)
    batches = [numdiff.randn(16, 3) * 2 + 1 for _ in range(3)]
    for x in batches:
        compiled(x)
    reference = nn.BatchNorm1d(3)
    for x in batches:
        reference(x)
    model.eval()
    reference.eval()
    x = numdiff.randn(4, 3)
    np.testing.assert_allclose(compiled(x).detach().numpy(), reference(x).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("draw", ["dropout", "two dropouts", "randn", "rand_like", "bernoulli", "multinomial"])
def test_random_draws_inside_the_graph_equal_eagers_for_the_same_seed(draw):
    functions = {
        "dropout": lambda x: nn.functional.dropout(x, 0.5) * 2,
        "two dropouts": lambda x: nn.functional.dropout(nn.functional.dropout(x, 0.3).exp(), 0.6),
        "randn": lambda x: x + numdiff.randn(*x.shape, dtype=x.dtype),
        "rand_like": lambda x: x * numdiff.rand_like(x),
        "bernoulli": lambda x: x * numdiff.bernoulli(numdiff.full(x.shape, 0.5, dtype=x.dtype)),
        "multinomial": lambda x: x[numdiff.multinomial(x.exp(), 3)],
    }
    f = functions[draw]
    compiled = numdiff.compile(f)
    x = numdiff.tensor([0.5, 1.0, 1.5, 2.0, 2.5, 3.0], dtype=numdiff.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for seed in (0, 1, 2, 0):
            numdiff.manual_seed(seed)
            expected = f(x).numpy()
            after_eager = numdiff.rand(2).numpy()
            numdiff.manual_seed(seed)
            np.testing.assert_array_equal(compiled(x).numpy(), expected)
            np.testing.assert_array_equal(numdiff.rand(2).numpy(), after_eager)  # same draws consumed


def test_dropout_gradient_uses_the_calls_own_mask():
    f = numdiff.compile(lambda x: nn.functional.dropout(x, 0.5).sum())
    for seed in (3, 4):
        x = numdiff.ones(64, dtype=numdiff.float64, requires_grad=True)
        numdiff.manual_seed(seed)
        f(x).backward()
        numdiff.manual_seed(seed)
        mask = nn.functional.dropout(numdiff.ones(64, dtype=numdiff.float64), 0.5).numpy()
        np.testing.assert_array_equal(x.grad.numpy(), mask)


COUNTER = numdiff.tensor(0)


def _counts(x):
    COUNTER.add_(1)
    return x * COUNTER


def test_a_counter_written_in_place_and_read_back_advances_once_per_call():
    compiled = numdiff.compile(_counts)
    x = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64)
    version = COUNTER._version
    for step in range(1, 4):
        np.testing.assert_array_equal(compiled(x).numpy(), [step, 2.0 * step])
        assert int(COUNTER.item()) == step
    assert COUNTER._version > version


def test_an_argument_written_in_place_is_written_back_and_returned_as_itself():
    def f(x, state):
        state.mul_(0.5).add_(x)
        return x * 2, state

    compiled = numdiff.compile(f)
    state, reference = numdiff.zeros(2, dtype=numdiff.float64), numdiff.zeros(2, dtype=numdiff.float64)
    for step in range(3):
        x = numdiff.tensor([1.0, float(step)], dtype=numdiff.float64)
        _, returned = compiled(x, state)
        f(x, reference)
        assert returned is state
        np.testing.assert_allclose(state.numpy(), reference.numpy())


def test_an_in_place_activation_on_an_intermediate_is_differentiated_as_in_eager():
    def f(x, w):
        h = x @ w
        h.relu_()
        h.mul_(2)
        return (h * h).sum()

    compiled = numdiff.compile(f)
    numdiff.manual_seed(0)
    x = numdiff.randn(4, 3, dtype=numdiff.float64)
    for _ in range(2):
        w = numdiff.randn(3, 5, dtype=numdiff.float64, requires_grad=True)
        w_eager = w.detach().clone().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiled(x, w).backward()
        f(x, w_eager).backward()
        np.testing.assert_allclose(w.grad.numpy(), w_eager.grad.numpy(), rtol=1e-12)


BUFFER = numdiff.zeros(4, dtype=numdiff.float64)


def _writes_a_view(x):
    BUFFER[:2].add_(1)
    return x * BUFFER.sum()


def test_an_in_place_update_of_a_view_runs_eagerly_and_says_why():
    compiled = numdiff.compile(_writes_a_view)
    x = numdiff.tensor([1.0], dtype=numdiff.float64)
    with pytest.warns(UserWarning, match="view.*eagerly|eagerly.*view"):
        first = compiled(x)
    np.testing.assert_array_equal(first.numpy(), [2.0])
    np.testing.assert_array_equal(compiled(x).numpy(), [4.0])
    np.testing.assert_array_equal(BUFFER.numpy(), [2.0, 2.0, 0.0, 0.0])


def test_a_write_into_a_tensor_the_backward_reads_runs_eagerly_and_raises_at_backward_as_eager():
    scale = numdiff.tensor([2.0], dtype=numdiff.float64, requires_grad=True)

    def f(x):
        out = (x * scale).sum()
        with numdiff.no_grad():
            scale.mul_(0.5)
        return out

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 3.0], dtype=numdiff.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="modified in place"):
        out = compiled(x)
    np.testing.assert_allclose(scale.detach().numpy(), [1.0])  # written once, by the eager rerun
    with pytest.raises(RuntimeError, match="modified in place"):
        out.backward()


def test_a_tensor_the_function_makes_and_writes_in_place_starts_afresh_on_every_call():
    def f(x):
        total = numdiff.zeros(3, dtype=numdiff.float64)
        total.add_(x)
        return total * 2, numdiff.ones(3, dtype=numdiff.float64)

    compiled = numdiff.compile(f)
    x = numdiff.tensor([1.0, 2.0, 3.0], dtype=numdiff.float64)
    for _ in range(3):
        doubled, ones = compiled(x)
        np.testing.assert_array_equal(doubled.numpy(), [2.0, 4.0, 6.0])
        np.testing.assert_array_equal(ones.numpy(), [1.0, 1.0, 1.0])
        ones.add_(5)  # the caller's tensor: the next call's is new


def test_a_gradient_clipped_in_place_inside_the_function_is_written_back():
    weight = numdiff.tensor([1.0, 2.0], dtype=numdiff.float64, requires_grad=True)

    def clip():
        with numdiff.no_grad():
            weight.grad.clamp_(-1.0, 1.0)
        return weight.grad * 1

    compiled = numdiff.compile(clip)
    for scale in (3.0, -4.0):
        weight.grad = numdiff.tensor([scale, 0.5], dtype=numdiff.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = compiled()
        np.testing.assert_array_equal(weight.grad.numpy(), [np.sign(scale), 0.5])
        np.testing.assert_array_equal(out.numpy(), [np.sign(scale), 0.5])


def _train_step_with(inside: str):
    numdiff.manual_seed(0)
    model = nn.Linear(3, 1, dtype=numdiff.float64)
    optimizer = numdiff.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        if inside == "zero_grad":
            optimizer.zero_grad()
        else:
            optimizer.step()  # with the gradients of the previous calls
        return model(x).sum()

    return model, optimizer, step


@pytest.mark.parametrize("inside", ["zero_grad", "step"])
def test_an_optimizer_call_inside_the_function_is_replayed_or_runs_eagerly_saying_why(inside):
    results = []
    for compiled in (False, True):
        model, optimizer, step = _train_step_with(inside)
        run = numdiff.compile(step) if compiled else step
        x = numdiff.tensor([[1.0, 2.0, 3.0]], dtype=numdiff.float64)
        losses = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(4):
                loss = run(x)
                loss.backward()
                if inside == "zero_grad":
                    optimizer.step()  # else the gradients accumulate, and the step inside uses them
                losses.append(loss.item())
        messages = [str(w.message) for w in caught]
        if compiled and inside == "step":  # the forward reads the parameters the step changed
            assert any("runs ops after SGD.step()" in m for m in messages), messages
        elif compiled:  # zero_grad is replayed within each compiled call (compile/host_steps.py)
            assert messages == []
        results.append((losses, model.weight.detach().numpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)
