"""vector_math_source rewrites a kernel's text once: later calls, and later processes, read the result.

The stored result must be exactly the rewrite, must be ignored when damaged, and must not be found
for another text, another `header`, or a changed rewriter (numdiff upgraded, _vecmath edited).
"""

from __future__ import annotations

import pytest

from numdiff.kernels import _codegen, _kernel_files

_KERNEL = """@njit(cache=True)
def kernel(n0, a0, out):
    for i0 in range(n0):
        out[i0] = math.exp(a0[i0]) + math.sin(a0[i0])
"""


@pytest.fixture
def memo_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(_kernel_files, "_directory", tmp_path)
    monkeypatch.setattr(_codegen, "_rewritten", {})
    return tmp_path / "vector_math"


def _forget_in_memory(monkeypatch) -> None:
    """As a new process would start: nothing in memory, the folder as it is."""
    monkeypatch.setattr(_codegen, "_rewritten", {})


def _no_rewrite(monkeypatch) -> None:
    def fail(source, header=True):
        raise AssertionError("rewritten again instead of read")

    monkeypatch.setattr(_codegen, "rewrite_vector_math", fail)


@pytest.mark.parametrize("header", [True, False])
def test_the_stored_result_is_the_rewrite_and_a_new_process_reads_it(memo_folder, monkeypatch, header):
    expected = _codegen.rewrite_vector_math(_KERNEL, header)
    assert "_vecmath.exp" in expected and "outside_sin_cos" in expected
    assert _codegen.vector_math_source(_KERNEL, header) == expected
    (stored,) = memo_folder.iterdir()
    _forget_in_memory(monkeypatch)
    _no_rewrite(monkeypatch)
    assert _codegen.vector_math_source(_KERNEL, header) == expected
    assert list(memo_folder.iterdir()) == [stored]


def test_another_text_or_header_is_not_served_the_stored_result(memo_folder):
    with_header = _codegen.vector_math_source(_KERNEL, True)
    without = _codegen.vector_math_source(_KERNEL, False)
    other = _codegen.vector_math_source(_KERNEL.replace("math.exp", "math.log"), False)
    assert with_header != without and "_vecmath.log" in other and "_vecmath.exp" not in other
    assert len(list(memo_folder.iterdir())) == 3


@pytest.mark.parametrize("damage", ["truncated", "edited", "empty"])
def test_a_damaged_stored_result_is_rewritten(memo_folder, monkeypatch, damage):
    expected = _codegen.vector_math_source(_KERNEL, False)
    (stored,) = memo_folder.iterdir()
    text = stored.read_text()
    damaged = {"truncated": text[: len(text) // 2], "edited": text.replace("_vecmath.exp", "_vecmath.log"),
               "empty": ""}[damage]
    stored.write_text(damaged)
    _forget_in_memory(monkeypatch)
    assert _codegen.vector_math_source(_KERNEL, False) == expected
    assert stored.read_text() == text  # repaired


def test_a_changed_rewriter_does_not_read_the_old_result(memo_folder, monkeypatch):
    _codegen.vector_math_source(_KERNEL, False)
    (old,) = memo_folder.iterdir()
    old.write_text(old.read_text())  # untouched, still valid
    _forget_in_memory(monkeypatch)
    monkeypatch.setattr(_codegen, "_rewriter_digest", lambda: "another numdiff")
    calls = []
    real = _codegen.rewrite_vector_math
    monkeypatch.setattr(_codegen, "rewrite_vector_math", lambda s, h=True: calls.append(1) or real(s, h))
    _codegen.vector_math_source(_KERNEL, False)
    assert calls == [1] and len(list(memo_folder.iterdir())) == 2


@pytest.mark.parametrize("part", ["_VECMATH_DIGEST", "_SPECIAL_DIGEST"])
def test_the_rewriter_digest_changes_with_the_math_sources(monkeypatch, part):
    before = _codegen._rewriter_digest()
    monkeypatch.setattr(_codegen, part, "0" * 16)
    _codegen._rewriter_digest.cache_clear()
    try:
        assert _codegen._rewriter_digest() != before
    finally:
        monkeypatch.undo()
        _codegen._rewriter_digest.cache_clear()
    assert _codegen._rewriter_digest() == before
