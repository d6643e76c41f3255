"""One spec per op: every registered op's facts live on its `OpSpec`, and the specs are complete.

The compile rule has its own test (tests/compile/test_rules.py), the op cases theirs
(tests/ops/test_registry.py); these check the rest of the spec and how facts reach it.
"""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

import numdiff  # noqa: F401 - every op module registers, every layer attaches
import numdiff.sparse  # noqa: F401 - loaded on first use (import numdiff leaves it out); its ops register then
from numdiff.autograd import Function
from numdiff.backend import CPU, CUDA
from numdiff.ops import registry
from numdiff.ops.registry import OPS, SPECS, attach, register, spec, unclaimed

# Ops that still run under vmap as a loop over the batch (with a VmapPerformanceWarning). The list
# only shrinks: a new op brings its batching rule (numdiff/func/_batch_rules.py).
LOOPED_UNDER_VMAP = frozenset({
    "adaptive_avg_pool2d_backward", "attention", "attention_backward", "avg_pool2d_backward",
    "conv2d_weight_grad", "cross_entropy", "ctc_loss", "grouped_norm_backward", "gru_sequence",
    "gru_sequence_backward", "lstm_sequence", "lstm_sequence_backward", "max_pool_gather",
    "max_pool_scatter", "nll_loss", "rnn_sequence", "rnn_sequence_backward", "running_stat",
})  # fmt: skip


def test_every_attached_fact_found_its_op():
    assert unclaimed() == {}, "facts attached to names no op registers (a typo, or a removed op)"


def test_ops_is_the_registry_seen_as_functions():
    assert set(OPS) == set(SPECS) and len(OPS) == len(SPECS)
    for name, op_spec in SPECS.items():
        assert OPS[name] is op_spec.function
        assert op_spec.function.spec is op_spec and op_spec.name == name == op_spec.function.op_name


@pytest.mark.parametrize("op", sorted(SPECS))
def test_every_op_has_a_batching_rule_or_is_a_known_loop(op):
    has_rule = SPECS[op].batching is not None
    if op in LOOPED_UNDER_VMAP:
        assert not has_rule, f"{op} has a batching rule now: take it off LOOPED_UNDER_VMAP"
    else:
        assert has_rule, f"op {op!r} has no batching rule: attach one in numdiff/func/_batch_rules.py"


@pytest.mark.parametrize("op", sorted(name for name, s in SPECS.items() if s.launchers))
def test_every_launcher_an_op_names_is_on_both_backends(op):
    for launcher in SPECS[op].launchers:
        assert launcher in CPU.kernel_names(), f"{op}: no CPU launcher {launcher!r} in numdiff/backend.py"
        assert launcher in CUDA.kernel_names(), f"{op}: no CUDA launcher {launcher!r} in numdiff/backend.py"


def _launchers_called(module) -> set[str]:
    """Names called as ``backend_for(x).NAME(...)`` or on a variable bound to ``backend_for(x)``."""
    tree = ast.parse(inspect.getsource(module))
    bound = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", None) == "backend_for"
        for target in node.targets if isinstance(target, ast.Name)
    }  # fmt: skip
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Call) and getattr(base.func, "id", None) == "backend_for":
                called.add(node.attr)
            elif isinstance(base, ast.Name) and base.id in bound:
                called.add(node.attr)
    return called - {"to_host", "from_host", "device_of", "name"}


@pytest.mark.parametrize("module_name", sorted({s.function.__module__ for s in SPECS.values()}))
def test_the_launchers_an_op_module_calls_are_named_by_its_specs(module_name):
    module = importlib.import_module(module_name)
    declared = {name for s in SPECS.values() if s.function.__module__ == module_name for name in s.launchers}
    called = _launchers_called(module)
    assert called <= declared, f"{module_name} calls launchers no op there names: {sorted(called - declared)}"
    assert declared <= called, f"{module_name}'s specs name launchers it never calls: {sorted(declared - called)}"


def test_attaching_a_fact_twice_names_the_op():
    with pytest.raises(ValueError, match="'sum': batching is already attached"):
        attach("sum", batching=lambda *args: None)


def test_only_higher_layer_facts_are_attachable():
    with pytest.raises(TypeError, match="'sum': cannot attach 'compile'"):
        spec("sum").attach(compile="kernel")


def test_a_fact_attached_before_its_op_registers_waits_for_it():
    class Late(Function):
        pass

    def rule(*args):
        return None

    try:
        attach("spec_test_late_op", batching=rule)
        assert unclaimed() == {"spec_test_late_op": ("batching",)}
        register("spec_test_late_op", compile="call")(Late)
        assert Late.spec.batching is rule and unclaimed() == {}
    finally:
        registry.SPECS.pop("spec_test_late_op", None)
        registry._WAITING.pop("spec_test_late_op", None)


def test_register_refuses_an_unknown_compile_rule():
    with pytest.raises(ValueError, match="'spec_test_op': compile rule 'fast'"):
        register("spec_test_op", compile="fast")


def test_spec_of_an_unknown_name_says_so():
    with pytest.raises(KeyError, match="no op is registered as 'no_such_op'"):
        spec("no_such_op")


def _view_functions(module) -> set[str]:
    """Names of the Functions a module's public functions pass to ``_as_view(out, base, Function, ...)``."""
    tree = ast.parse(inspect.getsource(module))
    return {
        node.args[2].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_as_view"
        and len(node.args) >= 3 and isinstance(node.args[2], ast.Name)
    }  # fmt: skip


def test_the_ops_whose_public_functions_return_views_say_so_on_their_specs():
    made_views = set()
    for module_name in sorted({s.function.__module__ for s in SPECS.values()}):
        module = importlib.import_module(module_name)
        made_views |= {getattr(module, name).op_name for name in _view_functions(module)}
    assert made_views, "no public function returns a view: the scan is broken"
    assert made_views == {name for name, s in SPECS.items() if s.view}, "register(..., view=True) for these"


def test_view_is_given_to_register_and_jvp_is_attached_once():
    with pytest.raises(TypeError, match="'reshape': cannot attach 'view'"):
        spec("reshape").attach(view=False)
    assert spec("reshape").view and not spec("sum").view
    with pytest.raises(ValueError, match="'exp': jvp is already attached"):
        attach("exp", jvp=lambda *args: None)
