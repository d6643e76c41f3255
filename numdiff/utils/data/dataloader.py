"""numdiff.utils.data.dataloader, the module path PyTorch programs import the loader from."""

from numdiff.utils.data import DataLoader, default_collate, default_convert, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
