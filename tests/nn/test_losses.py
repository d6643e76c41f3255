"""Functional losses against PyTorch 2.13 (values and gradients), float64 gradchecks, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import numdiff
import numdiff.nn.functional as nnf
from numdiff.autograd import gradcheck
from tests.nn.helpers import assert_close, twins

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["mean", "sum", "none"]

# (input shape, target shape): (N, C), (N, C, d), and unbatched (C,).
CLASS_SHAPES = [((4, 3), (4,)), ((2, 3, 2), (2, 2)), ((3,), ())]


def _class_target(rng, target_shape, classes, with_ignored):
    target = rng.integers(0, classes, size=target_shape)
    if with_ignored and target.ndim:
        target.reshape(-1)[0] = -100
    return target


def _compare_loss(ours_fn, theirs_fn, arrays, rng, rtol=1e-7, atol=1e-10):
    pairs = [twins(a) for a in arrays]
    out = ours_fn(*(p[0] for p in pairs))
    expected = theirs_fn(*(p[1] for p in pairs))
    assert_close(out, expected, rtol, atol, "loss value")
    seed = rng.standard_normal(tuple(out.shape))
    out.backward(numdiff.tensor(seed))
    expected.backward(torch.tensor(seed))
    for i, (mine, theirs) in enumerate(pairs):
        if mine.requires_grad:
            assert_close(mine.grad, theirs.grad, rtol, atol, f"gradient of argument {i}")


# ----------------------------------------------------------------------------- cross entropy
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=["NC", "NCd", "C"])
@pytest.mark.parametrize("with_ignored", [False, True], ids=["all-kept", "one-ignored"])
def test_cross_entropy_with_class_indices_matches_torch(rng, reduction, weighted, label_smoothing, shapes, with_ignored):
    input_shape, target_shape = shapes
    classes = input_shape[0] if len(input_shape) == 1 else input_shape[1]
    logits = rng.standard_normal(input_shape)
    target = _class_target(rng, target_shape, classes, with_ignored)
    weight = rng.uniform(0.5, 2.0, classes) if weighted else None

    def ours(x):
        w = None if weight is None else numdiff.tensor(weight)
        return nnf.cross_entropy(x, numdiff.tensor(target), w, reduction=reduction, label_smoothing=label_smoothing)

    def theirs(x):
        w = None if weight is None else torch.tensor(weight)
        return TF.cross_entropy(x, torch.tensor(target), w, reduction=reduction, label_smoothing=label_smoothing)

    _compare_loss(ours, theirs, (logits,), rng)


def test_cross_entropy_custom_ignore_index_matches_torch(rng):
    logits = rng.standard_normal((5, 4))
    target = np.array([0, 3, 1, 3, 2])

    _compare_loss(
        lambda x: nnf.cross_entropy(x, numdiff.tensor(target), ignore_index=3, label_smoothing=0.1),
        lambda x: TF.cross_entropy(x, torch.tensor(target), ignore_index=3, label_smoothing=0.1),
        (logits,),
        rng,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("input_shape", [(3, 4), (2, 3, 2)])
def test_cross_entropy_with_class_probabilities_matches_torch(rng, reduction, weighted, label_smoothing, input_shape):
    logits = rng.standard_normal(input_shape)
    probabilities = rng.dirichlet(np.ones(input_shape[1]), size=(input_shape[0],) + input_shape[2:])
    probabilities = np.moveaxis(probabilities, -1, 1)
    weight = rng.uniform(0.5, 2.0, input_shape[1]) if weighted else None

    def ours(x, p):
        w = None if weight is None else numdiff.tensor(weight)
        return nnf.cross_entropy(x, p, w, reduction=reduction, label_smoothing=label_smoothing)

    def theirs(x, p):
        w = None if weight is None else torch.tensor(weight)
        return TF.cross_entropy(x, p, w, reduction=reduction, label_smoothing=label_smoothing)

    _compare_loss(ours, theirs, (logits, probabilities), rng)


def test_cross_entropy_mean_with_every_target_ignored_is_nan_like_torch():
    logits = numdiff.zeros(2, 3)
    target = numdiff.tensor([-100, -100])
    with np.errstate(invalid="ignore", divide="ignore"):
        value = nnf.cross_entropy(logits, target)
    assert np.isnan(value.item())
    assert np.isnan(TF.cross_entropy(torch.zeros(2, 3), torch.tensor([-100, -100])).item())


# ----------------------------------------------------------------------------- nll
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=["NC", "NCd", "C"])
@pytest.mark.parametrize("with_ignored", [False, True], ids=["all-kept", "one-ignored"])
def test_nll_loss_matches_torch(rng, reduction, weighted, shapes, with_ignored):
    input_shape, target_shape = shapes
    classes = input_shape[0] if len(input_shape) == 1 else input_shape[1]
    log_probs = np.log(rng.uniform(0.05, 1.0, input_shape))
    target = _class_target(rng, target_shape, classes, with_ignored)
    weight = rng.uniform(0.5, 2.0, classes) if weighted else None

    def ours(x):
        w = None if weight is None else numdiff.tensor(weight)
        return nnf.nll_loss(x, numdiff.tensor(target), w, reduction=reduction)

    def theirs(x):
        w = None if weight is None else torch.tensor(weight)
        return TF.nll_loss(x, torch.tensor(target), w, reduction=reduction)

    _compare_loss(ours, theirs, (log_probs,), rng)


# ----------------------------------------------------------------------------- regression losses
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_mse_and_l1_match_torch(rng, reduction, weighted, name):
    x, y = rng.standard_normal((2, 3, 2))
    weight = rng.uniform(0.5, 2.0, x.shape) if weighted else None

    def ours(a, b):
        return getattr(nnf, name)(a, b, reduction=reduction, weight=None if weight is None else numdiff.tensor(weight))

    def theirs(a, b):
        return getattr(TF, name)(a, b, reduction=reduction, weight=None if weight is None else torch.tensor(weight))

    _compare_loss(ours, theirs, (x, y), rng)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.0])
def test_smooth_l1_matches_torch(rng, reduction, beta):
    x = rng.standard_normal((3, 4)) * 2
    y = rng.standard_normal((3, 4))
    _compare_loss(
        lambda a, b: nnf.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
        lambda a, b: TF.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
        (x, y),
        rng,
    )


def test_mse_loss_warns_when_target_broadcasts(rng):
    x = numdiff.tensor(rng.standard_normal((3, 2)))
    y = numdiff.tensor(rng.standard_normal((2,)))
    with pytest.warns(UserWarning, match=r"target size \(2,\) that is different to the input size \(3, 2\)"):
        value = nnf.mse_loss(x, y)
    assert_close(value, TF.mse_loss(torch.tensor(x.numpy()), torch.tensor(y.numpy()).expand(3, 2)))


def test_legacy_size_average_and_reduce_map_to_reduction(rng):
    x, y = (numdiff.tensor(rng.standard_normal(4)) for _ in range(2))
    with pytest.warns(DeprecationWarning):
        summed = nnf.l1_loss(x, y, size_average=False)
    with pytest.warns(DeprecationWarning):
        unreduced = nnf.l1_loss(x, y, reduce=False)
    assert summed.item() == pytest.approx(nnf.l1_loss(x, y, reduction="sum").item())
    assert unreduced.shape == (4,)


# ----------------------------------------------------------------------------- binary cross entropy
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch(rng, reduction, weighted):
    probabilities = rng.uniform(0.05, 0.95, (3, 2))
    target = rng.uniform(0, 1, (3, 2))
    weight = rng.uniform(0.5, 2.0, (2,)) if weighted else None

    def ours(x, t):
        return nnf.binary_cross_entropy(x, t, None if weight is None else numdiff.tensor(weight), reduction=reduction)

    def theirs(x, t):
        return TF.binary_cross_entropy(x, t, None if weight is None else torch.tensor(weight), reduction=reduction)

    _compare_loss(ours, theirs, (probabilities, target), rng)


def test_binary_cross_entropy_at_exact_zero_and_one_matches_torch():
    probabilities = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    target = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    ours, theirs = twins(probabilities)
    value = nnf.binary_cross_entropy(ours, numdiff.tensor(target), reduction="sum")
    expected = TF.binary_cross_entropy(theirs, torch.tensor(target), reduction="sum")
    assert_close(value, expected)  # each log is clamped at -100, so no inf
    value.backward()
    expected.backward()
    # (x - t) / max(x (1 - x), 1e-12): finite (torch holds its 1e-12 in float32, hence rtol 1e-8)
    assert_close(ours.grad, theirs.grad, rtol=1e-8)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits_matches_torch(rng, reduction, weighted, pos_weighted):
    logits = rng.standard_normal((4, 3)) * 3
    target = rng.uniform(0, 1, (4, 3))
    weight = rng.uniform(0.5, 2.0, (4, 1)) if weighted else None
    pos_weight = rng.uniform(0.5, 3.0, (3,)) if pos_weighted else None

    def ours(x, t):
        return nnf.binary_cross_entropy_with_logits(
            x, t, None if weight is None else numdiff.tensor(weight), reduction=reduction,
            pos_weight=None if pos_weight is None else numdiff.tensor(pos_weight),
        )

    def theirs(x, t):
        return TF.binary_cross_entropy_with_logits(
            x, t, None if weight is None else torch.tensor(weight), reduction=reduction,
            pos_weight=None if pos_weight is None else torch.tensor(pos_weight),
        )

    _compare_loss(ours, theirs, (logits, target), rng)


def test_binary_cross_entropy_with_logits_is_stable_for_huge_logits(rng):
    logits = np.array([-800.0, -30.0, 0.0, 30.0, 800.0])
    target = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    _compare_loss(
        lambda x, t: nnf.binary_cross_entropy_with_logits(x, t, reduction="none"),
        lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction="none"),
        (logits, target),
        rng,
    )


# ----------------------------------------------------------------------------- float64 gradchecks
def _probabilities(rng, shape):
    p = rng.dirichlet(np.ones(shape[1]), size=shape[0])
    return numdiff.tensor(p)


GRADCHECKS = {
    "cross_entropy-weight-smoothing-ignore": lambda rng: (
        lambda x: nnf.cross_entropy(x, numdiff.tensor([0, 2, -100]), numdiff.tensor([1.0, 2.0, 0.5], dtype=numdiff.float64),
                                  label_smoothing=0.2),
        (rng.standard_normal((3, 3)),),
    ),
    "cross_entropy-probabilities": lambda rng: (
        lambda x, p: nnf.cross_entropy(x, p, label_smoothing=0.1),
        (rng.standard_normal((2, 3)), rng.dirichlet(np.ones(3), size=2)),
    ),
    "nll_loss-NCd-weight": lambda rng: (
        lambda x: nnf.nll_loss(x, numdiff.tensor([[0, 1], [2, 1]]), numdiff.tensor([0.5, 1.0, 2.0], dtype=numdiff.float64)),
        (rng.standard_normal((2, 3, 2)),),
    ),
    "mse_loss-weight": lambda rng: (
        lambda x, y: nnf.mse_loss(x, y, weight=numdiff.tensor([[1.0, 2.0, 0.5]], dtype=numdiff.float64)),
        (rng.standard_normal((1, 3)), rng.standard_normal((1, 3))),
    ),
    "l1_loss-sum": lambda rng: (
        lambda x, y: nnf.l1_loss(x, y, reduction="sum"),
        (rng.standard_normal(4), rng.standard_normal(4) + 3.0),
    ),
    "smooth_l1_loss-both-branches": lambda rng: (
        lambda x, y: nnf.smooth_l1_loss(x, y, beta=0.5, reduction="none"),
        (np.array([0.1, -0.2, 1.5, -2.0]), np.zeros(4)),
    ),
    "binary_cross_entropy-weight": lambda rng: (
        lambda x, t: nnf.binary_cross_entropy(x, t, numdiff.tensor([2.0, 0.5], dtype=numdiff.float64)),
        (rng.uniform(0.1, 0.9, (2, 2)), rng.uniform(0, 1, (2, 2))),
    ),
    "binary_cross_entropy_with_logits-pos_weight": lambda rng: (
        lambda x, t: nnf.binary_cross_entropy_with_logits(x, t, pos_weight=numdiff.tensor([3.0, 0.5], dtype=numdiff.float64)),
        (rng.standard_normal((3, 2)), rng.uniform(0, 1, (3, 2))),
    ),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_functional_loss_passes_float64_gradcheck(rng, name):
    fn, arrays = GRADCHECKS[name](rng)
    inputs = tuple(numdiff.tensor(a, requires_grad=True) for a in arrays)
    assert gradcheck(fn, inputs)


def test_gradcheck_catches_a_wrong_loss_gradient(rng):
    """The check above can fail: a loss whose backward is deliberately wrong is caught."""
    x = numdiff.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    target = numdiff.tensor([0, 1])

    def wrong(x):
        return nnf.cross_entropy(x.detach() + x * 0.5, target)  # the value moves with 1.5 x, the gradient sees 0.5 x

    with pytest.raises(numdiff.autograd.GradcheckError):
        gradcheck(wrong, (x,))


# ----------------------------------------------------------------------------- bad input
def test_nll_loss_target_out_of_range_names_the_bound():
    with pytest.raises(IndexError, match=r"target 5 is out of bounds.*\[0, 2\]"):
        nnf.nll_loss(numdiff.zeros(2, 3), numdiff.tensor([0, 5]))


@pytest.mark.parametrize("count", [1, 3, 32, 33, 200])  # either side of the list / NumPy range check
@pytest.mark.parametrize("loss", [nnf.nll_loss, nnf.cross_entropy])
def test_class_targets_out_of_range_are_refused_at_any_batch_size(loss, count):
    target = np.arange(count) % 4
    target[count // 2] = -100  # ignore_index is accepted, wherever it sits
    loss(numdiff.zeros(count, 4), numdiff.tensor(target))
    for bad in (4, -1, -101):
        target[count - 1] = bad
        with pytest.raises(IndexError, match=rf"{loss.__name__}: target {bad} (\(entry {count - 1}\) )?is out of bounds.*\[0, 3\]"):
            loss(numdiff.zeros(count, 4), numdiff.tensor(target))
        with pytest.raises(IndexError, match=rf"target {bad} (\(entry {count - 1}\) )?is out of bounds"):
            loss(numdiff.zeros(count, 4, 2), numdiff.tensor(np.stack([target, target], 1)))


def test_cross_entropy_wrong_target_shape_names_both_shapes():
    with pytest.raises(ValueError, match=r"expected target of shape \(4,\) for input of shape \(4, 3\).*got target of shape \(3,\)"):
        nnf.cross_entropy(numdiff.zeros(4, 3), numdiff.tensor([0, 1, 2]))


def test_cross_entropy_float_target_of_other_shape_is_refused():
    with pytest.raises(ValueError, match=r"input's shape \(4, 3\), got \(4,\)"):
        nnf.cross_entropy(numdiff.zeros(4, 3), numdiff.zeros(4))


def test_cross_entropy_class_weight_of_wrong_size_is_refused():
    with pytest.raises(ValueError, match=r"weight must be a 1-D tensor of 3 elements.*got shape \(2,\)"):
        nnf.cross_entropy(numdiff.zeros(4, 3), numdiff.tensor([0, 1, 2, 0]), weight=numdiff.ones(2))


@pytest.mark.parametrize("smoothing", [-0.1, 1.5])
def test_cross_entropy_label_smoothing_out_of_range_is_refused(smoothing):
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        nnf.cross_entropy(numdiff.zeros(2, 3), numdiff.tensor([0, 1]), label_smoothing=smoothing)


def test_unknown_reduction_is_refused():
    with pytest.raises(ValueError, match="mse_loss: reduction must be 'none', 'mean' or 'sum', got 'avg'"):
        nnf.mse_loss(numdiff.zeros(2), numdiff.zeros(2), reduction="avg")


def test_binary_cross_entropy_refuses_values_outside_zero_one():
    with pytest.raises(ValueError, match="between 0 and 1.*binary_cross_entropy_with_logits"):
        nnf.binary_cross_entropy(numdiff.tensor([0.5, 1.5]), numdiff.tensor([0.0, 1.0]))


@pytest.mark.parametrize("fn", [nnf.binary_cross_entropy, nnf.binary_cross_entropy_with_logits])
def test_binary_losses_refuse_a_target_of_another_shape(fn):
    with pytest.raises(ValueError, match=r"target size \(3,\) must be the same as input size \(3, 1\)"):
        fn(numdiff.full((3, 1), 0.5), numdiff.zeros(3))


def test_integer_logits_are_refused_with_the_dtype():
    with pytest.raises(TypeError, match="floating point.*int64"):
        nnf.cross_entropy(numdiff.tensor([[1, 2]]), numdiff.tensor([0]))


def test_smooth_l1_negative_beta_is_refused():
    with pytest.raises(ValueError, match="beta must be non-negative, got -1"):
        nnf.smooth_l1_loss(numdiff.zeros(2), numdiff.zeros(2), beta=-1)


# ----------------------------------------------------------------------------- drawn shapes
@given(
    batch=st.integers(1, 3),
    classes=st.integers(2, 4),
    extra=st.lists(st.integers(1, 2), max_size=2),
    smoothing=st.sampled_from([0.0, 0.15]),
    reduction=st.sampled_from(REDUCTIONS),
    seed=st.integers(0, 2**16),
)
def test_cross_entropy_matches_torch_on_drawn_shapes(batch, classes, extra, smoothing, reduction, seed):
    rng = np.random.default_rng(seed)
    shape = (batch, classes, *extra)
    logits = rng.standard_normal(shape)
    target = rng.integers(-1, classes, (batch, *extra))  # -1 is the ignore_index here
    weight = rng.uniform(0.5, 2.0, classes)
    if (target == -1).all() and reduction == "mean":
        target.reshape(-1)[0] = 0  # an all-ignored mean is nan in both; keep the comparison meaningful

    def ours(x):
        return nnf.cross_entropy(x, numdiff.tensor(target), numdiff.tensor(weight), ignore_index=-1,
                                 reduction=reduction, label_smoothing=smoothing)

    def theirs(x):
        return TF.cross_entropy(x, torch.tensor(target), torch.tensor(weight), ignore_index=-1,
                                reduction=reduction, label_smoothing=smoothing)

    _compare_loss(ours, theirs, (logits,), rng)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape, smoothing, weighted", [((0, 0), 0.0, False), ((3, 0), 0.0, False),
                                                         ((3, 0), 0.1, False), ((3, 0), 0.0, True), ((0, 5), 0.0, False)])
def test_losses_over_zero_classes_or_entries_match_torch(loss, reduction, shape, smoothing, weighted):
    """No classes (every target ignore_index) or no entries: torch's nan, 0 or empty result and a
    zero gradient of the input's shape, where max over zero classes leaked NumPy's ValueError."""
    target = [-100] * shape[0]
    kwargs = {"reduction": reduction}
    if loss == "cross_entropy" and smoothing:
        kwargs["label_smoothing"] = smoothing
    weights = ({"weight": numdiff.zeros(shape[1])}, {"weight": torch.zeros(shape[1])}) if weighted else ({}, {})
    x = numdiff.zeros(*shape, requires_grad=True)
    got = getattr(numdiff.nn.functional, loss)(x, numdiff.tensor(target, dtype=numdiff.int64), **kwargs, **weights[0])
    expected = getattr(torch.nn.functional, loss)(
        torch.zeros(*shape), torch.tensor(target, dtype=torch.int64), **kwargs, **weights[1])
    np.testing.assert_array_equal(got.detach().numpy(), expected.numpy())
    got.sum().backward()
    assert x.grad.shape == x.shape and not x.grad.numpy().any()
