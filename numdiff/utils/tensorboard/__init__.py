"""numdiff.utils.tensorboard: ``SummaryWriter`` for TensorBoard, as ``torch.utils.tensorboard``.

Needs the tensorboard package: ``pip install numdiff[interchange]``.
"""

try:
    import tensorboard as _tensorboard  # noqa: F401 - checked here so the error names the extra
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "numdiff.utils.tensorboard writes through the tensorboard package: pip install 'numdiff[interchange]' "
        "(or pip install tensorboard)"
    ) from error

from numdiff.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
