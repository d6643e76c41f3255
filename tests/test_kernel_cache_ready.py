"""A cached kernel says whether a call would run without compiling (CachedDispatcher.ready_for):
numdiff.compile times alternative convolution cores only when so. Checked on a throwaway kernel in
a temporary NUMBA_CACHE_DIR: nothing before its first call, in memory after it, from the disk cache
in a second process, and never for argument types it was not built for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_KERNEL = "from numdiff.kernels._self_healing_cache import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2.0 * x\n"

_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from readypkg import kernel

    x = np.ones(3)
    report = {"before": kernel.twice.ready_for(x), "int32 rows": kernel.twice.ready_for(np.ones(3, np.int32))}
    if sys.argv[1] == "call":
        kernel.twice(x)
        report["after"] = kernel.twice.ready_for(x)
    print(json.dumps(report))
    """
)


def _probe(tmp_path, action: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path / "src"), *sys.path]))  # fmt: skip
    result = subprocess.run([sys.executable, "-c", _PROBE, action], env=env, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_ready_for_is_false_until_built_then_true_in_memory_and_from_the_disk_cache(tmp_path):
    package = tmp_path / "src" / "readypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text(_KERNEL)
    assert _probe(tmp_path, "call") == {"before": False, "int32 rows": False, "after": True}
    assert _probe(tmp_path, "look") == {"before": True, "int32 rows": False}
