"""The layer-level differential families (tests/ops/differential.py has the ops'): losses with
reductions, class weights, ignore_index and label smoothing; normalizations; pooling and
convolution at odd sizes, strides, dilations and ceil mode; resampling; embeddings; softmax over
infinite rows; and type promotion between 0-d, n-d and half-precision tensors and Python numbers.
Each gradient case returns the float64 output and the input gradients (`backward_of`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tests.ops.differential import Case, backward_of, make

nan, inf = float("nan"), float("inf")


def _values(*shape: int) -> np.ndarray:
    """Values in [-2, 2) with three decimals, the same for every call with `shape`."""
    return np.round(np.random.default_rng(sum(shape) * 7 + len(shape)).uniform(-2, 2, shape), 3)


def _f(lib: Any) -> Any:
    return lib.nn.functional


_LOGITS = _values(4, 5)
_TARGET = [0, 4, -100, 2]
_ROWS = [[0.0, 1.0, 0.5, 1.0, 0.0]] * 4
_SIGNS = [[1.0, -1.0, 1.0, -1.0, 1.0]] * 4


def _losses(lib: Any, red: str) -> dict:
    """Each loss as a function of the logits; `lib` None gives the names (nothing is called)."""
    f, t64 = (_f(lib) if lib is not None else None), (lambda v: lib.tensor(v, dtype=lib.float64))
    return {
        "cross_entropy": lambda a: f.cross_entropy(a, lib.tensor(_TARGET), reduction=red),
        "cross_entropy label_smoothing": lambda a: f.cross_entropy(a, lib.tensor(_TARGET), reduction=red, label_smoothing=0.2),
        "cross_entropy weight": lambda a: f.cross_entropy(a, lib.tensor(_TARGET), weight=t64([1.0, 2.0, 3.0, 4.0, 5.0]), reduction=red),
        "cross_entropy weight smoothing": lambda a: f.cross_entropy(
            a, lib.tensor(_TARGET), weight=t64([1.0, 2.0, 3.0, 4.0, 5.0]), reduction=red, label_smoothing=0.1
        ),
        "cross_entropy ignore_index": lambda a: f.cross_entropy(a, lib.tensor([1, 4, 1, 2]), ignore_index=1, reduction=red),
        "cross_entropy probabilities": lambda a: f.cross_entropy(a, lib.softmax(t64(_LOGITS[::-1].tolist()), 1), reduction=red),
        "cross_entropy 3-d": lambda a: f.cross_entropy(a.reshape(2, 5, 2), lib.tensor([[0, 4], [-100, 2]]), reduction=red),
        "nll_loss": lambda a: f.nll_loss(a, lib.tensor(_TARGET), reduction=red),
        "binary_cross_entropy_with_logits": lambda a: f.binary_cross_entropy_with_logits(
            a * 50, t64(_ROWS), pos_weight=t64([1.0, 2.0, 3.0, 0.5, 1.0]), reduction=red
        ),
        "kl_div": lambda a: f.kl_div(lib.log_softmax(a, 1), t64([[0.0, 0.2, 0.3, 0.5, 0.0]] * 4), reduction=red),
        "kl_div log_target": lambda a: f.kl_div(lib.log_softmax(a, 1), t64([[-inf, 0.2, 0.3, 0.5, 0.0]] * 4), reduction=red, log_target=True),
        "huber_loss": lambda a: f.huber_loss(a, lib.zeros(4, 5, dtype=lib.float64), reduction=red, delta=0.5),
        "smooth_l1_loss beta 0": lambda a: f.smooth_l1_loss(a, lib.zeros(4, 5, dtype=lib.float64), reduction=red, beta=0.0),
        "poisson_nll_loss": lambda a: f.poisson_nll_loss(a, t64([[0.0, 1.0, 2.0, 3.0, 0.0]] * 4), reduction=red, full=True),
        "gaussian_nll_loss": lambda a: f.gaussian_nll_loss(a, lib.zeros(4, 5, dtype=lib.float64), a.abs(), reduction=red, full=True),
        "multi_margin_loss": lambda a: f.multi_margin_loss(a, lib.tensor([0, 4, 1, 2]), reduction=red),
        "multilabel_soft_margin_loss": lambda a: f.multilabel_soft_margin_loss(a, t64(_ROWS), reduction=red),
        "cosine_embedding_loss": lambda a: f.cosine_embedding_loss(a, a.flip(0), lib.tensor([1, -1, 1, -1]), margin=0.1, reduction=red),
        "triplet_margin_loss": lambda a: f.triplet_margin_loss(a, a.flip(0), a.roll(1, 0), reduction=red),
        "hinge_embedding_loss": lambda a: f.hinge_embedding_loss(a, t64(_SIGNS), reduction=red),
        "soft_margin_loss": lambda a: f.soft_margin_loss(a, t64(_SIGNS), reduction=red),
    }


def loss_cases() -> Iterator[Case]:
    for red in ("mean", "sum", "none"):
        for name in _losses(None, red):
            yield f"{name}[{red}]", lambda lib, red=red, name=name: backward_of(lib, lambda lib, a: _losses(lib, red)[name](a), _LOGITS)
        yield f"mse_loss of empty[{red}]", lambda lib, red=red: _f(lib).mse_loss(lib.zeros(0), lib.zeros(0), reduction=red)
        yield f"l1_loss broadcasting[{red}]", lambda lib, red=red: _f(lib).l1_loss(lib.zeros(3, 1), lib.ones(3), reduction=red)
        yield f"cross_entropy all ignored[{red}]", lambda lib, red=red: _f(lib).cross_entropy(lib.zeros(2, 3), lib.tensor([-100, -100]), reduction=red)
        yield f"cross_entropy of empty[{red}]", lambda lib, red=red: _f(lib).cross_entropy(lib.zeros(0, 3), lib.zeros(0, dtype=lib.int64), reduction=red)
    yield "cross_entropy class out of range", lambda lib: _f(lib).cross_entropy(lib.zeros(2, 3), lib.tensor([0, 3]))
    yield "cross_entropy negative class", lambda lib: _f(lib).cross_entropy(lib.zeros(2, 3), lib.tensor([0, -1]))
    yield "nll_loss float target", lambda lib: _f(lib).nll_loss(lib.zeros(2, 3), lib.tensor([0.0, 1.0]))
    yield "binary_cross_entropy outside [0, 1]", lambda lib: _f(lib).binary_cross_entropy(lib.tensor([1.5]), lib.tensor([1.0]))


_IMAGES = _values(2, 3, 5, 7)


def normalization_cases() -> Iterator[Case]:
    def t64(lib: Any, v: list) -> Any:
        return lib.tensor(v, dtype=lib.float64)

    norms = {
        "batch_norm train": lambda lib, a: _f(lib).batch_norm(a, None, None, training=True),
        "batch_norm train affine": lambda lib, a: _f(lib).batch_norm(
            a, t64(lib, [0.0] * 3), t64(lib, [1.0] * 3), t64(lib, [1.0, 2.0, 3.0]), t64(lib, [0.0, 1.0, 0.0]), training=True, momentum=0.3
        ),
        "batch_norm eval": lambda lib, a: _f(lib).batch_norm(a, t64(lib, [0.0, 1.0, 2.0]), t64(lib, [1.0, 2.0, 3.0]), training=False),
        "batch_norm of a constant": lambda lib, a: _f(lib).batch_norm(a * 0 + 1, None, None, training=True),
        "layer_norm": lambda lib, a: _f(lib).layer_norm(a, (5, 7)),
        "layer_norm affine": lambda lib, a: _f(lib).layer_norm(a, (7,), lib.arange(7, dtype=lib.float64), lib.ones(7, dtype=lib.float64)),
        "layer_norm of a constant": lambda lib, a: _f(lib).layer_norm(a * 0 + 1, (7,)),
        "group_norm": lambda lib, a: _f(lib).group_norm(a.reshape(2, 3, 35).repeat(1, 2, 1), 3),
        "instance_norm": lambda lib, a: _f(lib).instance_norm(a),
        "rms_norm": lambda lib, a: _f(lib).rms_norm(a, (7,)),
        "normalize p=1": lambda lib, a: _f(lib).normalize(a, p=1, dim=-1),
        "local_response_norm": lambda lib, a: _f(lib).local_response_norm(a, 2),
    }
    for name, norm in norms.items():
        yield name, lambda lib, norm=norm: backward_of(lib, norm, _IMAGES)
    yield "batch_norm of one value per channel", lambda lib: _f(lib).batch_norm(lib.ones(1, 3), None, None, training=True)
    yield "batch_norm 3-d", lambda lib: backward_of(lib, lambda lib, a: _f(lib).batch_norm(a, None, None, training=True), _values(4, 3, 2))
    yield "layer_norm wrong shape", lambda lib: _f(lib).layer_norm(lib.ones(2, 3), (2,))
    yield "group_norm groups not dividing", lambda lib: _f(lib).group_norm(lib.ones(2, 3, 4), 2)


def window_cases() -> Iterator[Case]:
    """Pooling, convolution and resampling at odd sizes; every gradient through `backward_of`."""
    f = _f
    for k, s, p, d, ceil in ((3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 3, 0, 1, True), (3, 1, 1, 2, False), (4, 3, 2, 1, True), (1, 2, 0, 1, False)):
        key, q = f"k{k} s{s} p{p} d{d} ceil {ceil}", min(p, k // 2)
        yield f"max_pool2d {key}", lambda lib, k=k, s=s, p=p, d=d, c=ceil: backward_of(lib, lambda lib, a: f(lib).max_pool2d(a, k, s, p, d, ceil_mode=c), _IMAGES)
        yield f"max_pool2d indices {key}", lambda lib, k=k, s=s, p=p, d=d, c=ceil: f(lib).max_pool2d(lib.tensor(_IMAGES), k, s, p, d, ceil_mode=c, return_indices=True)
        yield f"avg_pool2d {key}", lambda lib, k=k, s=s, q=q, c=ceil: backward_of(lib, lambda lib, a: f(lib).avg_pool2d(a, k, s, q, ceil_mode=c), _IMAGES)
        yield f"avg_pool2d no pad count {key}", lambda lib, k=k, s=s, q=q, c=ceil: backward_of(
            lib, lambda lib, a: f(lib).avg_pool2d(a, k, s, q, ceil_mode=c, count_include_pad=False), _IMAGES
        )
        yield f"avg_pool2d divisor {key}", lambda lib, k=k, s=s, q=q, c=ceil: backward_of(
            lib, lambda lib, a: f(lib).avg_pool2d(a, k, s, q, ceil_mode=c, divisor_override=2), _IMAGES
        )
        yield f"max_pool1d {key}", lambda lib, k=k, s=s, q=q, d=d, c=ceil: backward_of(lib, lambda lib, a: f(lib).max_pool1d(a, k, s, q, d, ceil_mode=c), _IMAGES[0])
        yield f"lp_pool2d {key}", lambda lib, k=k, s=s, c=ceil: backward_of(lib, lambda lib, a: f(lib).lp_pool2d(a, 2, k, s, ceil_mode=c), _IMAGES)
    yield "max_pool2d with nan", lambda lib: backward_of(lib, lambda lib, a: f(lib).max_pool2d(a, 2), [[[[1.0, nan], [2.0, 3.0]]]])
    yield "max_pool2d ties", lambda lib: backward_of(lib, lambda lib, a: f(lib).max_pool2d(a, 2, 1), np.ones((1, 1, 3, 3)))
    yield "max_pool2d padding beside -1e30", lambda lib: backward_of(lib, lambda lib, a: f(lib).max_pool2d(a, 3, 1, 1), -np.ones((1, 1, 2, 2)) * 1e30)
    yield "adaptive_max_pool2d", lambda lib: backward_of(lib, lambda lib, a: f(lib).adaptive_max_pool2d(a, (3, 4)), _IMAGES)
    yield "adaptive_avg_pool2d up", lambda lib: backward_of(lib, lambda lib, a: f(lib).adaptive_avg_pool2d(a, (7, 9)), _IMAGES)
    yield "max_pool2d window too big", lambda lib: f(lib).max_pool2d(lib.ones(1, 1, 2, 2), 3)
    yield "max_pool2d padding too big", lambda lib: f(lib).max_pool2d(lib.ones(1, 1, 5, 5), 2, padding=2)
    weights, depthwise = _values(4, 3, 3, 2), _values(3, 1, 3, 2)
    for st, pd, dl in ((1, 0, 1), (2, 1, 1), (3, 2, 2), (1, "same", 2), (1, "valid", 1)):
        yield f"conv2d s{st} p{pd} d{dl}", lambda lib, st=st, pd=pd, dl=dl: backward_of(lib, lambda lib, a, w: f(lib).conv2d(a, w, None, st, pd, dl), _IMAGES, weights)
        yield f"conv1d s{st} p{pd} d{dl}", lambda lib, st=st, pd=pd, dl=dl: backward_of(lib, lambda lib, a, w: f(lib).conv1d(a, w, None, st, pd, dl), _IMAGES[0], weights[..., 0])
        if pd not in ("same", "valid"):
            for op in sorted({0, st - 1}):
                yield f"conv_transpose2d s{st} p{pd} d{dl} out_pad {op}", lambda lib, st=st, pd=pd, dl=dl, op=op: backward_of(
                    lib, lambda lib, a, w: f(lib).conv_transpose2d(a, w, None, st, pd, op, 1, dl), _IMAGES, weights[:3, :2]
                )
    yield "conv2d depthwise", lambda lib: backward_of(lib, lambda lib, a, w: f(lib).conv2d(a, w, None, 2, 1, 1, 3), _IMAGES, depthwise)
    yield "conv2d of an empty batch", lambda lib: f(lib).conv2d(lib.zeros(0, 3, 5, 5), lib.ones(2, 3, 3, 3))
    yield "conv2d channels mismatch", lambda lib: f(lib).conv2d(lib.zeros(1, 2, 5, 5), lib.ones(2, 3, 3, 3))
    yield "conv2d input smaller than kernel", lambda lib: f(lib).conv2d(lib.zeros(1, 3, 2, 2), lib.ones(2, 3, 3, 3))
    for mode in ("reflect", "replicate", "circular"):
        yield f"pad {mode}", lambda lib, m=mode: backward_of(lib, lambda lib, a: f(lib).pad(a, (1, 2, 2, 1), mode=m), _IMAGES)
    yield "pad negative", lambda lib: backward_of(lib, lambda lib, a: f(lib).pad(a, (-1, 2, 0, -2)), _IMAGES)
    for mode, size in (("nearest", (4, 9)), ("bilinear", (4, 9)), ("bicubic", (8, 3)), ("area", (3, 4))):
        yield f"interpolate {mode}", lambda lib, m=mode, s=size: backward_of(lib, lambda lib, a: f(lib).interpolate(a, size=s, mode=m), _IMAGES)
    yield "interpolate bilinear align_corners", lambda lib: backward_of(lib, lambda lib, a: f(lib).interpolate(a, size=(4, 9), mode="bilinear", align_corners=True), _IMAGES)
    yield "interpolate nearest-exact", lambda lib: backward_of(lib, lambda lib, a: f(lib).interpolate(a, scale_factor=1.7, mode="nearest-exact"), _IMAGES)
    yield "unfold", lambda lib: backward_of(lib, lambda lib, a: f(lib).unfold(a, (2, 3), dilation=(1, 2), padding=1, stride=2), _IMAGES)
    yield "fold", lambda lib: backward_of(lib, lambda lib, a: f(lib).fold(a, (4, 5), (2, 2)), _values(1, 12, 12))
    yield "embedding padding_idx", lambda lib: backward_of(lib, lambda lib, w: f(lib).embedding(lib.tensor([[0, 2, 2], [1, 0, 3]]), w, padding_idx=0), _values(4, 3))
    yield "embedding index out of range", lambda lib: f(lib).embedding(lib.tensor([4]), lib.ones(4, 3))
    yield "embedding_bag max", lambda lib: backward_of(lib, lambda lib, w: f(lib).embedding_bag(lib.tensor([0, 2, 2, 1, 3]), w, lib.tensor([0, 2, 2]), mode="max"), _values(4, 3))
    yield "one_hot negative", lambda lib: f(lib).one_hot(lib.tensor([0, -1]))
    yield "softmax of -inf rows", lambda lib: backward_of(lib, lambda lib, a: lib.softmax(a, 1), [[-inf, -inf], [0.0, -inf]])
    yield "log_softmax of -inf rows", lambda lib: backward_of(lib, lambda lib, a: lib.log_softmax(a, 1), [[-inf, -inf], [0.0, -inf]])
    yield "logsumexp of infinite rows", lambda lib: backward_of(lib, lambda lib, a: lib.logsumexp(a, 1), [[-inf, -inf], [0.0, -inf], [inf, inf]])
    yield "softmax of int with dtype", lambda lib: lib.softmax(lib.tensor([1, 2, 3]), 0, dtype=lib.float64)
    yield "scaled_dot_product_attention causal", lambda lib: backward_of(lib, lambda lib, q: f(lib).scaled_dot_product_attention(q, q, q, is_causal=True), _values(1, 3, 4))
    yield "scaled_dot_product_attention fully masked row", lambda lib: f(lib).scaled_dot_product_attention(
        lib.ones(1, 2, 3), lib.ones(1, 2, 3), lib.ones(1, 2, 3), attn_mask=lib.tensor([[False, False], [True, False]])
    )


def promotion_cases() -> Iterator[Case]:
    """0-d against n-d tensors, half types, Python numbers beyond a dtype's range, reflected ops."""
    for a, b in (("float16", "bfloat16"), ("bfloat16", "int64"), ("float16", "float64"), ("uint8", "int8"), ("bool", "int8"), ("int8", "float16")):
        yield f"0-d {a} + {b}", lambda lib, a=a, b=b: make(lib, 1, a) + make(lib, [1, 2], b)
        yield f"{a} + 0-d {b}", lambda lib, a=a, b=b: make(lib, [1, 2], a) + make(lib, 1, b)
        yield f"0-d {a} + 0-d {b}", lambda lib, a=a, b=b: make(lib, 1, a) + make(lib, 1, b)
        yield f"where({a}, 0-d {b})", lambda lib, a=a, b=b: lib.where(lib.tensor([True, False]), make(lib, [1, 2], a), make(lib, 3, b))
        yield f"cat({a}, {b})", lambda lib, a=a, b=b: lib.cat([make(lib, [1, 2], a), make(lib, [3], b)])
        yield f"{a} / {b}", lambda lib, a=a, b=b: make(lib, [1, 2], a) / make(lib, [3, 1], b)
        yield f"{a} @ {b}", lambda lib, a=a, b=b: make(lib, [[1, 2]], a) @ make(lib, [[3], [1]], b)
    numbers = {
        "int8 + 1000": lambda lib: make(lib, [1, 2], "int8") + 1000, "uint8 - 1": lambda lib: make(lib, [0, 2], "uint8") - 1,
        "uint8 * -1": lambda lib: make(lib, [0, 2], "uint8") * -1, "bool + True": lambda lib: make(lib, [True, False], "bool") + True,
        "float16 + 1e6": lambda lib: make(lib, [1, 2], "float16") + 1e6, "int64 + 2**62": lambda lib: make(lib, [1, 2], "int64") + 2**62,
        "int64 + 2**63": lambda lib: make(lib, [1, 2], "int64") + 2**63, "int32 + 2**40": lambda lib: make(lib, [1, 2], "int32") + 2**40,
        "2 ** int8": lambda lib: 2 ** make(lib, [1, 2, 3], "int8"), "2.0 ** int8": lambda lib: 2.0 ** make(lib, [1, 2, 3], "int8"),
        "1 - uint8": lambda lib: 1 - make(lib, [0, 2], "uint8"), "1 / int64": lambda lib: 1 / make(lib, [0, 2], "int64"),
        "7 // int64": lambda lib: 7 // make(lib, [3, -2], "int64"), "7 % int64": lambda lib: 7 % make(lib, [3, -2], "int64"),
        "-7.5 % float32": lambda lib: -7.5 % make(lib, [3, -2, 0], "float32"), "float32 % 0.0": lambda lib: make(lib, [3.0, -2.0, 0.0], "float32") % 0.0,
        "float32 // 0.0": lambda lib: make(lib, [3.0, -2.0, 0.0], "float32") // 0.0, "float64 % inf": lambda lib: make(lib, [3.0, -2.0, inf], "float64") % inf,
        "float64 % -inf": lambda lib: make(lib, [3.0, -2.0, 0.0], "float64") % -inf, "float64 // 0.1": lambda lib: make(lib, [1.0, 0.3, 5.0], "float64") // 0.1,
        "float64 % 0.1": lambda lib: make(lib, [1.0, 0.3, 5.0], "float64") % 0.1, "-0.0 // 1.0": lambda lib: make(lib, [-0.0, 0.0], "float64") // 1.0,
    }
    yield from numbers.items()


LAYER_FAMILIES = {"loss": loss_cases, "normalization": normalization_cases, "window": window_cases, "promotion": promotion_cases}
