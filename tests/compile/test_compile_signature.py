"""numdiff.compile takes torch.compile's arguments, so ported code that passes them runs: a
decorator with or without arguments, disable, fullgraph (raise instead of falling back), the
modes and options (max-autotune times convolutions, compile/conv_tuning.py), eager backends."""

from __future__ import annotations

import pytest

import numdiff
from numdiff.compile import UnsupportedInCompileError


def test_decorator_with_and_without_arguments_and_disable():
    @numdiff.compile
    def plain(x):
        return (x * 2).sum()

    @numdiff.compile(mode="reduce-overhead", dynamic=False)
    def with_args(x):
        return (x * 3).sum()

    def f(x):
        return x + 1

    x = numdiff.ones(3)
    assert plain(x).item() == 6.0 and with_args(x).item() == 9.0
    assert plain.compiled.compile_count == 1 and with_args.compiled.compile_count == 1
    assert numdiff.compile(f, disable=True) is f
    net = numdiff.nn.Linear(2, 1)
    assert numdiff.compile(net, disable=True) is net


@pytest.mark.parametrize("mode, autotune", [("default", False), ("reduce-overhead", False),
                                             ("max-autotune", True), ("max-autotune-no-cudagraphs", True)])
def test_modes_and_options_set_autotuning(mode, autotune):
    assert numdiff.compile(lambda x: x * 2, mode=mode).compiled.autotune is autotune
    assert numdiff.compile(numdiff.nn.ReLU(), mode=mode).compiled.autotune is autotune
    assert numdiff.compile(lambda x: x, options={"max_autotune": autotune}).compiled.autotune is autotune


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(RuntimeError, match="unrecognized mode='fast'.*max-autotune"):
        numdiff.compile(lambda x: x, mode="fast")
    with pytest.raises(RuntimeError, match="either mode or options"):
        numdiff.compile(lambda x: x, mode="default", options={})
    with pytest.raises(TypeError, match="options must be a dict, got list"):
        numdiff.compile(lambda x: x, options=["max_autotune"])
    with pytest.raises(ValueError, match="backend must be 'inductor'.*got 'tvm'"):
        numdiff.compile(lambda x: x, backend="tvm")
    with pytest.raises(ValueError, match="backend must be"):
        numdiff.compile(lambda x: x, backend=lambda gm, inputs: gm)
    with pytest.warns(UserWarning, match=r"options \['epilogue_fusion'\].*ignored"):
        numdiff.compile(lambda x: x, options={"epilogue_fusion": True})


def test_eager_backends_run_the_function_itself_without_a_warning(recwarn):
    calls = []

    def f(x):
        calls.append(1)
        return (x * 2).sum()

    compiled = numdiff.compile(f, backend="eager")
    x = numdiff.ones(2, requires_grad=True)
    compiled(x).backward()
    compiled(x)
    assert len(calls) == 2 and compiled.compiled.compile_count == 0 and x.grad.tolist() == [2.0, 2.0]
    assert not [w for w in recwarn if "numdiff.compile" in str(w.message)]


def test_fullgraph_raises_where_compile_would_fall_back():
    def reads_a_nested_tensor(pair):
        return pair[0] + pair[1]

    pair = (numdiff.ones(2), numdiff.ones(2))
    with pytest.warns(UserWarning):  # the default falls back, warning
        assert numdiff.compile(reads_a_nested_tensor)(pair).tolist() == [2.0, 2.0]
    strict = numdiff.compile(reads_a_nested_tensor, fullgraph=True)
    with pytest.raises(UnsupportedInCompileError, match=r"fullgraph=True.*reads_a_nested_tensor.*lists, tuples"):
        strict(pair)

    w = numdiff.ones(2)

    def assigns_data(x):
        w.data = x * 2
        return w.sum()

    with pytest.warns(UserWarning), pytest.raises(UnsupportedInCompileError, match="fullgraph=True.*changes tensors"):
        numdiff.compile(assigns_data, fullgraph=True)(numdiff.ones(2))
    with pytest.raises(UnsupportedInCompileError, match="fullgraph=True"):  # and again on the next call
        numdiff.compile(assigns_data, fullgraph=True)(numdiff.ones(2))
