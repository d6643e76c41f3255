"""Whether numdiff.onnx.export is tracing a model now, readable without importing the onnx package.

Layers whose fast path is one fused op with no ONNX form (the recurrent sequence ops, fused
attention) read it to trace their composed form instead, as PyTorch's modules read
``torch.onnx.is_in_onnx_export()``.
"""

from __future__ import annotations

exporting = [False]
"""One flag in a list, set by numdiff.onnx.export around its trace."""
