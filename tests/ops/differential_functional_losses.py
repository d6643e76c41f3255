"""Drawn calls of the losses, normalizations and embeddings of torch.nn.functional (the frame is in
differential_functional.py): each draw returns a name that spells the call and a case of the
library. Ranges reach past the valid ones so that bad inputs are drawn as well."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.ops.differential_functional import Input, layout, normal, run


def _pick(rng: np.random.Generator, *options: Any) -> Any:
    return options[int(rng.integers(len(options)))]


def _batch(rng: np.random.Generator, extra_dims: int = 0) -> tuple:
    """N (0 to 3; 0 rarely), then `extra_dims` sizes of 1 to 3."""
    n = int(_pick(rng, 0, 1, 2, 3, 3))
    return (n, *(int(s) for s in rng.integers(1, 4, extra_dims)))


def _f(lib: Any) -> Any:
    return lib.nn.functional


def cross_entropy(rng: np.random.Generator) -> tuple:
    c, red, op = int(rng.integers(1, 5)), _pick(rng, "mean", "sum", "none"), _pick(rng, "cross_entropy", "nll_loss")
    shape = _batch(rng, int(rng.integers(0, 3)))
    shape = (shape[0], c, *shape[1:])
    kwargs: dict = {"reduction": red}
    if rng.random() < 0.2:
        shape = (c,)  # one unbatched sample
    probabilities = op == "cross_entropy" and rng.random() < 0.3
    if probabilities:
        target = rng.dirichlet(np.ones(c), shape[:1] + shape[2:]).astype(np.float64) if len(shape) > 1 else rng.dirichlet(np.ones(c))
        target = np.moveaxis(target, -1, 1) if len(shape) > 1 else target
    else:
        target = rng.integers(0, c + (rng.random() < 0.05), shape[:1] + shape[2:] if len(shape) > 1 else ())
        if rng.random() < 0.5:
            kwargs["ignore_index"] = int(_pick(rng, -100, 0, c - 1, -1))
            target = np.where(rng.random(target.shape) < 0.3, kwargs["ignore_index"], target)
    if rng.random() < 0.4:
        kwargs["weight"] = rng.uniform(0.1, 2.0, c + (rng.random() < 0.05))
    if op == "cross_entropy" and rng.random() < 0.5:
        kwargs["label_smoothing"] = float(_pick(rng, 0.1, 0.25, 1.0))
    inputs = [normal(rng, shape)]
    if probabilities and rng.random() < 0.5:
        inputs.append(Input(target, "contiguous", grad=True))

    def fn(lib: Any, x: Any, *maybe_target: Any) -> Any:
        t = maybe_target[0] if maybe_target else lib.tensor(target, dtype=x.dtype if probabilities else lib.int64)
        extra = {k: (lib.tensor(v, dtype=x.dtype) if k == "weight" else v) for k, v in kwargs.items()}
        return getattr(_f(lib), op)(x, t, **extra)

    return f"{op}{list(shape)} {'probabilities ' if probabilities else ''}{kwargs}", lambda lib: run(lib, fn, inputs)


def binary_cross_entropy(rng: np.random.Generator) -> tuple:
    shape, red = _batch(rng, int(rng.integers(0, 3))), _pick(rng, "mean", "sum", "none")
    logits = rng.random() < 0.6
    trailing = lambda: tuple(s if rng.random() < 0.6 else 1 for s in shape[len(shape) - int(rng.integers(0, len(shape) + 1)):])  # noqa: E731
    weight = rng.uniform(0.1, 2.0, trailing()) if rng.random() < 0.4 else None
    pos_weight = rng.uniform(0.1, 3.0, trailing()) if logits and rng.random() < 0.5 else None
    target = rng.random(shape) if rng.random() < 0.5 else (rng.random(shape) < 0.5).astype(np.float64)
    values = rng.standard_normal(shape) * 3 if logits else rng.uniform(0.02, 0.98, shape)
    inputs = [Input(values, layout(rng)), Input(target, layout(rng), grad=rng.random() < 0.4)]

    def fn(lib: Any, x: Any, t: Any) -> Any:
        w = None if weight is None else lib.tensor(weight, dtype=x.dtype)
        if logits:
            pw = None if pos_weight is None else lib.tensor(pos_weight, dtype=x.dtype)
            return _f(lib).binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw, reduction=red)
        return _f(lib).binary_cross_entropy(x, t, weight=w, reduction=red)

    shapes = f"weight {None if weight is None else weight.shape} pos_weight {None if pos_weight is None else pos_weight.shape}"
    return f"{'bce_with_logits' if logits else 'bce'}{list(shape)} {shapes} {red}", lambda lib: run(lib, fn, inputs)


def regression(rng: np.random.Generator) -> tuple:
    """Pointwise losses of an input and a target, the target broadcast at times."""
    shape, red = _batch(rng, int(rng.integers(0, 3))), _pick(rng, "mean", "sum", "none")
    op = _pick(rng, "huber_loss", "smooth_l1_loss", "l1_loss", "mse_loss", "kl_div", "poisson_nll_loss", "soft_margin_loss")
    kwargs: dict = {"reduction": red if op != "kl_div" else _pick(rng, "mean", "sum", "none", "batchmean")}
    other = shape if rng.random() < 0.8 else shape[1:]
    target = rng.standard_normal(other)
    if op == "huber_loss":
        kwargs["delta"] = float(_pick(rng, 1.0, 0.5, 2.0))
    elif op == "smooth_l1_loss":
        kwargs["beta"] = float(_pick(rng, 1.0, 0.0, 0.3))
    elif op == "kl_div":
        kwargs["log_target"] = bool(rng.random() < 0.5)
        target = target if kwargs["log_target"] else np.abs(target) * (rng.random(other) < 0.8)
    elif op == "poisson_nll_loss":
        kwargs.update(log_input=bool(rng.random() < 0.5), full=bool(rng.random() < 0.5), eps=float(_pick(rng, 1e-8, 0.1)))
        # With full=True no target 0: torch's gradient there is NaN, 0 times its masked Stirling term's
        # infinite derivative, where the term is a constant 0 and numdiff's gradient finite.
        target = rng.integers(int(kwargs["full"]), 5, other).astype(np.float64)
    elif op == "soft_margin_loss":
        target = np.sign(target) + (target == 0)
    values = rng.standard_normal(shape)
    if op == "poisson_nll_loss" and not kwargs["log_input"]:
        values = np.abs(values) + 0.05
    inputs = [Input(values, layout(rng)), Input(target, layout(rng), grad=op not in ("soft_margin_loss",) and rng.random() < 0.5)]
    return f"{op}{list(shape)} target {list(other)} {kwargs}", lambda lib: run(lib, lambda lib, x, t: getattr(_f(lib), op)(x, t, **kwargs), inputs)


def gaussian_nll(rng: np.random.Generator) -> tuple:
    shape, red = _batch(rng, int(rng.integers(1, 3))), _pick(rng, "mean", "sum", "none")
    var_shape = _pick(rng, shape, (*shape[:-1], 1), shape[:-1], (*shape[:-1], 2))
    kwargs = {"full": bool(rng.random() < 0.5), "eps": float(_pick(rng, 1e-6, 0.5)), "reduction": red}
    variance = np.abs(rng.standard_normal(var_shape)) * (rng.random(var_shape) < 0.9)
    if rng.random() < 0.03:
        variance = -variance - 1  # a negative variance: torch refuses it
    inputs = [normal(rng, shape), normal(rng, shape), Input(variance, layout(rng))]
    return f"gaussian_nll_loss{list(shape)} var {list(var_shape)} {kwargs}", lambda lib: run(
        lib, lambda lib, x, t, v: _f(lib).gaussian_nll_loss(x, t, v, **kwargs), inputs
    )


def margin(rng: np.random.Generator) -> tuple:
    n, c, red = int(_pick(rng, 0, 1, 2, 3, 4)), int(rng.integers(1, 5)), _pick(rng, "mean", "sum", "none")
    op = _pick(rng, "multi_margin_loss", "multilabel_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
               "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "multilabel_soft_margin_loss")
    unbatched = rng.random() < 0.15
    shape = (c,) if unbatched else (n, c)
    kwargs: dict = {"reduction": red}
    inputs = [normal(rng, shape)]
    if op == "multi_margin_loss":
        if n == 0:
            kwargs["reduction"] = "none"  # torch's sum or mean over no samples is whatever its memory held
        kwargs.update(p=int(_pick(rng, 1, 2, 3)), margin=float(_pick(rng, 1.0, 0.5, 2.0)))
        target = rng.integers(0, c + (rng.random() < 0.05), () if unbatched else (n,))
        weight = rng.uniform(0.1, 2.0, c) if rng.random() < 0.4 else None
        call = lambda lib, x: _f(lib).multi_margin_loss(  # noqa: E731
            x, lib.tensor(target), weight=None if weight is None else lib.tensor(weight, dtype=x.dtype), **kwargs
        )
    elif op == "multilabel_margin_loss":
        kwargs["reduction"] = "none" if n == 0 else red  # as multi_margin_loss's: torch's is its memory's
        target = rng.integers(-1, c, shape)
        call = lambda lib, x: _f(lib).multilabel_margin_loss(x, lib.tensor(target), **kwargs)  # noqa: E731
    elif op == "multilabel_soft_margin_loss":
        target, weight = (rng.random(shape) < 0.5).astype(np.float64), rng.uniform(0.1, 2, c) if rng.random() < 0.4 else None
        call = lambda lib, x: _f(lib).multilabel_soft_margin_loss(  # noqa: E731
            x, lib.tensor(target, dtype=x.dtype), weight=None if weight is None else lib.tensor(weight, dtype=x.dtype), **kwargs
        )
    elif op in ("margin_ranking_loss", "hinge_embedding_loss"):
        kwargs["margin"] = float(_pick(rng, 0.0, 0.5, 1.0))
        target = _pick(rng, 1.0, -1.0) * np.sign(rng.standard_normal(shape) + 1e-9)
        inputs.append(normal(rng, shape))
        if op == "margin_ranking_loss":
            call = lambda lib, x, y: _f(lib).margin_ranking_loss(x, y, lib.tensor(target, dtype=x.dtype), **kwargs)  # noqa: E731
        else:
            call = lambda lib, x, y: _f(lib).hinge_embedding_loss(x * y, lib.tensor(target, dtype=x.dtype), **kwargs)  # noqa: E731
    elif op == "cosine_embedding_loss":
        kwargs["margin"] = float(_pick(rng, 0.0, 0.3, -0.2))
        target = np.sign(rng.standard_normal(() if unbatched else (n,)) + 1e-9).astype(np.int64)
        inputs.append(normal(rng, shape))
        call = lambda lib, x, y: _f(lib).cosine_embedding_loss(x, y, lib.tensor(target), **kwargs)  # noqa: E731
    else:
        kwargs.update(margin=float(_pick(rng, 1.0, 0.2)), swap=bool(rng.random() < 0.5))
        if op == "triplet_margin_loss":
            kwargs.update(p=float(_pick(rng, 2.0, 1.0, 3.0)), eps=float(_pick(rng, 1e-6, 0.1)))
        inputs += [normal(rng, shape), normal(rng, shape)]
        call = lambda lib, a, p, q: getattr(_f(lib), op)(a, p, q, **kwargs)  # noqa: E731
    return f"{op}{list(shape)} {kwargs}", lambda lib: run(lib, call, inputs)


def ctc(rng: np.random.Generator) -> tuple:
    t, n, c = int(rng.integers(1, 7)), int(rng.integers(1, 4)), int(rng.integers(2, 5))
    blank, red, zero_infinity = int(rng.integers(0, c)), _pick(rng, "mean", "sum", "none"), bool(rng.random() < 0.5)
    s = int(rng.integers(0, 4))
    labels = [label for label in range(c) if label != blank]
    target_lengths = rng.integers(0, s + 1, n)
    input_lengths = rng.integers(max(0, t - 2), t + 1, n)
    padded = rng.choice(labels, (n, s)) if s else np.zeros((n, 0), dtype=np.int64)
    concatenated = rng.random() < 0.4
    targets = np.concatenate([padded[i, : target_lengths[i]] for i in range(n)]) if concatenated else padded
    unbatched = n == 1 and rng.random() < 0.3
    shape = (t, c) if unbatched else (t, n, c)

    def fn(lib: Any, x: Any) -> Any:
        lp = x.log_softmax(-1)
        tg = lib.tensor(targets[0] if unbatched and not concatenated else targets, dtype=lib.int64)
        il = lib.tensor(input_lengths[0]) if unbatched else lib.tensor(input_lengths)
        tl = lib.tensor(target_lengths[0]) if unbatched else lib.tensor(target_lengths)
        return _f(lib).ctc_loss(lp, tg, il, tl, blank=blank, reduction=red, zero_infinity=zero_infinity)

    name = f"ctc_loss{list(shape)} S {s} lengths {input_lengths.tolist()}/{target_lengths.tolist()} blank {blank} {red} zero_inf {zero_infinity} concat {concatenated}"
    inputs = [normal(rng, shape)]
    return name, lambda lib: run(lib, fn, inputs)


def batch_norm(rng: np.random.Generator) -> tuple:
    """Functional batch/instance norm with running statistics, which the call updates in place and the
    case returns too."""
    spatial = int(rng.integers(0, 4))
    shape = (int(_pick(rng, 1, 2, 3, 4)), int(rng.integers(1, 4)), *(int(s) for s in rng.integers(1, 4, spatial)))
    c, op = shape[1], _pick(rng, "batch_norm", "instance_norm")
    training, momentum, eps = bool(rng.random() < 0.6), float(_pick(rng, 0.1, 0.0, 1.0, 0.5)), float(_pick(rng, 1e-5, 0.1))
    running = rng.random() < 0.7
    mean, var = rng.standard_normal(c), rng.uniform(0.1, 2, c)
    inputs = [normal(rng, shape)]
    affine = rng.random() < 0.5
    if affine:
        inputs += [normal(rng, (c,), "contiguous"), normal(rng, (c,), "contiguous")]

    def fn(lib: Any, x: Any, *wb: Any) -> Any:
        rm, rv = (lib.tensor(mean, dtype=x.dtype), lib.tensor(var, dtype=x.dtype)) if running else (None, None)
        w, b = wb if wb else (None, None)
        if op == "batch_norm":
            out = _f(lib).batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
        else:
            out = _f(lib).instance_norm(x, rm, rv, w, b, use_input_stats=training, momentum=momentum, eps=eps)
        return (out, rm, rv) if running else out

    name = f"{op}{list(shape)} training {training} running {running} affine {affine} momentum {momentum} eps {eps}"
    return name, lambda lib: run(lib, fn, inputs)


def norm_module(rng: np.random.Generator) -> tuple:
    """BatchNormNd / InstanceNormNd modules: two training steps, then one in eval, with the buffers."""
    nd = int(rng.integers(1, 4))
    kind = _pick(rng, "BatchNorm", "InstanceNorm")
    c = int(rng.integers(1, 4))
    spatial = tuple(int(s) for s in rng.integers(1, 4, nd if kind == "InstanceNorm" or nd > 1 else int(rng.integers(0, 2))))
    shape = (int(_pick(rng, 1, 2, 3)), c, *spatial)
    kwargs = {"affine": bool(rng.random() < 0.5), "track_running_stats": bool(rng.random() < 0.6), "momentum": _pick(rng, 0.1, None, 0.7)}
    cls = f"{kind}{nd}d"
    inputs = [normal(rng, shape), normal(rng, shape)]

    def fn(lib: Any, x: Any, y: Any) -> Any:
        module = getattr(lib.nn, cls)(c, dtype=x.dtype, **kwargs)
        first, second = module(x), module(y * 2 + 1)
        module.eval()
        third = module(x)
        return [first, second, third, *(b.float() if b.dtype == lib.int64 else b for b in module.buffers())]

    return f"{cls}{list(shape)} {kwargs}", lambda lib: run(lib, fn, inputs)


def norm_layers(rng: np.random.Generator) -> tuple:
    op = _pick(rng, "layer_norm", "group_norm", "local_response_norm", "rms_norm", "normalize")
    shape = _batch(rng, int(rng.integers(1, 4)))
    shape = (max(shape[0], 1), *shape[1:])
    kwargs: dict = {}
    inputs = [normal(rng, shape)]
    if op in ("layer_norm", "rms_norm"):
        kwargs["normalized_shape"] = shape[len(shape) - int(rng.integers(1, len(shape) + 1)):]
        if rng.random() < 0.05:
            kwargs["normalized_shape"] = (shape[-1] + 1,)
        if rng.random() < 0.5:
            inputs.append(normal(rng, kwargs["normalized_shape"], "contiguous"))
            if op == "layer_norm" and rng.random() < 0.5:
                inputs.append(normal(rng, kwargs["normalized_shape"], "contiguous"))
        kwargs["eps"] = float(_pick(rng, 1e-5, 0.1))
    elif op == "group_norm":
        kwargs.update(num_groups=int(_pick(rng, 1, 2, 3)), eps=float(_pick(rng, 1e-5, 0.1)))
        if shape[1] == kwargs["num_groups"] and int(np.prod(shape[2:])) == 1:
            # Groups of one value: torch's float32 output is off its bias by up to 1e-2 (its variance
            # rounds to a few ulps, divided by sqrt(eps)); numdiff's is the bias. float64 agrees.
            kwargs["num_groups"] = 1
        if rng.random() < 0.5:
            inputs += [normal(rng, (shape[1],), "contiguous"), normal(rng, (shape[1],), "contiguous")]
    elif op == "local_response_norm":
        kwargs.update(size=int(rng.integers(1, 5)), alpha=float(_pick(rng, 1e-4, 0.5)), beta=float(_pick(rng, 0.75, 1.5)), k=float(_pick(rng, 1.0, 2.0)))
    else:
        kwargs.update(p=float(_pick(rng, 2.0, 1.0, 3.0, np.inf)), dim=int(rng.integers(-len(shape), len(shape))), eps=float(_pick(rng, 1e-12, 0.5)))

    def fn(lib: Any, x: Any, *affine: Any) -> Any:
        if op in ("layer_norm", "rms_norm"):
            rest = dict(kwargs)
            return getattr(_f(lib), op)(x, rest.pop("normalized_shape"), *affine, **rest)
        if op == "group_norm":
            return _f(lib).group_norm(x, kwargs["num_groups"], *affine, eps=kwargs["eps"])
        return getattr(_f(lib), op)(x, **kwargs)

    return f"{op}{list(shape)} {kwargs} affine {len(inputs) - 1}", lambda lib: run(lib, fn, inputs)


def embedding(rng: np.random.Generator) -> tuple:
    rows, dim = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    bag = rng.random() < 0.5
    index_shape = (int(rng.integers(0, 4)), int(rng.integers(1, 4))) if rng.random() < 0.5 else (int(rng.integers(0, 7)),)
    index = rng.integers(-(rng.random() < 0.03), rows + (rng.random() < 0.03), index_shape)
    kwargs: dict = {}
    if rng.random() < 0.4:
        kwargs["padding_idx"] = int(_pick(rng, 0, rows - 1, -1))
    if rng.random() < 0.3:
        kwargs.update(max_norm=float(_pick(rng, 1.0, 0.5)), norm_type=float(_pick(rng, 2.0, 1.0)))
    weight = normal(rng, (rows, dim), "contiguous")
    inputs = [weight]
    if not bag:
        kwargs["scale_grad_by_freq"] = bool(rng.random() < 0.3)
        fn = lambda lib, w: (_f(lib).embedding(lib.tensor(index), w, **kwargs), w.detach().clone())  # noqa: E731
        return f"embedding index {index.tolist()} rows {rows} {kwargs}", lambda lib: run(lib, fn, inputs)
    mode = _pick(rng, "sum", "mean", "max")
    kwargs["mode"] = mode
    offsets = None
    if index.ndim == 1:
        offsets = np.sort(rng.integers(0, index.size + 1, int(rng.integers(1, 4))))
        offsets[0] = 0 if rng.random() < 0.95 else offsets[0]
        kwargs["include_last_offset"] = bool(rng.random() < 0.3)
        if kwargs["include_last_offset"]:
            # CSR's row pointers, ending at the input's length: torch reads any other last offset
            # inconsistently, and a lone one out of bounds (it crashes); numdiff refuses both.
            offsets = np.append(offsets, index.size)
    if mode == "sum" and rng.random() < 0.5:
        inputs.append(Input(rng.standard_normal(index.shape), "contiguous"))

    def fn(lib: Any, w: Any, *per_sample: Any) -> Any:
        off = None if offsets is None else lib.tensor(offsets)
        extra = {"per_sample_weights": per_sample[0]} if per_sample else {}
        return _f(lib).embedding_bag(lib.tensor(index), w, off, **kwargs, **extra), w.detach().clone()

    name = f"embedding_bag index {index.tolist()} offsets {None if offsets is None else offsets.tolist()} rows {rows} {kwargs} per_sample {len(inputs) > 1}"
    return name, lambda lib: run(lib, fn, inputs)


LOSS_DRAWS = {
    "cross_entropy": cross_entropy, "bce": binary_cross_entropy, "regression": regression, "gaussian_nll": gaussian_nll,
    "margin": margin, "ctc": ctc, "batch_norm": batch_norm, "norm_module": norm_module, "norm_layers": norm_layers,
    "embedding": embedding,
}
