"""Transformer encoder and decoder layers and stacks, and nn.Transformer, with PyTorch's submodule
names so checkpoints load."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._dtype import get_default_dtype
from numdiff.creation import tensor
from numdiff.nn import _implementations as functional  # nn.functional, unwrapped where it can be
from numdiff.nn import init
from numdiff.nn._attention import values_to_branch_on
from numdiff.nn.modules.attention import MultiheadAttention
from numdiff.nn.modules.container import ModuleList
from numdiff.nn.modules.dropout import Dropout
from numdiff.nn.modules.linear import Linear
from numdiff.nn.modules.module import Module
from numdiff.nn.modules.normalization import LayerNorm
from numdiff.tensor import Tensor


def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """A (sz, sz) float mask, 0 on and below the diagonal and -inf above: position i sees 0..i only.
    Its dtype is the default dtype unless given (as PyTorch's), so it fits float32 attention.

    >>> generate_square_subsequent_mask(3)
    tensor([[0., -inf, -inf],
            [0., 0., -inf],
            [0., 0., 0.]])
    """
    dtype = get_default_dtype() if dtype is None else dtype
    return tensor(np.triu(np.full((sz, sz), -np.inf), k=1), dtype=dtype, device=device)


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return functional.relu
    if activation == "gelu":
        return functional.gelu
    if callable(activation) and not isinstance(activation, str):
        return activation
    raise RuntimeError(f"Transformer layer: activation should be relu/gelu or a callable, not {activation!r}")


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: the submodules (PyTorch's names, in PyTorch's
    registration order so parameters() and state_dict() line up), self-attention and the
    feed-forward block. A decoder layer adds attention over `memory` and a third norm/dropout."""

    _attends_to_memory = False

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
        attention = {"dropout": dropout, "bias": bias, "batch_first": batch_first, **factory}
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if self._attends_to_memory:
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        if self._attends_to_memory:
            self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if self._attends_to_memory:
            self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def _self_attention(self, x: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        # The feed-forward block is the last of the layer's blocks, so it owns the last dropout.
        last_dropout = self.dropout3 if self._attends_to_memory else self.dropout2
        return last_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward block, each with dropout, a residual and LayerNorm.

    norm_first=False (post-norm): x = norm1(x + sa(x)); x = norm2(x + ff(x)).
    norm_first=True (pre-norm):   x = x + sa(norm1(x)); x = x + ff(norm2(x)).

    >>> layer = TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(numdiff.randn(3, 5, 8)).shape
    numdiff.Size([3, 5, 8])
    """

    def forward(
        self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._self_attention(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's `memory`, then a feed-forward block; each with
    dropout, a residual and LayerNorm (post-norm, or pre-norm with norm_first=True).

    >>> layer = TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> layer(numdiff.randn(4, 3, 8), numdiff.randn(6, 3, 8)).shape
    numdiff.Size([4, 3, 8])
    """

    _attends_to_memory = True

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._memory_attention(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._feed_forward(self.norm3(x))
        x = self.norm1(x + self._self_attention(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._memory_attention(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._feed_forward(x))

    def _memory_attention(self, x: Tensor, memory: Tensor, mask: Tensor | None, padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.multihead_attn(x, memory, memory, attn_mask=mask, key_padding_mask=padding_mask, need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(out)


def _clones(layer: Module, num_layers: int, owner: str) -> ModuleList:
    if not isinstance(layer, Module):
        raise TypeError(f"{owner}: the layer must be a Module, got {type(layer).__name__}")
    if not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError(f"{owner}: num_layers must be a positive integer, got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


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
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
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


class TransformerDecoder(Module):
    """`num_layers` deep copies of `decoder_layer`, each attending to `memory`, then the optional `norm`.

    >>> decoder = TransformerDecoder(TransformerDecoderLayer(8, 2, 16), num_layers=2)
    >>> decoder(numdiff.randn(4, 3, 8), numdiff.randn(6, 3, 8)).shape
    numdiff.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        if tgt_is_causal is None:
            tgt_is_causal = tgt_mask is not None and _is_causal_mask(tgt_mask)
        output = tgt
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        return self.norm(output) if self.norm is not None else output


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need", as PyTorch's nn.Transformer:
    an encoder stack over `src` and a decoder stack over `tgt` attending to the encoder's output,
    each ending in a LayerNorm. Every weight matrix starts xavier-uniform.

    >>> model = Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    >>> model(numdiff.randn(6, 3, 8), numdiff.randn(4, 3, 8)).shape
    numdiff.Size([4, 3, 8])
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = functional.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers, decoder_norm)
        for weight in self.parameters():
            if weight.ndim > 1:
                init.xavier_uniform_(weight)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, got shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model={self.d_model}, "
                f"got shapes {tuple(src.shape)} and {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )


def _is_causal_mask(mask: Tensor) -> bool:
    """Whether `mask` is the square causal mask (the decoder's `tgt_is_causal` when not given). Only a
    hint: where its values cannot be read (a compiled trace, vmap, the meta device) the answer is
    False and the mask is applied as given, which gives the same numbers."""
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1] or not values_to_branch_on(mask):
        return False
    values = mask.detach().cpu().numpy()
    upper = np.triu(np.ones(values.shape, dtype=bool), k=1)
    if values.dtype == np.bool_:
        return bool(np.array_equal(values, upper))
    return bool(np.all(np.isneginf(values[upper])) and np.all(values[~upper] == 0))


__all__ = [
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "generate_square_subsequent_mask",
]
