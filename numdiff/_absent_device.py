"""The functions of an accelerator module numdiff does not have (torch.xpu, torch.mps, torch.mtia):
programs probe them (``torch.xpu.is_available()``), so they answer as PyTorch does on a machine
without the device; seeding and cache calls are no-ops there too; using a device raises."""

from __future__ import annotations

from typing import Any


class AbsentDevice:
    """The module-level functions of the device `name`, which numdiff does not have."""

    def __init__(self, name: str) -> None:
        self.name = name

    def is_available(self) -> bool:
        return False

    def is_initialized(self) -> bool:
        return False

    def device_count(self) -> int:
        return 0

    def seeding(self, *args: Any, **kwargs: Any) -> None:
        """Seeding a device that is absent does nothing, as in PyTorch (the seed is kept for none)."""
        return None

    def empty_cache(self) -> None:
        return None

    def unavailable(self, what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                f"numdiff.{self.name}.{what}: numdiff has no {self.name.upper()} device "
                "(its devices are 'cpu' and 'cuda'); use numdiff.accelerator to find the one there is"
            )

        refuse.__name__ = what
        refuse.__doc__ = f"Raises: numdiff has no {self.name.upper()} device."
        return refuse
