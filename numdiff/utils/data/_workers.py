"""DataLoader's worker options: PyTorch's checks of them, and get_worker_info. Batches load in
the calling process, so there are no workers; the options are checked as PyTorch checks them, so
code it refuses is refused here too."""

from __future__ import annotations


def check_worker_options(num_workers: int, timeout: float, prefetch_factor: int | None, persistent: bool) -> None:
    """PyTorch's checks of the worker options, so that code it refuses is refused here too."""
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to enable "
            "multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def get_worker_info() -> None:
    """Information about the current loader worker: None, as batches load in the calling process."""
    return None
