"""Property: whatever Python state a compiled function reads, changing it between calls never makes
the compiled result or gradient differ from eager mode's (a change retraces or runs eagerly)."""

from __future__ import annotations

import types
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import numdiff

SCALE = 1.5
WEIGHTS = [0.5, 1.0, 2.0]
OPTIONS = {"shift": 0.25, "square": False}
CONFIG = types.SimpleNamespace(inner=types.SimpleNamespace(gain=1.0))
TABLE = np.array([1.0, -1.0, 0.5])
LEVEL = numdiff.tensor(0.5, dtype=numdiff.float64)


def _helper(x):
    return x * SCALE


class Block(numdiff.nn.Module):
    bias_scale = 1.0  # a class attribute, read through self

    def __init__(self):
        super().__init__()
        self.weight = numdiff.nn.Parameter(numdiff.tensor([0.3, -0.2, 0.1], dtype=numdiff.float64))
        self.taps = [1.0, 0.0]
        self.use_tanh = True

    def forward(self, x):
        y = x * self.weight * self.taps[0] + self.taps[1] * self.bias_scale
        return y.tanh() if self.use_tanh else y.sigmoid()


BLOCK = Block()


def program(x):
    y = _helper(x) * numdiff.tensor(WEIGHTS, dtype=numdiff.float64) + OPTIONS["shift"]
    if OPTIONS["square"]:
        y = y * y
    y = y * CONFIG.inner.gain + numdiff.tensor(TABLE) * LEVEL.item()
    return BLOCK(y).sum() + (x * BLOCK.weight.sum().item()).sum()


def _mutate(kind, value):
    global SCALE
    if kind == "scale":
        SCALE = value
    elif kind == "list":
        WEIGHTS[1] = value
    elif kind == "dict":
        OPTIONS["shift"] = value
    elif kind == "flag":
        OPTIONS["square"] = value > 0
    elif kind == "nested":
        CONFIG.inner.gain = value
    elif kind == "array":
        TABLE[2] = value
    elif kind == "tensor":
        LEVEL.fill_(value)
    elif kind == "parameter":
        with numdiff.no_grad():
            BLOCK.weight[0] = value
    elif kind == "module list":
        BLOCK.taps[1] = value
    elif kind == "class attribute":
        Block.bias_scale = value
    elif kind == "module flag":
        BLOCK.use_tanh = value > 0
    elif kind == "training":
        BLOCK.train(value > 0)


KINDS = ["scale", "list", "dict", "flag", "nested", "array", "tensor", "parameter", "module list",
         "class attribute", "module flag", "training", "no_grad"]


def _run(f, x):
    x = x.detach().clone().requires_grad_()
    BLOCK.weight.grad = None
    out = f(x)
    if out.requires_grad:
        out.backward()
        return out.detach().numpy().copy(), x.grad.numpy().copy(), BLOCK.weight.grad.numpy().copy()
    return out.detach().numpy().copy(), None, None


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.floats(-2.0, 2.0).map(lambda v: round(v, 2))),
                min_size=1, max_size=4))
def test_mutating_any_state_between_calls_keeps_compiled_equal_to_eager(mutations):
    compiled = numdiff.compile(program)
    x = numdiff.tensor([0.2, -0.4, 0.9], dtype=numdiff.float64)
    grad_enabled = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, value in [(None, 0.0)] + mutations:
            if kind == "no_grad":
                grad_enabled = value > 0
            elif kind is not None:
                _mutate(kind, value)
            with numdiff.set_grad_enabled(grad_enabled):
                got = _run(compiled, x)
                expected = _run(program, x)
            if kind is None:  # compiled, not run eagerly
                assert compiled.compiled.eager_reason is None and compiled.compiled.compile_count == 1
            for a, b in zip(got, expected):
                if b is None:
                    assert a is None
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
