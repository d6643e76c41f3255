"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode; context managers,
decorators, and thread-local state."""

from __future__ import annotations

import threading

import pytest

import numdiff

torch = pytest.importorskip("torch")


def _leaf():
    return numdiff.tensor([1.0, 2.0], requires_grad=True)


@pytest.mark.parametrize(
    "make_mode",
    [numdiff.no_grad, numdiff.inference_mode, lambda: numdiff.set_grad_enabled(False)],
    ids=["no_grad", "inference_mode", "set_grad_enabled(False)"],
)
def test_context_manager_stops_recording_and_restores(make_mode):
    x = _leaf()
    with make_mode():
        assert not numdiff.is_grad_enabled()
        y = x * 2
    assert numdiff.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    assert (x * 2).requires_grad


@pytest.mark.parametrize(
    "make_mode", [numdiff.no_grad, numdiff.inference_mode], ids=["no_grad", "inference_mode"]
)
def test_decorator_stops_recording_for_each_call(make_mode):
    @make_mode()
    def double(t):
        """Doubles."""
        assert not numdiff.is_grad_enabled()
        return t * 2

    x = _leaf()
    assert not double(x).requires_grad
    assert numdiff.is_grad_enabled()
    assert double.__name__ == "double" and double.__doc__ == "Doubles."


def test_enable_grad_inside_no_grad_records_again():
    x = _leaf()
    with numdiff.no_grad():
        with numdiff.enable_grad():
            y = x * 2
        z = x * 2
        assert not numdiff.is_grad_enabled()
    assert y.requires_grad and not z.requires_grad


def test_enable_grad_as_decorator_inside_no_grad():
    @numdiff.enable_grad()
    def double(t):
        return t * 2

    with numdiff.no_grad():
        assert double(_leaf()).requires_grad
        assert not numdiff.is_grad_enabled()


def test_set_grad_enabled_as_a_function_switches_until_switched_back():
    numdiff.set_grad_enabled(False)
    try:
        assert not numdiff.is_grad_enabled()
        assert not (_leaf() * 2).requires_grad
    finally:
        numdiff.set_grad_enabled(True)
    assert numdiff.is_grad_enabled()


def test_set_grad_enabled_true_inside_no_grad_block_is_undone_on_exit():
    with numdiff.no_grad():
        with numdiff.set_grad_enabled(True):
            assert numdiff.is_grad_enabled()
        assert not numdiff.is_grad_enabled()
    assert numdiff.is_grad_enabled()


def test_inference_mode_false_turns_grad_mode_on_as_torchs_does():
    # PyTorch's InferenceMode(false) sets grad mode to true, also inside no_grad.
    for lib in (numdiff, torch):
        with lib.inference_mode(False):
            assert lib.is_grad_enabled()
        with lib.no_grad(), lib.inference_mode(False):
            assert lib.is_grad_enabled()
            assert (lib.ones(1, requires_grad=True) * 2).requires_grad
        with lib.inference_mode(), lib.inference_mode(False):
            assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()


@pytest.mark.parametrize("lib", [numdiff, torch], ids=["numdiff", "torch"])
@pytest.mark.parametrize("name", ["no_grad", "enable_grad", "inference_mode"])
def test_modes_decorate_without_parentheses(lib, name):
    # `@torch.no_grad` (no call) is PyTorch 2's spelling too; numdiff raised "takes no arguments".
    @getattr(lib, name)
    def mode_inside(t):
        """Kept docstring."""
        return lib.is_grad_enabled(), (t * 2).requires_grad

    with lib.no_grad() if name == "enable_grad" else lib.enable_grad():
        assert mode_inside(lib.ones(1, requires_grad=True)) == ((name == "enable_grad"),) * 2
    assert mode_inside.__doc__ == "Kept docstring."


@pytest.mark.parametrize("lib", [numdiff, torch], ids=["numdiff", "torch"])
def test_a_decorated_generator_keeps_the_mode_each_time_it_resumes(lib):
    @lib.no_grad()
    def modes():
        received = yield lib.is_grad_enabled()
        yield received, lib.is_grad_enabled()
        return "done"

    steps = modes()
    assert next(steps) is False
    assert lib.is_grad_enabled()
    assert steps.send("sent") == ("sent", False)
    with pytest.raises(StopIteration) as stop:
        next(steps)
    assert stop.value.value == "done" and lib.is_grad_enabled()


def test_mode_is_restored_when_the_block_raises():
    with pytest.raises(ZeroDivisionError):
        with numdiff.no_grad():
            raise ZeroDivisionError
    assert numdiff.is_grad_enabled()

    @numdiff.no_grad()
    def fail():
        raise KeyError

    with pytest.raises(KeyError):
        fail()
    assert numdiff.is_grad_enabled()


def test_nested_no_grad_blocks_restore_in_order():
    with numdiff.no_grad():
        with numdiff.no_grad():
            pass
        assert not numdiff.is_grad_enabled()
    assert numdiff.is_grad_enabled()


def test_requires_grad_leaf_can_be_made_under_no_grad():
    with numdiff.no_grad():
        w = numdiff.zeros(2, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_a_thread_does_not_see_another_threads_no_grad():
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def other_thread():
        inside.wait(5)
        seen["enabled"] = numdiff.is_grad_enabled()
        seen["records"] = (_leaf() * 2).requires_grad
        release.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with numdiff.no_grad():
        inside.set()
        assert release.wait(5)
        assert not numdiff.is_grad_enabled()
    thread.join(5)
    assert seen == {"enabled": True, "records": True}


def test_no_grad_in_a_thread_does_not_leak_into_the_main_thread():
    in_block = threading.Event()
    done = threading.Event()

    def other_thread():
        with numdiff.no_grad():
            in_block.set()
            done.wait(5)

    thread = threading.Thread(target=other_thread)
    thread.start()
    assert in_block.wait(5)
    try:
        assert numdiff.is_grad_enabled()
        assert (_leaf() * 2).requires_grad
    finally:
        done.set()
        thread.join(5)


def test_backward_runs_with_grad_mode_restored_afterwards():
    x = _leaf()
    with numdiff.no_grad():
        pass
    y = (x * x).sum()
    y.backward(create_graph=True)
    assert numdiff.is_grad_enabled()
    with numdiff.no_grad():
        z = (x * x).sum()
    assert not z.requires_grad


def test_backward_inside_no_grad_still_computes_gradients():
    x = _leaf()
    y = (x * x).sum()
    with numdiff.no_grad():
        y.backward()
        assert not numdiff.is_grad_enabled()
    assert x.grad.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_as_decorator_sets_the_mode_only_inside_calls(mode):
    with numdiff.set_grad_enabled(not mode):

        @numdiff.set_grad_enabled(mode)
        def probe(t):
            return numdiff.is_grad_enabled(), (t * 2).requires_grad

        assert numdiff.is_grad_enabled() is (not mode), "decorating must not switch the mode"
        assert probe(_leaf()) == (mode, mode)
        assert numdiff.is_grad_enabled() is (not mode)
