"""Transformer layers and stacks against torch 2.13 in float64 (torch's state_dict loaded, eval mode):
outputs and every gradient to 1e-10, gradcheck, dropout in training, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
from numdiff.autograd import gradcheck
from numdiff.nn.modules.transformer import generate_square_subsequent_mask
from tests.nn.parity64 import backward_both, close, compare_parameter_grads, leaf, load_from_torch

torch = pytest.importorskip("torch")


def _encoder_layer_pair(**kwargs):
    args = {"d_model": 4, "nhead": 2, "dim_feedforward": 6, **kwargs}
    ours = nn.TransformerEncoderLayer(**{**args, "activation": _ours_activation(args.get("activation"))}) if "activation" in args else nn.TransformerEncoderLayer(**args)
    theirs = torch.nn.TransformerEncoderLayer(**args)
    return load_from_torch(ours.double(), theirs.double())


def _ours_activation(activation):
    return {"gelu": "gelu", "relu": "relu"}.get(activation, None) or (lambda x: x.tanh())


ENCODER_CASES = [
    ("post-norm relu", {}),
    ("pre-norm gelu batch_first", {"norm_first": True, "activation": "gelu", "batch_first": True}),
    ("callable activation no bias", {"activation": torch.tanh, "bias": False, "layer_norm_eps": 1e-3}),
]


@pytest.mark.parametrize("case, kwargs", ENCODER_CASES, ids=[c[0] for c in ENCODER_CASES])
def test_encoder_layer_matches_torch(rng, case, kwargs):
    ours, theirs = _encoder_layer_pair(**kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    shape = (2, 5, 4) if kwargs.get("batch_first") else (5, 2, 4)
    x, x_t = leaf(rng.standard_normal(shape))
    padding = np.zeros((2, 5), bool)
    padding[1, 3:] = True
    mask = rng.standard_normal((5, 5))
    out = ours(x, src_mask=numdiff.tensor(mask), src_key_padding_mask=numdiff.tensor(padding))
    out_t = theirs(x_t, src_mask=torch.tensor(mask), src_key_padding_mask=torch.tensor(np.where(padding, -np.inf, 0.0)))
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    close(x.grad, x_t.grad, "grad of input")
    compare_parameter_grads(ours, theirs)


@pytest.mark.parametrize("causal", [False, True], ids=["padding mask", "causal"])
def test_encoder_stack_with_final_norm_matches_torch(rng, causal):
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.2, batch_first=True)
        return lib.nn.TransformerEncoder(layer, num_layers=2, norm=lib.nn.LayerNorm(4), enable_nested_tensor=False)

    ours, theirs = load_from_torch(build(numdiff).double(), build(torch).double())
    assert repr(ours) == repr(theirs)
    assert ours.layers[0].linear1.weight is not ours.layers[1].linear1.weight
    x, x_t = leaf(rng.standard_normal((2, 5, 4)))
    if causal:
        kwargs = {"mask": generate_square_subsequent_mask(5, dtype=numdiff.float64), "is_causal": True}
        kwargs_t = {"mask": torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64), "is_causal": True}
    else:
        padding = np.array([[False] * 5, [False] * 3 + [True] * 2])
        kwargs, kwargs_t = {"src_key_padding_mask": numdiff.tensor(padding)}, {"src_key_padding_mask": torch.tensor(padding)}
    out, out_t = ours(x, **kwargs), theirs(x_t, **kwargs_t)
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    close(x.grad, x_t.grad, "grad of input")
    compare_parameter_grads(ours, theirs)


def test_encoder_layer_gradcheck_and_dropout_in_training(rng):
    layer = nn.TransformerEncoderLayer(2, 1, 3, dropout=0.0).double()
    x = numdiff.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    assert gradcheck(lambda x, w: layer(x), (x, layer.linear1.weight))
    noisy = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5).double()
    y = numdiff.tensor(rng.standard_normal((3, 2, 4)))
    assert not np.allclose(noisy(y).detach().numpy(), noisy.eval()(y).detach().numpy())


def test_encoder_bad_arguments():
    with pytest.raises(RuntimeError, match="Transformer layer: activation should be relu/gelu or a callable, not 'swish'"):
        nn.TransformerEncoderLayer(4, 2, activation="swish")
    with pytest.raises(ValueError, match="num_layers must be a positive integer, got 0"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2), 0)
    with pytest.raises(ValueError, match=r"expected query of shape \(L, N, E\) or \(L, E\) unbatched with E=4, got \(5, 2, 3\)"):
        nn.TransformerEncoderLayer(4, 2, 8)(numdiff.zeros(5, 2, 3))


def test_generate_square_subsequent_mask_matches_torch():
    np.testing.assert_array_equal(generate_square_subsequent_mask(4).numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())


def test_subsequent_mask_takes_the_default_dtype_and_fits_a_float32_encoder():
    assert generate_square_subsequent_mask(3).dtype == numdiff.get_default_dtype() == numdiff.float32
    assert generate_square_subsequent_mask(3, dtype=numdiff.float64).dtype == numdiff.float64
    layer = numdiff.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True)
    out = layer(numdiff.randn(2, 3, 4), src_mask=numdiff.nn.Transformer.generate_square_subsequent_mask(3), is_causal=True)
    assert out.shape == (2, 3, 4) and out.dtype == numdiff.float32


# ----------------------------------------------------------------------------- decoder and nn.Transformer
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_matches_torch(rng, norm_first):
    def build(lib):
        return lib.nn.TransformerDecoderLayer(4, 2, 6, activation="gelu", norm_first=norm_first)

    ours, theirs = load_from_torch(build(numdiff).double(), build(torch).double())
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    (tgt, tgt_t), (memory, memory_t) = leaf(rng.standard_normal((3, 2, 4))), leaf(rng.standard_normal((5, 2, 4)))
    padding = np.array([[False] * 5, [False] * 4 + [True]])
    mask = generate_square_subsequent_mask(3, dtype=numdiff.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    out = ours(tgt, memory, tgt_mask=mask, memory_key_padding_mask=numdiff.tensor(padding), tgt_is_causal=True)
    out_t = theirs(tgt_t, memory_t, tgt_mask=mask_t, memory_key_padding_mask=torch.tensor(padding), tgt_is_causal=True)
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    close(tgt.grad, tgt_t.grad, "grad of tgt")
    close(memory.grad, memory_t.grad, "grad of memory")
    compare_parameter_grads(ours, theirs)


def test_transformer_matches_torch(rng):
    def build(lib):
        return lib.nn.Transformer(4, 2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=6, batch_first=True)

    ours, theirs = load_from_torch(build(numdiff).double(), build(torch).double())
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    (src, src_t), (tgt, tgt_t) = leaf(rng.standard_normal((2, 5, 4))), leaf(rng.standard_normal((2, 3, 4)))
    mask = numdiff.nn.Transformer.generate_square_subsequent_mask(3, dtype=numdiff.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    padding = np.array([[False] * 5, [False] * 3 + [True] * 2])
    out = ours(src, tgt, tgt_mask=mask, src_key_padding_mask=numdiff.tensor(padding), memory_key_padding_mask=numdiff.tensor(padding))
    out_t = theirs(src_t, tgt_t, tgt_mask=mask_t, src_key_padding_mask=torch.tensor(padding), memory_key_padding_mask=torch.tensor(padding))
    close(out, out_t, "output")
    backward_both(rng, [out], [out_t])
    close(src.grad, src_t.grad, "grad of src")
    close(tgt.grad, tgt_t.grad, "grad of tgt")
    compare_parameter_grads(ours, theirs)


def test_transformer_initialises_matrices_xavier_uniform_and_checks_shapes():
    model = nn.Transformer(8, 2, 1, 1, 16)
    weight = model.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(weight).max() <= np.sqrt(6 / (8 + 16))
    with pytest.raises(RuntimeError, match=r"Transformer: the batch number of src and tgt must be equal, got shapes \(5, 2, 8\) and \(4, 3, 8\)"):
        model(numdiff.zeros(5, 2, 8), numdiff.zeros(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model=8"):
        model(numdiff.zeros(5, 2, 8), numdiff.zeros(4, 2, 6))
    with pytest.raises(RuntimeError, match="need attn_mask if specifying the is_causal hint"):
        nn.TransformerDecoderLayer(8, 2, 16)(numdiff.zeros(4, 2, 8), numdiff.zeros(5, 2, 8), memory_is_causal=True)


def test_layers_are_importable_where_pytorch_code_names_them():
    modules = numdiff.nn.modules
    assert modules.activation.MultiheadAttention is nn.MultiheadAttention
    assert modules.linear.NonDynamicallyQuantizableLinear is type(nn.MultiheadAttention(4, 2).out_proj)
    assert modules.transformer.TransformerEncoderLayer is nn.TransformerEncoderLayer
    assert modules.rnn.LSTMCell is nn.LSTMCell and modules.rnn.GRU is nn.GRU
    assert numdiff.nn.utils.rnn.pack_padded_sequence is not None


# ----------------------------------------------------------------------------- masks passed to compiled code
@pytest.mark.parametrize("mask_kind", ["causal", "banded"])
def test_compiled_transformer_takes_its_float_mask_as_an_argument(rng, mask_kind):
    """nn.Transformer's decoder asks whether `tgt_mask` is causal by reading its values. A mask that is
    an argument of a compiled function cannot be read in the trace (the graph would keep the first
    call's answer): the decoder then applies the mask as given, with eager's numbers, for any mask."""
    model = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16, dropout=0.0,
                           batch_first=True).double()
    mask = generate_square_subsequent_mask(5, dtype=numdiff.float64)
    if mask_kind == "banded":  # not causal: each query also sees the next key
        mask = numdiff.tensor(np.where(np.triu(np.ones((5, 5), dtype=bool), 2), -np.inf, 0.0))
    source, target = numdiff.tensor(rng.standard_normal((3, 4, 8))), numdiff.tensor(rng.standard_normal((3, 5, 8)))

    def loss_of(source, target, mask):
        return (model(source, target, tgt_mask=mask) ** 2).sum()

    def grads(loss_fn):
        model.zero_grad()
        loss = loss_fn(source, target, mask)
        loss.backward()
        return float(loss), [p.grad.numpy().copy() for p in model.parameters()]

    eager_loss, eager_grads = grads(loss_of)
    compiled = numdiff.compile(loss_of)
    for _ in range(2):  # the traced call, then the replay
        loss, compiled_grads = grads(compiled)
        np.testing.assert_allclose(loss, eager_loss, rtol=1e-12)
        for ours, expected in zip(compiled_grads, eager_grads):
            np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)
