"""torch.distributed's backend names, carried by numdiff's one transport, MPI.

PyTorch programs name the library that moves their tensors: "gloo" on CPUs, "nccl" on CUDA
GPUs, or a per-device map such as "cpu:gloo,cuda:nccl". numdiff has one transport, MPI, that
serves both its devices, so each of those names is accepted and means MPI; the name the program
gave is what `get_backend()` returns, as in PyTorch. Names of transports whose semantics numdiff
does not provide (UCC, XCCL, the fake test backend) are refused with the list of accepted ones.
"""

from __future__ import annotations

from typing import Any

# Each accepted name, and the device it serves in PyTorch (None: every device).
_SERVES = {"mpi": None, "gloo": "cpu", "nccl": "cuda"}
_DEVICE_DEFAULT = {"cpu": "gloo", "cuda": "nccl"}


class Backend(str):
    """A backend name, lower-cased, with PyTorch's constants (`Backend.GLOO`, `Backend.NCCL`).

    >>> import numdiff.distributed as dist
    >>> dist.Backend("GLOO") == dist.Backend.GLOO == "gloo"
    True
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"
    XCCL = "xccl"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise TypeError(f"Backend: the name must be a string, got {type(name).__name__} {name!r}")
        return str.__new__(cls, name.lower())


def resolve_backend(op: str, backend: Any) -> str:
    """The backend name to record for `backend` (None means "mpi"), or a ValueError naming the
    accepted names. A device map ("cpu:gloo,cuda:nccl") is checked entry by entry."""
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise TypeError(f"{op}: backend must be a string such as 'gloo', got {type(backend).__name__}")
    name = backend.lower()
    for entry in name.split(","):
        device, _, transport = entry.rpartition(":")
        if transport not in _SERVES or (device and device not in _DEVICE_DEFAULT):
            raise ValueError(
                f"{op}: backend {backend!r} is not available in numdiff; it accepts "
                f"{', '.join(repr(n) for n in _SERVES)} or a device map such as 'cpu:gloo,cuda:nccl', "
                "all carried by MPI (start the job with mpiexec or `python -m numdiff.distributed.run`)"
            )
    return name


def get_default_backend_for_device(device: Any) -> str:
    """PyTorch's default backend name for a device: "gloo" for the CPU, "nccl" for CUDA.

    >>> import numdiff.distributed as dist
    >>> dist.get_default_backend_for_device("cuda:1")
    'nccl'
    """
    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind not in _DEVICE_DEFAULT:
        raise ValueError(
            f"get_default_backend_for_device: no backend for device {device!r}; numdiff's devices "
            f"are {', '.join(repr(d) for d in _DEVICE_DEFAULT)}"
        )
    return _DEVICE_DEFAULT[kind]
