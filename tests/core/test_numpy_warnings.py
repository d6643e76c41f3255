"""numdiff computes inf and NaN as PyTorch does, silently: NumPy's floating-point RuntimeWarnings
from numdiff's own ufunc calls do not reach the user, while the user's own NumPy calls keep theirs.

Each case runs in a fresh interpreter with `-W always`, so pytest's own warning filters play no part.
"""

import subprocess
import sys

import pytest

SILENT = {
    "log of zero and of a negative": "numdiff.log(numdiff.tensor([0.0, -1.0]))",
    "division by zero": "numdiff.tensor([1.0, 0.0, -1.0]) / 0",
    "0 / 0 of tensors": "numdiff.tensor([0.0]) / numdiff.tensor([0.0])",
    "softmax over an all -inf row": "numdiff.softmax(numdiff.full((2, 3), float('-inf')), 1)",
    "logsumexp over -inf": "numdiff.logsumexp(numdiff.full((3,), float('-inf')), 0)",
    "sqrt of a negative": "numdiff.sqrt(numdiff.tensor([-1.0]))",
    "gradient of log at zero": (
        "x = numdiff.tensor([0.0, 1.0], requires_grad=True); numdiff.log(x).sum().backward(); x.grad"
    ),
    "masked softmax row": (
        "s = numdiff.zeros(2, 4, requires_grad=True); m = numdiff.tensor([[True] * 4, [True, False] * 2]); "
        "numdiff.softmax(s.masked_fill(m, float('-inf')), 1).sum().backward()"
    ),
}


def _stderr_of(code: str) -> str:
    run = subprocess.run([sys.executable, "-W", "always", "-c", f"import numdiff\n{code}"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stderr


@pytest.mark.parametrize("code", SILENT.values(), ids=SILENT.keys())
def test_numdiff_ops_raise_no_numpy_float_warnings(code: str) -> None:
    assert "RuntimeWarning" not in _stderr_of(code)


def test_the_users_own_numpy_calls_keep_their_warnings() -> None:
    stderr = _stderr_of("import numpy\nnumdiff.log(numdiff.tensor([0.0]))\nnumpy.log(numpy.zeros(1))")
    assert stderr.count("RuntimeWarning: divide by zero encountered in log") == 1


def test_numdiffs_own_runtime_warnings_still_reach_the_user() -> None:
    # Only NumPy's floating-point messages are filtered: a RuntimeWarning numdiff raises on purpose is not.
    code = ("import warnings\nwarnings.warn_explicit('kl: two registrations match', RuntimeWarning, 'kl.py', 1, "
            "module='numdiff.distributions.kl')")
    assert "kl: two registrations match" in _stderr_of(code)
