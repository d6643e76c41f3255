"""Drawn calls of the windowed and resampling parts of torch.nn.functional (the frame is in
differential_functional.py): pooling, convolution and transposed convolution in 1, 2 and 3
dimensions, interpolate, pad, pixel shuffle, unfold/fold, grid_sample/affine_grid, distances,
one_hot, dropout in eval, and scaled_dot_product_attention."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.ops.differential_functional import Input, layout, normal, run
from tests.ops.differential_functional_losses import _f, _pick


def _image(rng: np.random.Generator, nd: int, channels: int, low: int = 1, high: int = 7) -> tuple:
    """(N, C, *spatial), N of 0 rarely; without N a fifth of the time (an unbatched input)."""
    spatial = tuple(int(s) for s in rng.integers(low, high, nd))
    n = int(_pick(rng, 0, 1, 2, 2, 2, 2, 2, 2))
    return (channels, *spatial) if rng.random() < 0.2 else (n, channels, *spatial)


def _ints(rng: np.random.Generator, nd: int, low: int, high: int) -> Any:
    """One int for every dim, or a tuple of them."""
    return int(rng.integers(low, high + 1)) if rng.random() < 0.5 else tuple(int(v) for v in rng.integers(low, high + 1, nd))


def pooling(rng: np.random.Generator) -> tuple:
    nd, kind = int(rng.integers(1, 4)), _pick(rng, "max", "max", "avg", "avg", "lp", "adaptive_max", "adaptive_avg")
    shape = _image(rng, nd, int(rng.integers(1, 3)))
    kwargs: dict = {}
    if kind.startswith("adaptive"):
        size = [int(v) for v in rng.integers(1, 5, nd)]
        kwargs["output_size"] = size[0] if nd == 1 or rng.random() < 0.3 else tuple(s if rng.random() < 0.8 else None for s in size)
        if kind == "adaptive_max":
            kwargs["return_indices"] = bool(rng.random() < 0.4)
    else:
        # An int for lp_pool1d: torch's multiplies its output by the kernel_size tuple and raises.
        k = int(rng.integers(1, 4)) if kind == "lp" and nd == 1 else _ints(rng, nd, 1, 3)
        kwargs["kernel_size"] = k
        kwargs["stride"] = _pick(rng, None, _ints(rng, nd, 1, 3))
        kwargs["ceil_mode"] = bool(rng.random() < 0.5)
        if kind != "lp":
            kwargs["padding"] = _ints(rng, nd, 0, 2)
        if kind == "max":
            kwargs["dilation"] = _ints(rng, nd, 1, 2)
            kwargs["return_indices"] = bool(rng.random() < 0.4)
            if _window_in_padding(shape[-nd:], kwargs):
                # torch gives such a window a -inf, an index past the input, and its gradient to
                # whichever element that index lands on; numdiff the -inf and no gradient.
                kwargs["padding"] = 0
        elif kind == "avg":
            kwargs["count_include_pad"] = bool(rng.random() < 0.5)
            if nd > 1 and rng.random() < 0.3:
                kwargs["divisor_override"] = int(_pick(rng, 1, 3))
        else:
            kwargs["norm_type"] = float(_pick(rng, 1.0, 2.0, 3.0))
    op = f"{kind}_pool{nd}d"
    values = rng.standard_normal(shape)
    if kind == "lp":
        values = np.abs(values) + 0.1  # lp pooling of negatives takes fractional powers of them: NaN in both
    if kind in ("max", "adaptive_max") and rng.random() < 0.2:
        values = np.round(values)  # ties: the first of equal maxima takes the gradient
    inputs = [Input(values, layout(rng))]

    def fn(lib: Any, x: Any) -> Any:
        if kind == "lp":
            rest = dict(kwargs)
            return getattr(_f(lib), op)(x, rest.pop("norm_type"), **rest)
        return getattr(_f(lib), op)(x, **kwargs)

    return f"{op}{list(shape)} {kwargs}", lambda lib: run(lib, fn, inputs)


def _window_in_padding(spatial: tuple, kwargs: dict) -> bool:
    """Whether some window of a max pool holds no input element (the padding and dilation skip it)."""
    def each(key: str, default: Any) -> tuple:
        value = kwargs.get(key, default)
        value = kwargs["kernel_size"] if value is None else value
        return (value,) * len(spatial) if isinstance(value, int) else value

    for n, k, s, p, d in zip(spatial, each("kernel_size", 1), each("stride", None), each("padding", 0), each("dilation", 1)):
        span = n + 2 * p - d * (k - 1) - 1
        count = (span + (s - 1 if kwargs["ceil_mode"] else 0)) // s + 1
        if kwargs["ceil_mode"] and (count - 1) * s >= n + p:
            count -= 1
        if any(all(not 0 <= j * s - p + t * d < n for t in range(k)) for j in range(max(count, 0))):
            return True
    return False


def convolution(rng: np.random.Generator) -> tuple:
    nd, transposed = int(rng.integers(1, 4)), rng.random() < 0.4
    groups = int(_pick(rng, 1, 1, 2, 3))
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    if rng.random() < 0.04:
        cin += 1  # channels that groups do not divide
    shape = _image(rng, nd, cin, 1, 6)
    k = _ints(rng, nd, 1, 3)
    ks = (k,) * nd if isinstance(k, int) else k
    kwargs: dict = {"stride": _ints(rng, nd, 1, 3), "dilation": _ints(rng, nd, 1, 2), "groups": groups}
    if transposed:
        kwargs["padding"] = _ints(rng, nd, 0, 2)
        strides = (kwargs["stride"],) * nd if isinstance(kwargs["stride"], int) else kwargs["stride"]
        kwargs["output_padding"] = int(rng.integers(0, max(strides) + (rng.random() < 0.1)))
        weight_shape = (cin, cout // groups, *ks)
    else:
        kwargs["padding"] = _pick(rng, _ints(rng, nd, 0, 2), "same", "valid")
        if kwargs["padding"] == "same" and rng.random() < 0.8:
            kwargs["stride"] = 1  # torch refuses 'same' with a stride
        weight_shape = (cout, cin // groups if cin % groups == 0 else cin, *ks)
    inputs = [normal(rng, shape), normal(rng, weight_shape)]
    if rng.random() < 0.5:
        inputs.append(normal(rng, (weight_shape[1] * groups if transposed else cout,), "contiguous"))
    op = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"
    return f"{op}{list(shape)} weight {list(weight_shape)} bias {len(inputs) > 2} {kwargs}", lambda lib: run(
        lib, lambda lib, x, w, *b: getattr(_f(lib), op)(x, w, b[0] if b else None, **kwargs), inputs
    )


def conv_module(rng: np.random.Generator) -> tuple:
    """ConvNd modules with padding_mode, their weights set from the drawn values."""
    nd, mode = int(rng.integers(1, 4)), _pick(rng, "zeros", "reflect", "replicate", "circular")
    c, out = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    shape = _image(rng, nd, c, 2, 6)
    k = int(rng.integers(1, 4))
    kwargs = {"padding": _pick(rng, int(rng.integers(0, 3)), "same", "valid"), "dilation": int(rng.integers(1, 3)), "padding_mode": mode}
    inputs = [normal(rng, shape), normal(rng, (out, c, *(k,) * nd), "contiguous", grad=False)]

    def fn(lib: Any, x: Any, w: Any) -> Any:
        module = getattr(lib.nn, f"Conv{nd}d")(c, out, k, bias=False, dtype=x.dtype, **kwargs)
        with lib.no_grad():
            module.weight.copy_(w)
        y = module(x)
        return y

    return f"Conv{nd}d{list(shape)} k {k} {kwargs}", lambda lib: run(lib, fn, inputs)


def interpolate(rng: np.random.Generator) -> tuple:
    nd = int(rng.integers(1, 4))
    modes = ["nearest", "nearest-exact", "area"] + {1: ["linear"], 2: ["bilinear", "bicubic"], 3: ["trilinear"]}[nd]
    mode = _pick(rng, *modes)
    shape = _image(rng, nd, int(rng.integers(1, 3)), 1, 6)
    if len(shape) == nd + 1:
        shape = (1, *shape)  # interpolate has no unbatched form
    kwargs: dict = {"mode": mode}
    if rng.random() < 0.5:
        kwargs["size"] = _pick(rng, int(rng.integers(1, 9)), tuple(int(v) for v in rng.integers(1, 9, nd)))
    else:
        kwargs["scale_factor"] = _pick(rng, float(_pick(rng, 0.5, 1.5, 2.0, 2.7, 0.3)), tuple(float(v) for v in rng.choice([0.6, 1.0, 1.7, 3.0], nd)))
        kwargs["recompute_scale_factor"] = _pick(rng, None, True, False)
    if mode in ("linear", "bilinear", "bicubic", "trilinear") or rng.random() < 0.05:
        kwargs["align_corners"] = _pick(rng, None, True, False)
    # No antialias with an input a pixel wide: torch's antialiased bicubic of (2, 1) to (6, 1) is a
    # constant (0.9 for [0.7, -1.2]), where its (1, 2) to (1, 6) and numdiff's follow the curve.
    if mode in ("bilinear", "bicubic") and rng.random() < 0.3 and min(shape[-2:]) > 1:
        kwargs["antialias"] = True
    inputs = [normal(rng, shape)]
    return f"interpolate{list(shape)} {kwargs}", lambda lib: run(lib, lambda lib, x: _f(lib).interpolate(x, **kwargs), inputs)


def padding(rng: np.random.Generator) -> tuple:
    nd = int(rng.integers(1, 4))
    mode = _pick(rng, "constant", "reflect", "replicate", "circular")
    shape = _image(rng, nd, int(rng.integers(1, 3)), 1, 5)
    dims = nd if mode != "constant" else int(rng.integers(1, len(shape) + 1))
    pads = tuple(int(v) for v in rng.integers(-1 if mode == "constant" else 0, 4, 2 * dims))
    kwargs: dict = {"mode": mode}
    if mode == "constant":
        kwargs["value"] = float(_pick(rng, 0.0, 1.5))
    inputs = [normal(rng, shape)]
    return f"pad{list(shape)} {pads} {kwargs}", lambda lib: run(lib, lambda lib, x: _f(lib).pad(x, pads, **kwargs), inputs)


def rearrange(rng: np.random.Generator) -> tuple:
    """pixel_shuffle, pixel_unshuffle, unfold and fold."""
    op = _pick(rng, "pixel_shuffle", "pixel_unshuffle", "unfold", "fold")
    r = int(rng.integers(1, 4))
    if op == "pixel_shuffle":
        # No empty batch: torch's backward of one returns a gradient of the output's shape and raises.
        shape, call = (*_pick(rng, (), (1,), (2,), (2, 1)), int(rng.integers(1, 3)) * r * r + (rng.random() < 0.05), *rng.integers(1, 4, 2)), lambda lib, x: _f(lib).pixel_shuffle(x, r)
    elif op == "pixel_unshuffle":
        # No empty batch: torch's pixel_unshuffle of one checks the channels as pixel_shuffle's and raises.
        prefix = _pick(rng, (), (1,), (2,), (2, 1))
        shape, call = (*prefix, int(rng.integers(1, 3)), *(r * rng.integers(1, 3, 2))), lambda lib, x: _f(lib).pixel_unshuffle(x, r)
    else:
        kwargs = {"kernel_size": _ints(rng, 2, 1, 3), "dilation": _ints(rng, 2, 1, 2), "padding": _ints(rng, 2, 0, 1), "stride": _ints(rng, 2, 1, 2)}
        if op == "unfold":
            shape = _image(rng, 2, int(rng.integers(1, 3)), 1, 6)
            call = lambda lib, x: _f(lib).unfold(x, **kwargs)  # noqa: E731
        else:
            out = tuple(int(v) for v in rng.integers(1, 6, 2))
            kh, kw = (kwargs["kernel_size"],) * 2 if isinstance(kwargs["kernel_size"], int) else kwargs["kernel_size"]
            blocks = 1
            each = {key: (value,) * 2 if isinstance(value, int) else value for key, value in kwargs.items()}
            for i, size in enumerate(out):
                span = size + 2 * each["padding"][i] - each["dilation"][i] * (each["kernel_size"][i] - 1) - 1
                blocks *= max(span // each["stride"][i] + 1, 0)
            shape = (*_batch_prefix(rng), int(rng.integers(1, 3)) * kh * kw, blocks + (rng.random() < 0.05))
            call = lambda lib, x: _f(lib).fold(x, out, **kwargs)  # noqa: E731
        op = f"{op} {kwargs}"
    shape = tuple(int(s) for s in shape)
    inputs = [normal(rng, shape)]
    return f"{op}{list(shape)} r {r}", lambda lib: run(lib, call, inputs)


def _batch_prefix(rng: np.random.Generator) -> tuple:
    return _pick(rng, (), (1,), (2,), (0,), (2, 1))


def sampling(rng: np.random.Generator) -> tuple:
    nd = int(_pick(rng, 2, 2, 3))
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    align = bool(rng.random() < 0.5)
    if rng.random() < 0.3:
        size = (n, c, *(int(v) for v in rng.integers(1, 5, nd)))
        theta = normal(rng, (n, nd, nd + 1), "contiguous")
        return f"affine_grid theta {list(theta.values.shape)} size {size} align {align}", lambda lib: run(
            lib, lambda lib, t: _f(lib).affine_grid(t, size, align_corners=align), [theta]
        )
    mode = _pick(rng, "bilinear", "nearest", "bicubic") if nd == 2 else _pick(rng, "bilinear", "nearest")
    pad_mode = _pick(rng, "zeros", "border", "reflection")
    shape = (n, c, *(int(v) for v in rng.integers(1, 6, nd)))
    grid_shape = (n, *(int(v) for v in rng.integers(1, 4, nd)), nd)
    grid = Input(rng.uniform(-1.3, 1.3, grid_shape), layout(rng))
    kwargs = {"mode": mode, "padding_mode": pad_mode, "align_corners": align}
    inputs = [normal(rng, shape), grid]
    return f"grid_sample{list(shape)} grid {list(grid_shape)} {kwargs}", lambda lib: run(
        lib, lambda lib, x, g: _f(lib).grid_sample(x, g, **kwargs), inputs
    )


def distances(rng: np.random.Generator) -> tuple:
    op = _pick(rng, "cosine_similarity", "pairwise_distance", "pdist", "cdist", "normalize", "one_hot", "dropout")
    n, d = int(rng.integers(0, 4)), int(rng.integers(1, 4))
    p = float(_pick(rng, 2.0, 1.0, 3.0, 0.5, np.inf))
    if op == "cosine_similarity":
        dim, eps = int(_pick(rng, 1, -1, 0)), float(_pick(rng, 1e-8, 0.5))
        shapes = (_pick(rng, (n, d), (1, d)), (n, d))
        call = lambda lib, x, y: _f(lib).cosine_similarity(x, y, dim=dim, eps=eps)  # noqa: E731
        # Forward only with a large eps: below it torch's gradient is not its forward's derivative
        # (it clamps the norm in place under no_grad); numdiff's is (test_functional_differential).
        grad = eps < 1e-3
        name = f"cosine_similarity {shapes} dim {dim} eps {eps}"
    elif op == "pairwise_distance":
        eps, keepdim = float(_pick(rng, 1e-6, 0.1)), bool(rng.random() < 0.5)
        shapes = (_pick(rng, (n, d), (d,), (1, d)), (n, d))
        call = lambda lib, x, y: _f(lib).pairwise_distance(x, y, p=p, eps=eps, keepdim=keepdim)  # noqa: E731
        name = f"pairwise_distance {shapes} p {p} eps {eps} keepdim {keepdim}"
    elif op == "pdist":
        shapes = ((max(n, 1), d),)  # torch's pdist backward of no rows crashes the process
        call = lambda lib, x: _f(lib).pdist(x, p=p)  # noqa: E731
        name = f"pdist {shapes} p {p}"
    elif op == "cdist":
        batch = _batch_prefix(rng)
        shapes = ((*batch, n, d), (*batch, int(rng.integers(0, 4)), d))
        mode = _pick(rng, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
        call = lambda lib, x, y: lib.cdist(x, y, p=p, compute_mode=mode)  # noqa: E731
        name = f"cdist {shapes} p {p} {mode}"
    elif op == "normalize":
        shapes, dim = ((n, d),), int(rng.integers(-2, 2))
        call = lambda lib, x: _f(lib).normalize(x, p=p, dim=dim)  # noqa: E731
        name = f"normalize {shapes} p {p} dim {dim}"
    elif op == "one_hot":
        index, classes = rng.integers(0, 4, (n, d)), int(_pick(rng, -1, 4, 6, 2))
        return f"one_hot {index.tolist()} num_classes {classes}", lambda lib: _f(lib).one_hot(lib.tensor(index), classes)
    else:
        which = _pick(rng, "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
        shapes, prob = ((n, d, 2, 2),), float(_pick(rng, 0.0, 0.5, 1.0))
        call = lambda lib, x: getattr(_f(lib), which)(x, prob, training=False)  # noqa: E731
        name = f"{which} {shapes} p {prob} eval"
    inputs = [normal(rng, s, grad=op != "cosine_similarity" or grad) for s in shapes]
    return name, lambda lib: run(lib, call, inputs)


def attention(rng: np.random.Generator) -> tuple:
    batch = _pick(rng, (), (2,), (2, 3), (1, 2))
    seq, keys, e, ev = (int(v) for v in rng.integers(1, 5, 4))
    kwargs: dict = {}
    mask = None
    if rng.random() < 0.5:
        kwargs["is_causal"] = True
    elif rng.random() < 0.6:
        mask_shape = _pick(rng, (seq, keys), (*batch, seq, keys), (1, keys), (seq, 1))
        mask = rng.random(mask_shape) < 0.7 if rng.random() < 0.6 else rng.standard_normal(mask_shape)
    if rng.random() < 0.3:
        kwargs["scale"] = float(_pick(rng, 0.1, 1.0, 2.5))
    inputs = [normal(rng, (*batch, seq, e)), normal(rng, (*batch, keys, e)), normal(rng, (*batch, keys, ev))]

    def fn(lib: Any, q: Any, k: Any, v: Any) -> Any:
        m = None if mask is None else lib.tensor(mask, dtype=lib.bool if mask.dtype == bool else q.dtype)
        return _f(lib).scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)

    name = f"scaled_dot_product_attention q {list(inputs[0].values.shape)} k {list(inputs[1].values.shape)} v {list(inputs[2].values.shape)} mask {None if mask is None else (mask.dtype, mask.shape)} {kwargs}"
    return name, lambda lib: run(lib, fn, inputs)


WINDOW_DRAWS = {
    "pooling": pooling, "convolution": convolution, "conv_module": conv_module, "interpolate": interpolate,
    "padding": padding, "rearrange": rearrange, "sampling": sampling, "distances": distances, "attention": attention,
}
