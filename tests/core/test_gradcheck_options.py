"""gradcheck / gradgradcheck keyword arguments, with the verdict of torch.autograd's on the same
custom Functions: a correct one passes every check, each broken one fails the check aimed at it."""

from __future__ import annotations

import pytest

import numdiff

torch = pytest.importorskip("torch")


def _function(lib, kind):
    class CheckedCube(lib.autograd.Function):
        calls = [0]

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x * x

        @staticmethod
        def jvp(ctx, tangent):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tangent

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            result = grad * 3 * x * x
            if kind == "wrong":
                result = result * 1.5
            elif kind == "nondeterministic":
                CheckedCube.calls[0] += 1
                result = result + 1e-3 * CheckedCube.calls[0] * grad
            elif kind == "undefined":  # a zero (undefined) gradient gives a nonzero one
                if float(grad.abs().sum()) == 0:
                    result = result + 1.0
            elif kind == "dtype":
                result = result.float()
            return result

    return CheckedCube


def _x(lib):
    return lib.tensor([0.3, -0.8, 1.1], dtype=lib.float64, requires_grad=True)


def _verdict(lib, kind, **options):
    cube = _function(lib, kind)
    return lib.autograd.gradcheck(cube.apply, (_x(lib),), raise_exception=False, **options)


CASES = [
    ("correct", {}, True),
    ("correct", {"fast_mode": True}, True),
    ("wrong", {}, False),
    ("wrong", {"fast_mode": True}, False),
    ("nondeterministic", {"atol": 1e-2}, False),
    ("nondeterministic", {"atol": 1e-2, "nondet_tol": 1e-1}, True),
    ("undefined", {}, False),
    ("undefined", {"check_undefined_grad": False}, False),  # zero in, zero out: checked always
    # Both engines cast a Function's gradient to its input's dtype, so the dtype check holds.
    ("dtype", {"atol": 1e-4, "check_grad_dtypes": True}, True),
    ("correct", {"check_batched_grad": True}, True),
    ("correct", {"check_backward_ad": False, "check_forward_ad": True}, True),
    ("correct", {"check_backward_ad": False, "check_forward_ad": True, "check_batched_forward_grad": True}, True),
]


@pytest.mark.parametrize("kind, options, expected", CASES, ids=[f"{k}-{'-'.join(o) or 'default'}" for k, o, _ in CASES])
def test_gradcheck_option_gives_torchs_verdict(kind, options, expected):
    assert _verdict(torch, kind, **options) is expected
    assert _verdict(numdiff, kind, **options) is expected


def test_zero_gradient_check_catches_a_backward_that_is_not_linear_in_its_gradient():
    with pytest.raises(numdiff.autograd.GradcheckError, match="not multiplied by its output gradient"):
        numdiff.autograd.gradcheck(_function(numdiff, "undefined").apply, (_x(numdiff),))


def _two_outputs(lib, handles_none):
    class SinCos(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            (x,) = ctx.saved_tensors
            if handles_none:
                gs = 0 if gs is None else gs
                gc = 0 if gc is None else gc
            return gs * x.cos() - gc * x.sin()

    return SinCos


@pytest.mark.parametrize("handles_none", [True, False])
def test_undefined_grad_check_runs_a_backward_with_an_output_gradient_missing(handles_none):
    function = _two_outputs(numdiff, handles_none)
    assert numdiff.autograd.gradcheck(function.apply, (_x(numdiff),), raise_exception=False) is handles_none
    if handles_none:
        assert torch.autograd.gradcheck(_two_outputs(torch, True).apply, (_x(torch),))
    else:
        with pytest.raises(TypeError):  # torch lets the backward's own error through
            torch.autograd.gradcheck(_two_outputs(torch, False).apply, (_x(torch),))
        with pytest.raises(numdiff.autograd.GradcheckError, match="backward failed when output 0 had no gradient"):
            numdiff.autograd.gradcheck(function.apply, (_x(numdiff),))
        assert numdiff.autograd.gradcheck(function.apply, (_x(numdiff),), check_undefined_grad=False)
