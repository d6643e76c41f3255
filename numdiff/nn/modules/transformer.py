"""TransformerEncoderLayer and TransformerEncoder, with PyTorch's submodule names so checkpoints load."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff.creation import tensor
from numdiff.nn import functional
from numdiff.nn.modules.attention import MultiheadAttention
from numdiff.nn.modules.container import ModuleList
from numdiff.nn.modules.dropout import Dropout
from numdiff.nn.modules.linear import Linear
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.normalization import LayerNorm
from numdiff.tensor import Tensor


def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """A (sz, sz) float mask, 0 on and below the diagonal and -inf above: position i sees 0..i only.

    >>> generate_square_subsequent_mask(3)
    tensor([[0., -inf, -inf],
            [0., 0., -inf],
            [0., 0., 0.]])
    """
    return tensor(np.triu(np.full((sz, sz), -np.inf), k=1), dtype=dtype, device=device)


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return functional.relu
    if activation == "gelu":
        return functional.gelu
    if callable(activation) and not isinstance(activation, str):
        return activation
    raise RuntimeError(f"TransformerEncoderLayer: activation should be relu/gelu or a callable, not {activation!r}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm.

    norm_first=False (post-norm): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
    norm_first=True (pre-norm):   x = x + sa(norm1(x)); x = x + ff(norm2(x)).

    >>> layer = TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(numdiff.randn(3, 5, 8)).shape
    numdiff.Size([3, 5, 8])
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = functional.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(
        self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._self_attention(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))

    def _self_attention(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` applied in turn, then the optional `norm`.

    >>> encoder = TransformerEncoder(TransformerEncoderLayer(8, 2, 16), num_layers=2)
    >>> encoder(numdiff.randn(5, 3, 8)).shape
    numdiff.Size([5, 3, 8])
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"TransformerEncoder: encoder_layer must be a Module, got {type(encoder_layer).__name__}")
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be a positive integer, got {num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        # Accepted for PyTorch code: numdiff has no nested tensors, and masks are always applied as given.
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(
        self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None, is_causal: bool | None = None
    ) -> Tensor:
        if is_causal is None:
            # PyTorch detects a causal mask itself, so its layers may take the causal fast path.
            is_causal = mask is not None and _is_causal_mask(mask)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        return self.norm(output) if self.norm is not None else output


def _is_causal_mask(mask: Tensor) -> bool:
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        return False
    values = mask.detach().cpu().numpy()
    upper = np.triu(np.ones(values.shape, dtype=bool), k=1)
    if values.dtype == np.bool_:
        return bool(np.array_equal(values, upper))
    return bool(np.all(np.isneginf(values[upper])) and np.all(values[~upper] == 0))


__all__ = ["TransformerEncoder", "TransformerEncoderLayer", "generate_square_subsequent_mask"]
