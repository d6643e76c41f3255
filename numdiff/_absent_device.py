"""The functions of an accelerator module numdiff does not have (torch.xpu, torch.mps, torch.mtia):
programs probe them (``torch.xpu.is_available()``), so they answer as PyTorch does on a machine
without the device; seeding and cache calls are no-ops there too; using a device raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _named(name: str, doc: str, function: Callable[..., Any]) -> Callable[..., Any]:
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def absent_device_functions(name: str) -> dict[str, Callable[..., Any]]:
    """The module-level functions of the device `name` (``"xpu"``), by their PyTorch names."""
    device = name.upper()

    def unavailable(what: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                f"numdiff.{name}.{what}: numdiff has no {device} device "
                "(its devices are 'cpu' and 'cuda'); use numdiff.accelerator to find the one there is"
            )

        return _named(what, f"Raises: numdiff has no {device} device.", refuse)

    seeding = "A no-op, as in PyTorch on a machine without the device."
    functions = {
        "is_available": _named("is_available", f"False: numdiff has no {device} device.", lambda: False),
        "is_initialized": _named("is_initialized", f"False: there is no {device} device to initialize.", lambda: False),
        "device_count": _named("device_count", f"0: numdiff has no {device} device.", lambda: 0),
        "empty_cache": _named("empty_cache", f"A no-op: there is no {device} memory to release.", lambda: None),
    }
    for seeder in ("manual_seed", "manual_seed_all", "seed", "seed_all"):
        functions[seeder] = _named(seeder, seeding, lambda *args, **kwargs: None)
    for what in ("current_device", "set_device", "get_device_name", "synchronize"):
        functions[what] = unavailable(what)
    return functions
