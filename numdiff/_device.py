"""Devices: where a tensor's storage lives ("cpu", "cuda:N" through numba-cuda, or "meta": shapes,
dtypes and strides with no storage at all)."""

from __future__ import annotations


class device:  # noqa: N801 - PyTorch's name
    """``numdiff.device("cpu")``, ``numdiff.device("cuda")``, ``numdiff.device("cuda", 1)``,
    ``numdiff.device("meta")``.

    As a context manager it is the default device of the factories inside the block, as PyTorch's:

    >>> with numdiff.device("meta"):
    ...     numdiff.nn.Linear(4, 2).weight.device
    device(type='meta')
    """

    __slots__ = ("type", "index")

    def __init__(self, spec: str | device, index: int | None = None) -> None:
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device must be a string like 'cpu' or 'cuda:0', got {spec!r}")
        kind, _, number = spec.partition(":")
        if kind not in ("cpu", "cuda", "meta"):
            raise ValueError(f"unknown device {spec!r}: numdiff supports 'cpu', 'cuda[:N]' and 'meta'")
        if number:
            if index is not None or not number.isdigit():
                raise ValueError(f"invalid device string {spec!r}")
            index = int(number)
        if kind in ("cpu", "meta") and index not in (None, 0):
            raise ValueError(f"invalid device {spec!r}: the {kind} device has no index")
        if kind == "cuda" and index is None:
            index = 0
        self.type = kind
        self.index = index if kind == "cuda" else None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __enter__(self) -> device:
        _entered.append(get_default_device())
        set_default_device(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        set_default_device(_entered.pop())

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


CPU = device("cpu")
_default_device = [CPU]
_entered: list[device] = []  # the default devices that `with device(...)` blocks replaced, innermost last


def set_default_device(target: str | device | None) -> None:
    """Make factories (tensor, zeros, randn, ...) place new tensors on `target` by default.

    >>> numdiff.set_default_device("cuda"); numdiff.zeros(2).device
    device(type='cuda', index=0)
    """
    _default_device[0] = CPU if target is None else to_device(target)


def get_default_device() -> device:
    """Where factories put tensors when no device is given (the CPU unless set_default_device)."""
    return _default_device[0]


def to_device(value: str | device | None) -> device:
    if value is None:
        return CPU
    return value if isinstance(value, device) else device(value)
