"""torch.hub's file side: download a file (checking its SHA-256 prefix), and load a checkpoint
from a URL into the hub cache (``$TORCH_HOME/hub/checkpoints``, or ``~/.cache/torch``), so
``load_state_dict_from_url`` reads PyTorch's published weights (numdiff.load reads torch's zip
format without torch). Loading code from a GitHub repository (`load`, `list`, `help`) needs the
repository's PyTorch code and is refused on use, naming the file-level calls that work.

>>> import numdiff
>>> numdiff.hub.get_dir().endswith("hub")
True
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
from typing import Any

from numdiff.serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_hub_dir: str | None = None
# PyTorch's convention: a file named name-<sha256 prefix>.ext carries its own check.
_HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")


def __dir__() -> list[str]:
    return sorted(__all__)


def get_dir() -> str:
    """The hub cache folder: set_dir's, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use `d` as the hub cache folder from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str | os.PathLike, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download `url` to `dst` (through a temporary file, so `dst` is never half written); with
    `hash_prefix`, the file's SHA-256 must start with it or a RuntimeError names both."""
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    sha256 = hashlib.sha256()
    with tempfile.NamedTemporaryFile(delete=False, dir=folder, suffix=".partial") as tmp:
        try:
            with urllib.request.urlopen(url) as response:  # noqa: S310 - the caller names the URL
                total = response.headers.get("Content-Length")
                done = 0
                while chunk := response.read(1 << 16):
                    tmp.write(chunk)
                    sha256.update(chunk)
                    done += len(chunk)
                    if progress:
                        sys.stderr.write(f"\rdownloading {url}: {done}" + (f" of {total} bytes" if total else " bytes"))
            if progress:
                sys.stderr.write("\n")
            tmp.close()
            digest = sha256.hexdigest()
            if hash_prefix is not None and not digest.startswith(hash_prefix):
                raise RuntimeError(f'download_url_to_file: invalid hash value (expected "{hash_prefix}", '
                                   f'got "{digest}") for {url}')
            shutil.move(tmp.name, dst)
        finally:
            if os.path.exists(tmp.name):
                os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> Any:
    """Download `url` into the hub's checkpoints folder unless it is there already, then load it
    with ``numdiff.load`` (a PyTorch checkpoint loads without torch)."""
    folder = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(folder, exist_ok=True)
    name = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(folder, name)
    if not os.path.exists(cached):
        match = _HASH_IN_NAME.search(name) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _refuse(op: str) -> Any:
    raise NotImplementedError(
        f"numdiff.hub.{op}: loading models from a GitHub repository runs that repository's hubconf.py, "
        "which is written for PyTorch; numdiff.hub downloads files (download_url_to_file) and checkpoints "
        "(load_state_dict_from_url) instead: build the model in your code and load its state_dict"
    )


def load(repo_or_dir: str, model: str, *args: Any, **kwargs: Any) -> Any:
    """Refused: needs the repository's PyTorch code (see the message for what works)."""
    return _refuse("load")


def list(github: str, force_reload: bool = False, **kwargs: Any) -> Any:  # noqa: A001 - PyTorch's name
    """Refused: needs the repository's PyTorch code (see the message for what works)."""
    return _refuse("list")


def help(github: str, model: str, force_reload: bool = False, **kwargs: Any) -> Any:  # noqa: A001
    """Refused: needs the repository's PyTorch code (see the message for what works)."""
    return _refuse("help")
