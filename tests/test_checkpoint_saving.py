"""numdiff.save to a path: through symlinks, and cleaning up after saves that were killed."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import numdiff
from numdiff import _atomic_file
from numdiff.serialization import load, save

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _age(path, seconds: float = 2 * _atomic_file.STALE_AFTER_SECONDS) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_saving_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "ckpt-0007.pt"
    link = tmp_path / "latest.pt"
    save({"step": 6}, target)
    link.symlink_to(target)
    save({"step": 7}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert load(target) == {"step": 7} and load(link) == {"step": 7}
    assert sorted(os.listdir(tmp_path / "runs")) == ["ckpt-0007.pt"]  # the temporary sat next to the target


def test_saving_through_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "latest.pt"
    link.symlink_to("made-by-save.pt")
    save(numdiff.ones(2), link)
    assert link.is_symlink() and load(tmp_path / "made-by-save.pt").tolist() == [1.0, 1.0]


_KILLED_SAVER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import numdiff

    real_write_array = np.lib.format.write_array

    def write_then_hang(fp, array, *args, **kwargs):
        real_write_array(fp, array, *args, **kwargs)
        print("writing", flush=True)
        time.sleep(60)

    np.lib.format.write_array = write_then_hang
    numdiff.save({"w": numdiff.zeros(1000)}, sys.argv[1])
    """
)


def _temporaries(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_a_later_save_removes_the_temporary_of_a_killed_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    save({"epoch": 1}, path)
    saver = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SAVER, str(path)], cwd=_ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert saver.stdout.readline().strip() == "writing"
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait()
        saver.stdout.close()
    left = _temporaries(tmp_path)
    assert len(left) == 1 and left[0].startswith(".ckpt.pt.")  # what kill -9 leaves behind
    save({"epoch": 2}, path)
    assert _temporaries(tmp_path) == left  # too recent to be provably abandoned
    _age(tmp_path / left[0])
    save({"epoch": 3}, path)
    assert os.listdir(tmp_path) == ["ckpt.pt"] and load(path) == {"epoch": 3}


def test_only_abandoned_temporaries_of_the_same_target_are_removed(tmp_path):
    path = tmp_path / "ckpt.pt"
    names = {
        "abandoned": ".ckpt.pt.k2j4_x9a.tmp",
        "held by a live save": ".ckpt.pt.live0001.tmp",
        "just created": ".ckpt.pt.fresh001.tmp",
        "another target's": ".other.pt.abcdefgh.tmp",
        "not our pattern": ".ckpt.pt.notes-by-user.tmp",
        "not hidden": "ckpt.pt.abcdefgh.tmp",
    }
    for label, name in names.items():
        (tmp_path / name).write_bytes(b"partial archive")
        if label != "just created":
            _age(tmp_path / name)
    with open(tmp_path / names["held by a live save"], "rb") as live:
        fcntl.flock(live.fileno(), fcntl.LOCK_EX)  # as a concurrent save holds its temporary
        save("new", path)
        assert load(path) == "new"
        kept = set(os.listdir(tmp_path))
    assert names["abandoned"] not in kept
    assert kept == {"ckpt.pt"} | {name for label, name in names.items() if label != "abandoned"}


@pytest.mark.parametrize("kind", ["symlink", "directory"])
def test_entries_named_like_temporaries_that_are_not_files_are_kept(tmp_path, kind):
    entry = tmp_path / ".ckpt.pt.abcdefgh.tmp"
    if kind == "symlink":
        (tmp_path / "precious").write_text("keep me")
        entry.symlink_to(tmp_path / "precious")
        os.utime(entry, (0, 0), follow_symlinks=False)
    else:
        entry.mkdir()
        _age(entry)
    save(1, tmp_path / "ckpt.pt")
    assert entry.exists() and (kind != "symlink" or (tmp_path / "precious").read_text() == "keep me")
