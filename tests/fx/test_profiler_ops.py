"""torch.ops.profiler's range ops, which traced code calls where its source had record_function."""

from __future__ import annotations

import pytest

import numdiff
import numdiff.fx as fx
from numdiff.ops import profiler as profiler_ops


def test_enter_and_exit_make_a_named_range_in_the_profile() -> None:
    with numdiff.autograd.profiler.profile() as prof:
        handle = profiler_ops._record_function_enter("block")
        numdiff.ones(3).exp()
        profiler_ops._record_function_exit(handle)
    assert "block" in prof.key_averages().table()


def test_traced_range_ops_survive_dead_code_elimination() -> None:
    graph = fx.Graph()
    x = graph.placeholder("x")
    handle = graph.call_function(profiler_ops._record_function_enter, ("block",))
    graph.call_function(profiler_ops._record_function_exit, (handle,))
    graph.output(x)
    assert not graph.eliminate_dead_code()
    assert len(graph.nodes) == 4


def test_bad_arguments_name_the_op() -> None:
    with pytest.raises(TypeError, match="_record_function_enter: name must be a str, got int"):
        profiler_ops._record_function_enter(3)
    with pytest.raises(TypeError, match="_record_function_exit: expected the handle"):
        profiler_ops._record_function_exit("block")
