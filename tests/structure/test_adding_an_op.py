"""The architecture's "how to add" goals, shown by doing it: a copy of numdiff with one new
ScalarRule row (an elementwise op with its Tensor method and in-place form), and one more row plus a
Module class (an activation with its module), imported in a fresh process that checks everything
the goals promise came from those edits alone.

A new elementwise op: one row (numdiff/_ground/scalar_rules.py). A new activation with its module:
two files (that row with ``functional="inplace"``, and the class in numdiff/nn/modules/activation.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numdiff

PACKAGE = Path(numdiff.__file__).resolve().parent

CUBE_ROW = '''    ScalarRule(
        "cube", 1, "x * x * x", ("3.0 * x * x",), dtypes="float", doc="x cubed.",
    ),
'''
SOFTSIGN2_ROW = '''    ScalarRule(
        "softsign2", 1, "x / (1.0 + x * x)", ("(1.0 - x * x) / ((1.0 + x * x) * (1.0 + x * x))",),
        dtypes="float", export=False, method=False, functional="inplace", doc="x / (1 + x^2).",
    ),
'''
SOFTSIGN2_MODULE = '''

class Softsign2(_Elementwise):
    """x / (1 + x^2)."""

    _function, _arguments = "softsign2", (("inplace", False),)
'''

CHECKS = '''
import warnings

import numpy as np

import numdiff
from numdiff import func, nn
from numdiff.autograd import gradcheck, gradgradcheck
from numdiff.ops.registry import spec

assert numdiff.__file__.startswith(COPY), numdiff.__file__
values = np.array([-1.5, -0.25, 0.5, 2.0])
x = numdiff.tensor(values, requires_grad=True)

# The elementwise op: the function, numdiff.<name>, the method and its in-place form.
np.testing.assert_allclose(numdiff.cube(x).detach().numpy(), values**3)
np.testing.assert_allclose(x.cube().detach().numpy(), values**3)
y = numdiff.tensor(values)
assert y.cube_() is y
np.testing.assert_allclose(y.numpy(), values**3)
assert gradcheck(numdiff.cube, (x,)) and gradgradcheck(numdiff.cube, (x,))
# Its spec: compile's fused loop, the vmap rule and the forward-mode rule.
cube = spec("cube")
assert cube.compile == "fused" and cube.batching is not None and cube.jvp is not None
with warnings.catch_warnings():
    warnings.simplefilter("error")  # no vmap loop warning
    batched = func.vmap(numdiff.cube)(numdiff.tensor(np.stack([values, -values])))
np.testing.assert_allclose(batched.numpy(), np.stack([values, -values]) ** 3)
tangent = numdiff.tensor(np.ones(4))
np.testing.assert_allclose(func.jvp(numdiff.cube, (x.detach(),), (tangent,))[1].numpy(), 3 * values**2)
compiled = numdiff.compile(lambda v: numdiff.cube(v) + 1.0)
np.testing.assert_allclose(compiled(x.detach()).numpy(), values**3 + 1.0)

# The activation: nn.functional.<name> with PyTorch's signature, and its module, exported.
expected = values / (1 + values**2)
np.testing.assert_allclose(nn.functional.softsign2(x).detach().numpy(), expected)
z = numdiff.tensor(values)
assert nn.functional.softsign2(z, inplace=True) is z
np.testing.assert_allclose(z.numpy(), expected)
assert gradcheck(nn.functional.softsign2, (x,))
assert "Softsign2" in nn.__all__ and "Softsign2" in nn.modules.__all__
np.testing.assert_allclose(nn.Softsign2()(x).detach().numpy(), expected)
w = numdiff.tensor(values)
nn.Softsign2(inplace=True)(w)
np.testing.assert_allclose(w.numpy(), expected)
print("added", flush=True)
'''


def _insert_rows(path: Path, rows: str) -> None:
    source = path.read_text()
    end = "\n)  # fmt: skip\n\n# The activations' backwards"
    assert source.count(end) == 1, "the rule table's end moved: update this test"
    path.write_text(source.replace(end, "\n" + rows.rstrip("\n") + end))


def test_an_elementwise_op_is_one_row_and_an_activation_with_its_module_two_files(tmp_path):
    copy = tmp_path / "numdiff"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    _insert_rows(copy / "_ground" / "scalar_rules.py", CUBE_ROW + SOFTSIGN2_ROW)
    with open(copy / "nn" / "modules" / "activation.py", "a") as module:
        module.write(SOFTSIGN2_MODULE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}
    result = subprocess.run(
        [sys.executable, "-c", f"COPY = {str(copy)!r}\n{CHECKS}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("added")
