"""The registry is the list of what numdiff can differentiate: every entry must have a case."""

from __future__ import annotations

import pytest

from numdiff.autograd import Function
from numdiff.ops.registry import OPS, register
from tests.ops.op_cases import all_cases, case_rng, recorded_ops, to_tensors

CASES = all_cases()
COVERED = {case.op for case in CASES}


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_registered_op_has_a_case(op):
    assert op in COVERED, (
        f"op {op!r} ({OPS[op].__qualname__}) is registered in numdiff.ops.OPS but has no OpCase: add "
        "one to a tests/ops/cases_<family>.py module (see the top of tests/ops/op_cases.py)"
    )


@pytest.mark.parametrize("case", [c for c in CASES if c.op is not None], ids=lambda c: c.id)
def test_case_names_a_registered_op(case):
    assert case.op in OPS, f"case {case.id} names op {case.op!r}, which is not registered"


@pytest.mark.parametrize("case", [c for c in CASES if c.op is not None], ids=lambda c: c.id)
def test_case_records_the_op_it_covers(case):
    outputs = case.fn(*to_tensors(case.inputs(case_rng(case))))
    names = recorded_ops(outputs)
    assert case.op in names, f"case {case.id} recorded {sorted(names)}, not {case.op!r}"


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("op", sorted(OPS))
def test_registered_op_is_an_array_level_function(op):
    cls = OPS[op]
    assert issubclass(cls, Function)
    assert cls.array_forward is True
    assert cls.op_name == op


def test_register_refuses_a_name_taken_by_another_op():
    class Impostor(Function):
        pass

    with pytest.raises(ValueError, match="'add' is already registered"):
        register("add")(Impostor)
    assert OPS["add"] is not Impostor
