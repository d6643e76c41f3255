"""numdiff against torch 2.13 at the inputs a careless implementation gets wrong (tests/ops/
differential.py and differential_layers.py list them), and each defect that comparison found,
pinned with its own numbers so that it runs without torch too. tools/torch_differential.py runs
the same families and prints every difference."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck
from tests.ops.differential import DECISIONS, FAMILIES, compare, permitted
from tests.ops.differential_layers import LAYER_FAMILIES
from tests.ops.differential_random import random_cases

ALL_FAMILIES = {**FAMILIES, **LAYER_FAMILIES}

nan = float("nan")


@pytest.mark.parametrize("family", sorted(ALL_FAMILIES))
def test_numdiff_agrees_with_torch_over_the_family(family):
    torch = pytest.importorskip("torch")
    differences = []
    for name, case in ALL_FAMILIES[family]():
        difference = compare(case, torch, numdiff)
        if difference and not permitted(name, difference):
            differences.append(f"{name}: {difference}")
    assert not differences, f"{len(differences)} differ from torch:\n" + "\n".join(differences[:20])


def test_numdiff_agrees_with_torch_on_drawn_cases():
    torch = pytest.importorskip("torch")
    differences = []
    for name, case in random_cases(seed=26, count=2500):
        difference = compare(case, torch, numdiff)
        if difference and not permitted(name, difference):
            differences.append(f"{name}: {difference}")
    assert not differences, f"{len(differences)} differ from torch:\n" + "\n".join(differences[:20])


def test_each_decision_names_a_case_that_exists():
    names = {name for family in ALL_FAMILIES.values() for name, _ in family()}
    assert set(DECISIONS) <= names


def test_the_comparison_catches_a_wrong_value_dtype_and_a_missing_error():
    torch = pytest.importorskip("torch")
    assert compare(lambda lib: lib.tensor([1.0]) + (0.5 if lib is numdiff else 0.0), torch, numdiff)
    assert compare(lambda lib: lib.tensor([1]).to(lib.int32 if lib is numdiff else lib.int64), torch, numdiff)
    assert compare(lambda lib: lib.tensor([nan]) if lib is numdiff else lib.tensor([0.0]), torch, numdiff)
    assert compare(lambda lib: lib.ones(2) + (lib.ones(3) if lib is torch else lib.ones(2)), torch, numdiff)
    assert compare(lambda lib: lib.ones(2) + lib.ones(3), torch, numdiff) is None  # both raise


# The defects the differential comparison found, each pinned with its own numbers.


def test_sign_of_nan_is_zero_in_every_float_dtype_and_layout():
    for dtype in (numdiff.float16, numdiff.bfloat16, numdiff.float32, numdiff.float64):
        x = numdiff.tensor([nan, -0.0, -2.0, 3.0]).to(dtype)
        assert numdiff.sign(x).float().tolist() == [0.0, 0.0, -1.0, 1.0]
        assert x.sgn().float().tolist() == [0.0, 0.0, -1.0, 1.0]
    assert numdiff.sign(numdiff.full((70000,), nan)).sum().item() == 0.0  # the threaded ufunc path
    assert numdiff.sign(numdiff.tensor(nan)).item() == 0.0
    assert numdiff.tensor([nan, -4.0]).sign_().tolist() == [0.0, -1.0]
    assert numdiff.compile(lambda x: numdiff.sign(x) + 1)(numdiff.tensor([nan, -1.0])).tolist() == [1.0, 0.0]


def test_xlogy_takes_a_python_number_as_a_float_not_wrapped_into_the_integer_dtype():
    out = numdiff.xlogy(numdiff.tensor([0, 1, 2], dtype=numdiff.uint8), -3)
    assert out.dtype is numdiff.float32
    assert out[0].item() == 0.0 and math.isnan(out[1].item()) and math.isnan(out[2].item())  # log(-3), not log(253)
    assert numdiff.xlogy(numdiff.tensor([2], dtype=numdiff.int8), 300).item() == pytest.approx(2 * math.log(300))


def test_copysign_computes_in_the_promoted_dtype():
    big = 2**53 + 2  # exact in float64, not in float32
    out = numdiff.copysign(numdiff.tensor([big, 3]), numdiff.tensor([-1.0, 2.0], dtype=numdiff.float64))
    assert out.dtype is numdiff.float64 and out.tolist() == [-float(big), 3.0]
    assert numdiff.copysign(numdiff.tensor([True, False]), numdiff.tensor([1.0, -1.0], dtype=numdiff.float16)).dtype is numdiff.float16
    assert numdiff.copysign(numdiff.tensor([True, False]), -2).tolist() == [-1.0, -0.0]  # a number's sign
    assert numdiff.copysign(numdiff.tensor([1, 2], dtype=numdiff.uint8), -0.0).tolist() == [-1.0, -2.0]


def test_ldexp_keeps_the_promoted_dtype_and_rounds_the_power_in_the_exponents_dtype():
    assert numdiff.ldexp(numdiff.tensor([1.5], dtype=numdiff.float16), numdiff.tensor([3], dtype=numdiff.int8)).dtype is numdiff.float16
    # 2 ** 0.5 rounded to float16 (1.4141), then times 3 in float32, as torch: 4.2421875, not 4.2426405
    out = numdiff.ldexp(numdiff.tensor([3.0]), numdiff.tensor([0.5], dtype=numdiff.float16))
    assert out.dtype is numdiff.float32 and out.item() == 4.2421875
    with pytest.raises(NotImplementedError, match="ldexp: a bool exponent"):
        numdiff.ldexp(numdiff.tensor([1.0]), numdiff.tensor([True]))


def test_copysign_and_ldexp_gradients_check_in_float64():
    x = numdiff.tensor([-1.5, 0.5, 2.0], dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda t: numdiff.copysign(t, numdiff.tensor([1.0, -1.0, -0.0], dtype=numdiff.float64)), (x,))
    assert gradcheck(lambda t: numdiff.ldexp(t, numdiff.tensor([1, -1, 3])), (x,))


def test_a_zero_slice_of_renorm_passes_its_gradient_unchanged():
    x = numdiff.tensor([[0.0, 0.0], [3.0, 4.0], [0.1, 0.2]], dtype=numdiff.float64, requires_grad=True)
    numdiff.renorm(x, 2, 0, 1.0).sum().backward()
    assert x.grad[0].tolist() == [1.0, 1.0]  # was NaN: the root of a zero sum of squares
    assert x.grad[2].tolist() == [1.0, 1.0]
    y = numdiff.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda t: numdiff.renorm(t + numdiff.tensor([[0.5, 0.25], [0.0, 0.0]], dtype=numdiff.float64), 0.5, 0, 1.0), (y,))


def test_vector_norm_below_order_one_has_gradient_zero_at_a_zero_element():
    x = numdiff.tensor([[0.0, 4.0], [0.0, 0.0]], dtype=numdiff.float64, requires_grad=True)
    out = numdiff.linalg.vector_norm(x, 0.5, dim=1)
    out.sum().backward()
    assert out.tolist() == [4.0, 0.0]
    assert x.grad.tolist() == [[0.0, 1.0], [0.0, 0.0]]  # d/dx (sum sqrt|x|)^2 at x = (0, 4): (0, 1)
    with pytest.raises(RuntimeError, match="norm: the -1.0 norm of an empty tensor"):
        numdiff.linalg.vector_norm(numdiff.zeros(0, 3), -1, dim=0)


def test_reductions_and_scans_with_an_integer_dtype_wrap_in_it():
    x = numdiff.tensor([100, 100, 127], dtype=numdiff.int16)
    assert x.sum(dtype=numdiff.int8).dtype is numdiff.int8 and x.sum(dtype=numdiff.int8).item() == 71  # 327 - 256
    assert x.reshape(3, 1).sum(0, dtype=numdiff.int8).tolist() == [71]
    assert x.prod(dtype=numdiff.int8).item() == np.prod(np.array([100, 100, 127], np.int8), dtype=np.int8)
    assert x.cumsum(0, dtype=numdiff.int8).tolist() == [100, -56, 71]
    assert x.cumprod(0, dtype=numdiff.int8).tolist() == [100, 16, -16]
    assert x.sum().dtype is numdiff.int64 and x.sum().item() == 327


def test_round_with_decimals_scales_half_precision_in_float32():
    x = numdiff.tensor([1234.5678, 25.0, 2.675], dtype=numdiff.float16)
    assert numdiff.round(x, decimals=2).tolist() == [1235.0, 25.0, 2.6796875]  # was inf: 1234.5 * 100 overflows
    assert numdiff.round(x, decimals=3).tolist()[1] == 25.0  # was 24.98: 25000 rounds in float16
    assert numdiff.round(numdiff.tensor([1.25], dtype=numdiff.bfloat16), decimals=1).dtype is numdiff.bfloat16


def test_index_add_truncates_a_float_alpha_into_an_integer_input():
    out = numdiff.zeros(3, dtype=numdiff.int64).index_add(0, numdiff.tensor([1, 1]), numdiff.ones(2, dtype=numdiff.int64), alpha=2.5)
    assert out.dtype is numdiff.int64 and out.tolist() == [0, 4, 0]


def test_out_takes_a_signed_integer_result_into_an_unsigned_tensor():
    out = numdiff.zeros(2, dtype=numdiff.uint8)
    numdiff.add(numdiff.tensor([1, 2]), 1, out=out)
    assert out.tolist() == [2, 3]
    with pytest.raises(RuntimeError, match="can't be cast"):
        numdiff.add(numdiff.tensor([1.5]), 1, out=numdiff.zeros(1, dtype=numdiff.int32))


def test_cat_skips_one_dimensional_empty_tensors_beside_others():
    grown = numdiff.cat([numdiff.zeros(0, dtype=numdiff.int64), numdiff.ones(2, 3, dtype=numdiff.int32)])
    assert grown.shape == (2, 3) and grown.dtype is numdiff.int64  # still promoted with the empty one
    assert numdiff.cat([numdiff.ones(2, 3), numdiff.zeros(0)], 1).shape == (2, 3)
    with pytest.raises(ValueError, match="cat: sizes of tensors must match"):
        numdiff.cat([numdiff.ones(2), numdiff.ones(2, 3)])


def test_median_of_an_empty_float_tensor_is_nan_and_bool_is_refused():
    assert math.isnan(numdiff.zeros(0).median().item()) and math.isnan(numdiff.zeros(0, 3).nanmedian().item())
    x = numdiff.zeros(0, requires_grad=True)
    x.median().backward()
    assert x.grad.shape == (0,)
    with pytest.raises(IndexError, match="median: cannot take the median of an empty numdiff.int64"):
        numdiff.zeros(0, dtype=numdiff.int64).median()
    with pytest.raises(NotImplementedError, match="median: not implemented for bool"):
        numdiff.tensor([True, False]).median()


def test_nextafter_promotes_float_operands_and_refuses_integers():
    out = numdiff.nextafter(numdiff.tensor([1, 0], dtype=numdiff.int8), numdiff.tensor([2.0, -1.0], dtype=numdiff.float16))
    assert out.dtype is numdiff.float16 and out.tolist() == [np.nextafter(np.float16(1), np.float16(2)), -np.float16(2**-24)]
    with pytest.raises(NotImplementedError, match="nextafter: not implemented for integer"):
        numdiff.nextafter(numdiff.tensor([1]), numdiff.tensor([2]))


def test_integer_operands_go_to_float_from_their_own_dtype():
    small, negative = numdiff.tensor([3], dtype=numdiff.uint8), numdiff.tensor(-4)
    assert (small / negative).tolist() == [-0.75]  # was 3 / 252: the 0-d int64 wrapped into uint8
    assert numdiff.div(small, negative).tolist() == [-0.75]
    assert numdiff.atan2(small, negative).item() == pytest.approx(math.atan2(3, -4), rel=1e-6)
    assert math.isnan(numdiff.xlogy(small, negative).item())


def test_an_empty_integer_division_ignores_a_zero_divisor():
    out = numdiff.floor_divide(numdiff.zeros(3, 0, dtype=numdiff.int32), numdiff.tensor(0, dtype=numdiff.int32))
    assert out.shape == (3, 0)
    with pytest.raises(ZeroDivisionError, match="floor_divide: integer division by zero"):
        numdiff.floor_divide(numdiff.tensor([1]), numdiff.tensor([0]))


def test_negative_order_norm_is_zero_with_a_zero_and_infinite_when_all_are():
    assert numdiff.norm(numdiff.tensor([0.0, 2.0]), -1).item() == 0.0
    assert numdiff.norm(numdiff.tensor([math.inf, math.inf]), -1).item() == math.inf  # was 0
    assert numdiff.norm(numdiff.tensor([1.0, 2.0]), -1).item() == pytest.approx(2 / 3)


def test_half_precision_nanmean_and_sinc_compute_in_float32():
    values = [0.9, 2.1, 1.0, 0.0, 1.99]
    for dtype in (numdiff.float16, numdiff.bfloat16):
        x = numdiff.tensor(values).to(dtype)
        assert numdiff.sinc(x).tolist() == numdiff.sinc(x.float()).to(dtype).tolist()
        assert x.nanmean().item() == x.float().mean().to(dtype).item()


def test_host_functions_of_zero_dimensional_operands_return_tensors():
    out = numdiff.nextafter(numdiff.tensor(1.0), numdiff.tensor(2.0))
    assert out.shape == () and out.item() == np.nextafter(np.float32(1), np.float32(2))
    assert numdiff.gcd(numdiff.tensor(12), numdiff.tensor(18)).item() == 6
