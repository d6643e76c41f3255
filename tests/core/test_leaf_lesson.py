"""Acceptance: the leaf-tensor lesson's programs, run with ``import numdiff as torch``, print what
the lesson says PyTorch prints (/work/shared/seeds/pytorch-leaf-tensors-lesson.txt)."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

LEAVES_PY = """\
import numdiff as torch

w = torch.tensor([1., 2., 3.], requires_grad=True)   # a leaf: you made it
data = torch.tensor([10., 10., 10.])                 # a leaf too, no grad wanted
h = w * 2                                            # made BY an operation: not a leaf
loss = (h * data).sum()

print(w.is_leaf, data.is_leaf, h.is_leaf)
print(w.requires_grad, data.requires_grad, h.requires_grad)

loss.backward()
print(w.grad)      # populated: leaf with requires_grad=True
print(h.grad)      # None: non-leaf grads are used, then thrown away
"""

RETAIN_PY = """\
import numdiff as torch

w = torch.tensor([1., 2., 3.], requires_grad=True)
h = w * 2
h.retain_grad()                 # ask autograd to keep this one
(h * 10).sum().backward()
print(h.grad)
"""

NON_LEAF_SWITCH_PY = """\
import numdiff as torch

w = torch.tensor([1., 2., 3.], requires_grad=True)
h = w * 2
h.requires_grad_(False)
"""


def _run(source: str) -> tuple[str, list[warnings.WarningMessage]]:
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        exec(compile(source, "<lesson>", "exec"), {"__name__": "__lesson__"})
    return out.getvalue(), caught


def test_leaves_program_prints_the_lessons_output():
    printed, _ = _run(LEAVES_PY)
    assert printed.splitlines() == [
        "True True False",
        "True False True",
        "tensor([20., 20., 20.])",
        "None",
    ]


def test_leaves_program_warns_once_when_reading_the_non_leaf_grad():
    _, caught = _run(LEAVES_PY)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1
    assert "not a leaf Tensor is being accessed" in messages[0]
    assert "retain_grad()" in messages[0]
    # The warning points at the user's line (print(h.grad)), not at numdiff's internals.
    (warning,) = [w for w in caught if issubclass(w.category, UserWarning)]
    assert warning.filename == "<lesson>"
    assert (
        warning.lineno
        == LEAVES_PY.splitlines().index(
            "print(h.grad)      # None: non-leaf grads are used, then thrown away"
        )
        + 1
    )


def test_retain_program_prints_the_intermediate_gradient():
    printed, caught = _run(RETAIN_PY)
    assert printed == "tensor([10., 10., 10.])\n"
    assert not [w for w in caught if issubclass(w.category, UserWarning)]


def test_switching_requires_grad_off_on_a_non_leaf_raises_and_teaches():
    with pytest.raises(RuntimeError) as info:
        _run(NON_LEAF_SWITCH_PY)
    message = str(info.value)
    assert "non-leaf" in message
    assert "MulBackward" in message
    assert "detach()" in message
