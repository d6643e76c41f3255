"""Python numbers that do not fit a dtype: refused where PyTorch refuses, wrapped where it wraps.

Each case runs the same call on torch (reference only) and on numdiff, and compares the outcome:
the error, or the dtype and the values.
"""

import warnings

import numpy as np
import pytest
import torch

import numdiff
from numdiff._scalar_convert import ScalarOverflowError


def _fill(lib, dtype, value):
    return lib.zeros(2, dtype=getattr(lib, dtype)).fill_(value)


def _setitem(lib, dtype, value, key=0):
    t = lib.zeros(2, dtype=getattr(lib, dtype))
    t[key] = value
    return t


CREATION_CASES = {
    "tensor(2**63)": lambda lib: lib.tensor(2**63),
    "tensor(-2**63 - 1)": lambda lib: lib.tensor(-(2**63) - 1),
    "tensor([1, 2**63])": lambda lib: lib.tensor([1, 2**63]),
    "tensor([2**64])": lambda lib: lib.tensor([2**64]),
    "tensor([1.5, 2**63])": lambda lib: lib.tensor([1.5, 2**63]),
    "tensor([2**70], float64)": lambda lib: lib.tensor([2**70], dtype=lib.float64),
    "tensor(2**63 - 1)": lambda lib: lib.tensor(2**63 - 1),
    "tensor([300], uint8)": lambda lib: lib.tensor([300], dtype=lib.uint8),
    "tensor([-1], uint8)": lambda lib: lib.tensor([-1], dtype=lib.uint8),
    "tensor([-256], uint8)": lambda lib: lib.tensor([-256], dtype=lib.uint8),
    "tensor(300, int8)": lambda lib: lib.tensor(300, dtype=lib.int8),
    "tensor([-129], int8)": lambda lib: lib.tensor([-129], dtype=lib.int8),
    "tensor([True, 300], uint8)": lambda lib: lib.tensor([True, 300], dtype=lib.uint8),
    "tensor([255.5], uint8)": lambda lib: lib.tensor([255.5], dtype=lib.uint8),
    "tensor([-0.5], uint8)": lambda lib: lib.tensor([-0.5], dtype=lib.uint8),
    "tensor([nan], int32)": lambda lib: lib.tensor([float("nan")], dtype=lib.int32),
    "tensor([1e20], int64)": lambda lib: lib.tensor([1e20], dtype=lib.int64),
    "tensor([1e5], float16)": lambda lib: lib.tensor([1e5], dtype=lib.float16),
    "as_tensor([300], uint8)": lambda lib: lib.as_tensor([300], dtype=lib.uint8),
    "new_tensor([300])": lambda lib: lib.zeros(1, dtype=lib.uint8).new_tensor([300]),
    "full 300 uint8": lambda lib: lib.full((2,), 300, dtype=lib.uint8),
    "full -1 uint8": lambda lib: lib.full((2,), -1, dtype=lib.uint8),
    "full 2**63": lambda lib: lib.full((2,), 2**63),
    "full nan int64": lambda lib: lib.full((2,), float("nan"), dtype=lib.int64),
    "full 1.5 int64": lambda lib: lib.full((2,), 1.5, dtype=lib.int64),
    "new_full 300": lambda lib: lib.zeros(1, dtype=lib.uint8).new_full((2,), 300),
    "full_like 300": lambda lib: lib.full_like(lib.zeros(2, dtype=lib.uint8), 300),
    "arange to 2**63": lambda lib: lib.arange(2**63 - 2, 2**63),
    "arange wraps uint8": lambda lib: lib.arange(250, 260, dtype=lib.uint8),
    "arange wraps int8": lambda lib: lib.arange(-200, -198, dtype=lib.int8),
    "fill_ 300 uint8": lambda lib: _fill(lib, "uint8", 300),
    "fill_ -1 uint8": lambda lib: _fill(lib, "uint8", -1),
    "fill_ 2**63 int64": lambda lib: _fill(lib, "int64", 2**63),
    "fill_ 1e20 int32": lambda lib: _fill(lib, "int32", 1e20),
    "fill_ 1e5 float16": lambda lib: _fill(lib, "float16", 1e5),
    "fill_ 1e39 float32": lambda lib: _fill(lib, "float32", 1e39),
    "fill_ inf float16": lambda lib: _fill(lib, "float16", float("inf")),
    "setitem 300 uint8": lambda lib: _setitem(lib, "uint8", 300),
    "setitem -1 uint8": lambda lib: _setitem(lib, "uint8", -1),
    "setitem 1e20 int32": lambda lib: _setitem(lib, "int32", 1e20),
    "setitem 1e5 float16": lambda lib: _setitem(lib, "float16", 1e5),
    "setitem slice 300": lambda lib: _setitem(lib, "uint8", 300, slice(0, 2)),
    "setitem 0-d tensor 300": lambda lib: _setitem(lib, "uint8", lib.tensor(300)),
    "masked_fill 300": lambda lib: lib.zeros(2, dtype=lib.uint8).masked_fill(lib.tensor([True, False]), 300),
    "clamp 300": lambda lib: lib.zeros(2, dtype=lib.uint8).clamp(0, 300),
    "where 300": lambda lib: lib.where(lib.tensor([True, False]), lib.zeros(2, dtype=lib.uint8), 300),
    "int8 + 300 wraps": lambda lib: lib.tensor([1, -3], dtype=lib.int8) + 300,
    "300 + int8 wraps": lambda lib: 300 + lib.tensor([1, -3], dtype=lib.int8),
    "uint8 - -3 wraps": lambda lib: lib.tensor([1, 3], dtype=lib.uint8) - (-3),
    "int8 * 300 wraps": lambda lib: lib.tensor([1, 3], dtype=lib.int8) * 300,
    "int8 + (2**63 - 1)": lambda lib: lib.tensor([1, 3], dtype=lib.int8) + (2**63 - 1),
    "int64 + 2**63 wraps": lambda lib: lib.tensor([1, 3]) + 2**63,
    "int8 + 2**64 refused": lambda lib: lib.tensor([1, 3], dtype=lib.int8) + 2**64,
    "uint8 add_ 300": lambda lib: lib.zeros(2, dtype=lib.uint8).add_(300),
    "uint8 < -3": lambda lib: lib.tensor([0, 200], dtype=lib.uint8) < -3,
    "uint8 == 300": lambda lib: lib.tensor([44, 200], dtype=lib.uint8) == 300,
    "int8 & 300": lambda lib: lib.tensor([44, -1], dtype=lib.int8) & 300,
    "int8 // 300": lambda lib: lib.tensor([44, -1], dtype=lib.int8) // 300,
    "int8 % 300": lambda lib: lib.tensor([44, -1], dtype=lib.int8) % 300,
    "int8 / 300 divides by 300": lambda lib: lib.tensor([44, -1], dtype=lib.int8) / 300,
    "300 / uint8": lambda lib: 300 / lib.tensor([2, 3], dtype=lib.uint8),
    "uint8 ** 300 refused": lambda lib: lib.tensor([2, 3], dtype=lib.uint8) ** 300,
    "uint8 ** -3 refused": lambda lib: lib.tensor([2, 3], dtype=lib.uint8) ** -3,
    "300 ** uint8 wraps the base": lambda lib: 300 ** lib.tensor([1, 2], dtype=lib.uint8),
    "int ** negative int tensor": lambda lib: lib.tensor([0, 1, -1, -1, 2]) ** lib.tensor([-2, -2, -3, -2, -1]),
    "int8 ** negative int8 tensor": lambda lib: lib.tensor([2, 2], dtype=lib.int8) ** lib.tensor([-1, 0], dtype=lib.int8),
    "full 1e5 float16": lambda lib: lib.full((2,), 1e5, dtype=lib.float16),
    "full 1e39 bfloat16": lambda lib: lib.full((2,), 1e39, dtype=lib.bfloat16),
    "linspace to 300 uint8": lambda lib: lib.linspace(0, 300, 4, dtype=lib.uint8),
    "linspace from 255.9 uint8": lambda lib: lib.linspace(255.9, 0, 3, dtype=lib.uint8),
    "linspace int64": lambda lib: lib.linspace(0, 10, 4, dtype=lib.int64),
    "arange float bounds int64": lambda lib: lib.arange(0.5, 3.7, 1.5, dtype=lib.int64),
    "arange step 0.5 int64": lambda lib: lib.arange(0, 2, 0.5, dtype=lib.int64),
    "logspace": lambda lib: lib.logspace(-1, 2, 4, base=2.0, dtype=lib.float64),
    "logspace int64": lambda lib: lib.logspace(0, 3, 4, dtype=lib.int64),
    "logspace steps -1": lambda lib: lib.logspace(0, 3, -1),
    "logspace steps 2.5": lambda lib: lib.logspace(0, 3, 2.5),
    "linspace steps -1": lambda lib: lib.linspace(0, 3, -1),
    "tensor of 0-d float32 and int64": lambda lib: lib.tensor([lib.tensor(1.5), lib.tensor(2)]),
    "tensor of 0-d float64 and int64": lambda lib: lib.tensor([lib.tensor(1.5, dtype=lib.float64), lib.tensor(2)]),
    "tensor of 0-d int8": lambda lib: lib.tensor([lib.tensor(1, dtype=lib.int8), lib.tensor(-2, dtype=lib.int8)]),
    "tensor of 0-d bfloat16 and bool": lambda lib: lib.tensor([lib.tensor(1.1, dtype=lib.bfloat16), lib.tensor(True)]),
    "uint8 index is a mask": lambda lib: lib.arange(3)[lib.tensor([1, 0, 1], dtype=lib.uint8)],
}

RANDOM_CASES = {
    "randint to 300 uint8": lambda lib: lib.randint(0, 300, (3,), dtype=lib.uint8),
    "randint from -1 uint8": lambda lib: lib.randint(-1, 5, (3,), dtype=lib.uint8),
    "randint to 256 uint8": lambda lib: lib.randint(0, 256, (3,), dtype=lib.uint8),
    "randint from -200 int8": lambda lib: lib.randint(-200, 0, (3,), dtype=lib.int8),
    "randint to 3 bool": lambda lib: lib.randint(0, 3, (3,), dtype=lib.bool),
    "randint to 2**63": lambda lib: lib.randint(0, 2**63, (3,)),
    "randint float32": lambda lib: lib.randint(0, 5, (3,), dtype=lib.float32),
    "rand int64": lambda lib: lib.rand(2, dtype=lib.int64),
    "randn int32": lambda lib: lib.randn(2, dtype=lib.int32),
    "randn bfloat16": lambda lib: lib.randn(2, dtype=lib.bfloat16),
}


@pytest.mark.parametrize("case", sorted(RANDOM_CASES))
def test_random_factories_refuse_what_torch_refuses(case):
    expected_kind, expected = _outcome(RANDOM_CASES[case], torch)
    kind, got = _outcome(RANDOM_CASES[case], numdiff)
    assert kind == expected_kind, f"{case}: torch gives {expected!r}, numdiff {got!r}"
    if kind == "ok":
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # uint8 indices: both warn that they are deprecated
            return "ok", fn(lib)
    except (RuntimeError, ValueError, TypeError, OverflowError) as error:
        return "error", error


@pytest.mark.parametrize("case", sorted(CREATION_CASES))
def test_out_of_range_numbers_are_refused_or_wrapped_like_torch(case):
    fn = CREATION_CASES[case]
    expected_kind, expected = _outcome(fn, torch)
    kind, got = _outcome(fn, numdiff)
    assert kind == expected_kind, f"{case}: torch gives {expected!r}, numdiff {got!r}"
    if kind == "ok":
        assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got.float().numpy() if got.dtype is numdiff.bfloat16 else got.numpy(),
                                      expected.float().numpy() if expected.dtype == torch.bfloat16 else expected.numpy())


def test_overflow_errors_name_the_op_the_value_and_the_dtype():
    with pytest.raises(ScalarOverflowError, match=r"fill_: value 300 cannot be converted to type uint8"):
        numdiff.zeros(2, dtype=numdiff.uint8).fill_(300)
    with pytest.raises(ScalarOverflowError, match=r"tensor: the Python int 9223372036854775808 does not fit int64"):
        numdiff.tensor([1, 2**63])
    with pytest.raises(ScalarOverflowError, match=r"masked_fill: value 300"):
        numdiff.zeros(2, dtype=numdiff.uint8).masked_fill(numdiff.tensor([True, False]), 300)
    with pytest.raises(RuntimeError):  # PyTorch raises RuntimeError for a checked conversion...
        numdiff.tensor([300], dtype=numdiff.uint8)
    with pytest.raises(ValueError):  # ... and ValueError for an int beyond int64: both are caught
        numdiff.tensor(2**63)
