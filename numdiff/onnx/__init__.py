"""numdiff.onnx: ``torch.onnx.export`` for numdiff models, built on numdiff.compile's tracer.

The model's forward is traced once (in eval mode unless ``training`` says otherwise) and each op
call is written as ONNX nodes (numdiff/onnx/_ops.py lists them); parameters and buffers become
initializers named as in the state_dict. Writing needs the onnx package
(``pip install numdiff[interchange]``); importing this module does not.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OnnxExporterError", "TrainingMode", "UnsupportedOperatorError", "export", "is_in_onnx_export",
           "supported_ops"]

_NAMES = set(__all__)


def __getattr__(name: str) -> Any:
    # The exporter imports the onnx package, an optional extra: load it when first asked for.
    if name not in _NAMES:
        raise AttributeError(f"module 'numdiff.onnx' has no attribute {name!r}")
    try:
        from numdiff.onnx import _export
    except ImportError as error:
        raise ImportError(
            f"numdiff.onnx.{name} writes ONNX through the onnx package: pip install 'numdiff[interchange]' "
            "(or pip install onnx)"
        ) from error
    return getattr(_export, name)


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
