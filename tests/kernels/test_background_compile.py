"""Parallel builds compiled by a helper process (numdiff.kernels._background).

Each case runs in a fresh Python process with an empty Numba cache and two Numba threads, so that
a 2x2 max pooling over 65536 elements picks the parallel build of ``max_pool_2x2_core`` and the
build has to be compiled. The cases check what a call returns and which build compiled where; none
depends on how long anything takes (the wait for the helper has a generous limit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import numdiff
    from numdiff.kernels import _background, pool
    from numdiff.kernels import _max_pool_cores as cores

    mode = sys.argv[1]
    numdiff.set_num_threads(2)
    core = cores.max_pool_2x2_core.parallel
    x = np.random.default_rng(0).standard_normal((2, 8, 64, 64)).astype(np.float32)
    expected = x.reshape(2, 8, 32, 2, 32, 2).max(axis=(3, 5))

    def pool2():
        out = np.empty((2, 8, 32, 32), np.float32)
        indices = np.empty(out.shape, np.int64)
        pool.max_pool2d_forward(x, out, indices, (2, 2), (2, 2))
        return out, indices

    report = {}
    out, indices = pool2()
    report["first_matches"] = bool(np.array_equal(out, expected))
    report["compiled_here_at_first_call"] = len(core.overloads)
    report["states"] = [s for (_, name, _), s in _background.helper_requests().items() if name == core.__name__]
    if mode == "kill":
        _background._state["helper"].process.kill()
    deadline = time.monotonic() + 600
    while any(s == "pending" for s in _background.helper_requests().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    report["final_states"] = list(_background.helper_requests().values())
    out2, indices2 = pool2()
    report["later_matches"] = bool(np.array_equal(out2, out) and np.array_equal(indices2, indices))
    report["compiled_after"] = len(core.overloads)
    print(json.dumps(report))
    """
)


def _run(mode: str, tmp_path: Path, background: str = "1") -> dict:
    env = dict(
        os.environ,
        NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"),
        NUMBA_NUM_THREADS="2",
        NUMDIFF_BACKGROUND_COMPILE=background,
        PYTHONPATH=str(ROOT),
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_serial_twin_answers_while_the_helper_compiles(tmp_path):
    report = _run("wait", tmp_path)
    assert report["first_matches"]
    assert report["compiled_here_at_first_call"] == 0  # the twin ran; nothing compiled here
    assert report["states"] in (["pending"], ["done"])
    assert report["final_states"] == ["done"]
    assert report["later_matches"]
    assert report["compiled_after"] == 1  # loaded from the disk cache the helper wrote


def test_a_helper_that_dies_leaves_the_build_to_this_process(tmp_path):
    report = _run("kill", tmp_path)
    assert report["first_matches"]
    assert report["final_states"] == ["failed"]
    assert report["later_matches"]
    assert report["compiled_after"] == 1  # compiled here after the helper died


def test_switched_off_it_compiles_in_the_foreground(tmp_path):
    report = _run("wait", tmp_path, background="0")
    assert report["first_matches"]
    assert report["compiled_here_at_first_call"] == 1
    assert report["states"] == [] and report["final_states"] == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_forgets_the_parents_pending_requests():
    from numdiff.kernels import _background

    request = ("numdiff.kernels.pool", "_no_such_core", ())
    with _background._lock:
        _background._requests[request] = "pending"
    try:
        pid = os.fork()
        if pid == 0:  # the child: exit status 0 when the request was forgotten
            os._exit(0 if request not in _background._requests and _background._state["helper"] is None else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        with _background._lock:
            _background._requests.pop(request, None)
