"""MultiheadAttention: PyTorch's layer, parameter names and masks, over numdiff.nn._attention."""

from __future__ import annotations

from typing import Any

from numdiff.creation import empty
from numdiff.nn import _attention, init
from numdiff.nn.modules._checks import layer_name
from numdiff.nn.modules.linear import NonDynamicallyQuantizableLinear
from numdiff.nn.modules.module import Module
from numdiff.nn.parameter import Parameter
from numdiff.tensor import Tensor


class MultiheadAttention(Module):
    """Attention from `num_heads` parallel heads of size embed_dim // num_heads, as PyTorch's layer.

    Parameters: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E,) when kdim == vdim == E,
    else ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``; ``out_proj`` a Linear(E, E);
    ``bias_k``/``bias_v`` (1, 1, E) with add_bias_kv. forward returns (output, weights).

    >>> mha = MultiheadAttention(8, 2, batch_first=True)
    >>> x = numdiff.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)   # out (3, 5, 8), weights (3, 5, 5)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and num_heads={num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        factory = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **factory))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **factory))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **factory))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Projections xavier-uniform, biases zero, bias_k/bias_v xavier-normal, as PyTorch."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _check(self, query: Any, key: Any, value: Any) -> bool:
        """Validate the three inputs; True when they carry a batch dim."""
        name = layer_name(self)
        for what, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"{name}: {what} must be a Tensor, got {type(t).__name__}")
        batched = query.ndim == 3
        layout = "(N, L, E)" if self.batch_first else "(L, N, E)"
        if query.ndim not in (2, 3) or query.shape[-1] != self.embed_dim:
            raise ValueError(f"{name}: expected query of shape {layout} or (L, E) unbatched with E={self.embed_dim}, got {tuple(query.shape)}")
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"{name}: query, key and value must all be batched or all unbatched, got shapes {tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise ValueError(f"{name}: expected key features {self.kdim} and value features {self.vdim}, got key {tuple(key.shape)} and value {tuple(value.shape)}")
        seq_dim, batch_dim = (1, 0) if self.batch_first and batched else (0, 1)
        if key.shape[seq_dim] != value.shape[seq_dim] or (batched and not query.shape[batch_dim] == key.shape[batch_dim] == value.shape[batch_dim]):
            raise ValueError(f"{name}: key and value must have the same sequence length, and all three the same batch size; got query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}")
        if not (query.dtype is key.dtype and key.dtype is value.dtype):
            raise TypeError(f"{name}: query, key and value must share a dtype, got {query.dtype!r}, {key.dtype!r}, {value.dtype!r}")
        return batched

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        batched = self._check(query, key, value)
        batch_first = self.batch_first and batched
        if not batched:
            # The same tensor stays the same tensor, so self-attention keeps its one-GEMM projection.
            key_same, value_same = key is query, value is key
            query = query.unsqueeze(1)
            key = query if key_same else key.unsqueeze(1)
            value = key if value_same else value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if self._qkv_same_embed_dim:
            in_proj = self.in_proj_weight
        else:
            in_proj = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        out, weights = _attention.multi_head_attention(
            query,
            key,
            value,
            self.num_heads,
            in_proj,
            self.in_proj_bias,
            (self.out_proj.weight, self.out_proj.bias),
            (self.bias_k, self.bias_v) if self.bias_k is not None else None,
            self.add_zero_attn,
            self.dropout if self.training else 0.0,
            key_padding_mask,
            need_weights,
            attn_mask,
            average_attn_weights,
            is_causal,
            name=layer_name(self),
            batch_first=batch_first,
        )
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        return out, weights


__all__ = ["MultiheadAttention"]
