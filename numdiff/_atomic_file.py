"""Replacing a file atomically: through symlinks, and cleaning up after writers that were killed.

`replace_file` writes a temporary file next to the target, fsyncs it and renames it over the
target, so a reader sees the old file or the new one, never half of one. A path that is a
symlink is resolved first and its target replaced, as ``open(path, "w")`` would write through
the link (replacing the link itself would leave the target stale).

A writer killed mid-save cannot remove its temporary file. Each writer holds an exclusive
``flock`` on its temporary until the rename, and a later save of the same target removes the
temporaries that are provably abandoned: named the way this module names them for that target,
not locked by any process (a lock dies with its process), and untouched for
`STALE_AFTER_SECONDS` (covering the moment between creating a temporary and locking it).
Concurrent saves of one target therefore never remove each other's files.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from collections.abc import Callable
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows: no flock, and no renaming of open files
    fcntl = None

STALE_AFTER_SECONDS = 60.0
_TEMP_SUFFIX = ".tmp"


def replace_file(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(handle)`` on a temporary file and atomically replace `path` (or, when `path`
    is a symlink, the file it points to) with it; on any failure the old file stays as it was.

    >>> replace_file("ckpt.pt", lambda handle: handle.write(b"data"))
    """
    target = os.path.realpath(path)
    directory, name = os.path.split(target)
    remove_stale_temporaries(directory, name)
    mode = _file_mode(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=_TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            locked = _try_lock(fd)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
            os.chmod(temporary, mode)
            if locked:  # rename while still holding the lock, so no cleaner sees it unlocked
                os.replace(temporary, target)
        if not locked:
            os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)


def remove_stale_temporaries(directory: str, name: str) -> list[str]:
    """Remove the temporaries that killed `replace_file` calls left for `directory/name`, and
    return their paths. Files another process still writes (locked) or that changed within
    `STALE_AFTER_SECONDS` are kept, as is everything not named like our temporaries.

    >>> remove_stale_temporaries("/tmp", "ckpt.pt")
    []
    """
    if fcntl is None:
        return []
    # tempfile.mkstemp names: prefix, 8 characters of [a-z0-9_], suffix
    pattern = re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}{re.escape(_TEMP_SUFFIX)}")
    try:
        candidates = [entry for entry in os.listdir(directory) if pattern.fullmatch(entry)]
    except OSError:
        return []
    removed = []
    for entry in candidates:
        path = os.path.join(directory, entry)
        if _remove_if_abandoned(path):
            removed.append(path)
    return removed


def _remove_if_abandoned(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:  # gone already, a symlink, or not ours to open
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < STALE_AFTER_SECONDS:
            return False
        if not _try_lock(fd):
            return False  # a live writer holds it
        if os.lstat(path).st_ino != info.st_ino:
            return False
        os.unlink(path)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _file_mode(path: str) -> int:
    """Keep an existing file's permissions; a new one gets the usual 0o666 minus umask."""
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_directory(directory: str) -> None:
    """Persist the rename itself (POSIX); platforms that cannot open directories skip this."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
