"""huber, kl_div, margin_ranking, hinge_embedding, cosine_embedding, triplet_margin, poisson_nll,
gaussian_nll, soft_margin and multilabel_soft_margin losses (and their modules) against PyTorch 2.13:
values and gradients, float64 gradchecks, module reprs and state dicts, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
import numdiff.nn.functional as nnf
from numdiff.autograd import gradcheck
from tests.nn.helpers import assert_close, twins

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["mean", "sum", "none"]


def _signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _case(name, rng):
    """(kwargs without reduction, arrays with grad, extra arrays without grad) of one loss."""
    x = rng.standard_normal((4, 5))
    if name == "huber_loss":
        return {"delta": 0.7}, [x * 2, rng.standard_normal((4, 5))], []
    if name == "kl_div":
        return {}, [np.log(rng.dirichlet(np.ones(5), 4)), rng.dirichlet(np.ones(5), 4)], []
    if name == "kl_div_log_target":
        return {"log_target": True}, [np.log(rng.dirichlet(np.ones(5), 4)), np.log(rng.dirichlet(np.ones(5), 4))], []
    if name == "margin_ranking_loss":
        return {"margin": 0.3}, [rng.standard_normal(6), rng.standard_normal(6)], [_signs(rng, 6)]
    if name == "hinge_embedding_loss":
        target = _signs(rng, (4, 5))
        target[0, :2] = [0.5, 2.0]  # neither 1 nor -1: both terms, as PyTorch
        return {"margin": 1.5}, [np.abs(x) * 2], [target]
    if name == "cosine_embedding_loss":
        return {"margin": 0.2}, [x, rng.standard_normal((4, 5))], [_signs(rng, 4)]
    if name.startswith("triplet_margin_loss"):
        p = {"triplet_margin_loss": 2.0, "triplet_margin_loss_p1": 1.0, "triplet_margin_loss_p3": 3.0}[name]
        arrays = [x, rng.standard_normal((4, 5)), rng.standard_normal((4, 5))]
        return {"margin": 1.5, "p": p, "swap": True}, arrays, []
    if name == "poisson_nll_loss":
        return {"full": True}, [x], [rng.poisson(2.0, (4, 5)).astype(float)]
    if name == "poisson_nll_loss_rate":
        return {"log_input": False, "full": True, "eps": 1e-6}, [rng.uniform(0.2, 3.0, (4, 5))], [rng.poisson(2.0, (4, 5)).astype(float)]
    if name == "gaussian_nll_loss":
        return {"full": True}, [x, rng.standard_normal((4, 5)), rng.uniform(0.2, 2.0, (4, 5))], []
    if name == "soft_margin_loss":
        return {}, [x * 3], [_signs(rng, (4, 5))]
    if name == "multilabel_soft_margin_loss":
        return {}, [x * 3], [(rng.random((4, 5)) < 0.5).astype(float)]
    raise AssertionError(name)


CASES = [
    "huber_loss", "kl_div", "kl_div_log_target", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_loss_p1", "triplet_margin_loss_p3", "poisson_nll_loss", "poisson_nll_loss_rate",
    "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
]


def _function(name):
    base = name.replace("_log_target", "").replace("_rate", "")
    return base.split("_p")[0] if base.startswith("triplet") else base


def _call(lib_functional, name, tensors, kwargs, reduction):
    fn = getattr(lib_functional, _function(name))
    return fn(*tensors, reduction=reduction, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", CASES)
def test_loss_value_and_gradients_match_torch(rng, name, reduction):
    kwargs, with_grad, without_grad = _case(name, rng)
    pairs = [twins(a) for a in with_grad] + [twins(a, requires_grad=False) for a in without_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's 'mean' warning, in both libraries
        out = _call(nnf, name, [p[0] for p in pairs], kwargs, reduction)
        expected = _call(TF, name, [p[1] for p in pairs], kwargs, reduction)
    assert_close(out, expected, 1e-10, 1e-12, f"{name} value")
    seed = rng.standard_normal(tuple(out.shape))
    out.backward(numdiff.tensor(seed))
    expected.backward(torch.tensor(seed))
    for i, (mine, theirs) in enumerate(pairs[: len(with_grad)]):
        assert_close(mine.grad, theirs.grad, 1e-9, 1e-12, f"{name} gradient of argument {i}")


@pytest.mark.parametrize("name", CASES)
def test_loss_passes_float64_gradcheck(rng, name):
    kwargs, with_grad, without_grad = _case(name, rng)
    inputs = tuple(numdiff.tensor(a, requires_grad=True) for a in with_grad)
    constants = [numdiff.tensor(a) for a in without_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda *xs: _call(nnf, name, [*xs, *constants], kwargs, "sum"), inputs)


def test_kl_div_batchmean_divides_by_the_batch_size(rng):
    log_probs, target = np.log(rng.dirichlet(np.ones(3), 5)), rng.dirichlet(np.ones(3), 5)
    ours = nnf.kl_div(numdiff.tensor(log_probs), numdiff.tensor(target), reduction="batchmean")
    theirs = TF.kl_div(torch.tensor(log_probs), torch.tensor(target), reduction="batchmean")
    assert_close(ours, theirs, 1e-12, 0, "batchmean")
    assert_close(nnf.kl_div(numdiff.tensor(0.3), numdiff.tensor(0.2), reduction="batchmean"),
                 TF.kl_div(torch.tensor(0.3), torch.tensor(0.2), reduction="batchmean"), 1e-12, 0, "0-d")  # fmt: skip


def test_kl_div_is_zero_and_finite_where_target_is_zero():
    x = numdiff.tensor([-1.0, -2.0], requires_grad=True)
    loss = nnf.kl_div(x, numdiff.tensor([0.0, 1.0]), reduction="sum")
    loss.backward()
    assert float(loss) == pytest.approx(2.0)
    np.testing.assert_array_equal(x.grad.numpy(), [-0.0, -1.0])


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="batchmean"):
        nnf.kl_div(numdiff.zeros(2), numdiff.ones(2))


def test_soft_margin_loss_is_finite_for_large_margins():
    x = numdiff.tensor([-800.0, 800.0], requires_grad=True)
    loss = nnf.soft_margin_loss(x, numdiff.tensor([1.0, 1.0]), reduction="sum")
    loss.backward()
    assert float(loss) == pytest.approx(800.0)
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0])


@pytest.mark.parametrize("var_shape", [(4, 5), (4,), (4, 1), (1, 5), "float"])
def test_gaussian_nll_loss_variance_shapes_match_torch(rng, var_shape):
    mean, target = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    if var_shape == "float":
        ours = nnf.gaussian_nll_loss(numdiff.tensor(mean), numdiff.tensor(target), 0.5)
        theirs = TF.gaussian_nll_loss(torch.tensor(mean), torch.tensor(target), 0.5)
        assert_close(ours, theirs, 1e-12, 0, "float var")
        return
    var = rng.uniform(0.1, 2.0, var_shape)
    var.reshape(-1)[0] = 1e-9  # below eps: clamped in value, gradient passed through as in PyTorch
    pairs = [twins(mean), twins(target), twins(var)]
    out = nnf.gaussian_nll_loss(*(p[0] for p in pairs), reduction="sum")
    expected = TF.gaussian_nll_loss(*(p[1] for p in pairs), reduction="sum")
    assert_close(out, expected, 1e-12, 0, "value")
    out.backward()
    expected.backward()
    for i, (mine, theirs) in enumerate(pairs):
        assert_close(mine.grad, theirs.grad, 1e-10, 1e-12, f"gradient {i}")


def test_huber_loss_weight_matches_torch(rng):
    x, t, w = rng.standard_normal((3, 4)) * 2, rng.standard_normal((3, 4)), rng.random((3, 4))
    for reduction in REDUCTIONS:
        ours = nnf.huber_loss(numdiff.tensor(x), numdiff.tensor(t), reduction, 0.5, numdiff.tensor(w))
        theirs = TF.huber_loss(torch.tensor(x), torch.tensor(t), reduction, 0.5, torch.tensor(w))
        assert_close(ours, theirs, 1e-12, 0, reduction)


def test_multilabel_soft_margin_class_weight_and_unbatched_input_match_torch(rng):
    x, y, w = rng.standard_normal((3, 4)), (rng.random((3, 4)) < 0.5) * 1.0, rng.random(4)
    ours = nnf.multilabel_soft_margin_loss(numdiff.tensor(x), numdiff.tensor(y), numdiff.tensor(w), reduction="none")
    theirs = TF.multilabel_soft_margin_loss(torch.tensor(x), torch.tensor(y), torch.tensor(w), reduction="none")
    assert_close(ours, theirs, 1e-12, 0, "weighted")
    ours = nnf.multilabel_soft_margin_loss(numdiff.tensor(x[0]), numdiff.tensor(y[0]))
    assert_close(ours, TF.multilabel_soft_margin_loss(torch.tensor(x[0]), torch.tensor(y[0])), 1e-12, 0, "1-d")


def test_unbatched_embedding_losses_match_torch(rng):
    a, b, c = (rng.standard_normal(6) for _ in range(3))
    ours = nnf.cosine_embedding_loss(numdiff.tensor(a), numdiff.tensor(b), numdiff.tensor(-1.0), margin=-0.5)
    theirs = TF.cosine_embedding_loss(torch.tensor(a), torch.tensor(b), torch.tensor(-1.0), margin=-0.5)
    assert_close(ours, theirs, 1e-12, 0, "cosine 0-d target")
    ours = nnf.triplet_margin_loss(numdiff.tensor(a), numdiff.tensor(b), numdiff.tensor(c), p=np.inf)
    assert_close(ours, TF.triplet_margin_loss(torch.tensor(a), torch.tensor(b), torch.tensor(c), p=np.inf), 1e-12, 0, "1-d")
    ours = nnf.pairwise_distance(numdiff.tensor(a), numdiff.tensor(b), p=1.5, keepdim=True)
    assert_close(ours, TF.pairwise_distance(torch.tensor(a), torch.tensor(b), p=1.5, keepdim=True), 1e-12, 0, "pd")


# ----------------------------------------------------------------------------- modules
MODULES = [
    ("HuberLoss", {"delta": 0.5}, "huber_loss"),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": False}, "kl_div"),
    ("KLDivLoss", {"reduction": "sum", "log_target": True}, "kl_div_log_target"),
    ("MarginRankingLoss", {"margin": 0.3}, "margin_ranking_loss"),
    ("HingeEmbeddingLoss", {"margin": 1.5}, "hinge_embedding_loss"),
    ("CosineEmbeddingLoss", {"margin": 0.2}, "cosine_embedding_loss"),
    ("TripletMarginLoss", {"margin": 1.5, "p": 2.0, "swap": True}, "triplet_margin_loss"),
    ("PoissonNLLLoss", {"full": True}, "poisson_nll_loss"),
    ("PoissonNLLLoss", {"log_input": False, "eps": 1e-6}, "poisson_nll_loss_rate"),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3}, "gaussian_nll_loss"),
    ("SoftMarginLoss", {"reduction": "sum"}, "soft_margin_loss"),
    ("MultiLabelSoftMarginLoss", {}, "multilabel_soft_margin_loss"),
]


@pytest.mark.parametrize("module_name, kwargs, case", MODULES, ids=[f"{m[0]}-{m[2]}" for m in MODULES])
def test_loss_module_matches_torch_module(rng, module_name, kwargs, case):
    _, with_grad, without_grad = _case(case, rng)
    ours, theirs = getattr(nn, module_name)(**kwargs), getattr(torch.nn, module_name)(**kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.reduction == theirs.reduction
    arrays = with_grad + without_grad
    out = ours(*(numdiff.tensor(a) for a in arrays))
    expected = theirs(*(torch.tensor(a) for a in arrays))
    assert_close(out, expected, 1e-10, 1e-12, module_name)


def test_multilabel_soft_margin_module_keeps_weight_as_a_buffer(rng):
    weight = rng.random(5)
    ours = nn.MultiLabelSoftMarginLoss(weight=numdiff.tensor(weight))
    theirs = torch.nn.MultiLabelSoftMarginLoss(weight=torch.tensor(weight))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert list(ours.parameters()) == []
    x, y = rng.standard_normal((4, 5)), (rng.random((4, 5)) < 0.5) * 1.0
    assert_close(ours(numdiff.tensor(x), numdiff.tensor(y)), theirs(torch.tensor(x), torch.tensor(y)), 1e-12, 0, "weighted")


def test_legacy_size_average_and_reduce_map_to_reduction():
    with pytest.warns(DeprecationWarning):
        assert nn.SoftMarginLoss(size_average=False).reduction == "sum"
    with pytest.warns(DeprecationWarning):
        assert nn.KLDivLoss(reduce=False).reduction == "none"


# ----------------------------------------------------------------------------- bad input
def test_bad_input_raises_errors_naming_the_function_and_values():
    z = numdiff.zeros
    with pytest.raises(ValueError, match=r"huber_loss: delta must be positive, got 0"):
        nnf.huber_loss(z(2), z(2), delta=0)
    with pytest.raises(RuntimeError, match=r"huber_loss: delta must be positive, got -1"):
        nnf.huber_loss(z(2), z(2), delta=-1)
    with pytest.raises(ValueError, match=r"kl_div: reduction .*'bogus'"):
        nnf.kl_div(z(2), z(2), reduction="bogus")
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss: .*\(3,\).*\(3,\).*\(1, 3\)"):
        nnf.margin_ranking_loss(z(3), z(3), z(1, 3))
    with pytest.raises(ValueError, match=r"cosine_embedding_loss: expected a 0-d or 1-d target.*\(3, 1\)"):
        nnf.cosine_embedding_loss(z(3, 4), z(3, 4), z(3, 1))
    with pytest.raises(RuntimeError, match=r"cosine_embedding_loss: a 1-d target expects 2-d inputs.*\(3, 4\) and \(4,\)"):
        nnf.cosine_embedding_loss(z(3, 4), z(4), z(3))
    with pytest.raises(RuntimeError, match=r"triplet_margin_loss: .*same number of dimensions.*\(3, 4\).*\(4,\)"):
        nnf.triplet_margin_loss(z(3, 4), z(4), z(3, 4))
    with pytest.raises(ValueError, match=r"triplet_margin_loss: margin must be greater than 0, got 0"):
        nnf.triplet_margin_loss(z(3, 4), z(3, 4), z(3, 4), margin=0)
    with pytest.raises(ValueError, match=r"TripletMarginLoss: margin must be greater than 0, got -1"):
        nn.TripletMarginLoss(margin=-1)
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var is of incorrect size \(2,\) for input of size \(3, 2\)"):
        nnf.gaussian_nll_loss(z(3, 2), z(3, 2), z(2))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var has negative"):
        nnf.gaussian_nll_loss(z(3, 2), z(3, 2), -numdiff.ones(3, 2))
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var has negative.*-1.0"):
        nnf.gaussian_nll_loss(z(3, 2), z(3, 2), -1.0)
    with pytest.raises(TypeError, match=r"gaussian_nll_loss: var must be a Tensor or a float, got int"):
        nnf.gaussian_nll_loss(z(3, 2), z(3, 2), 1)
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: reduction .*'batchmean'"):
        nnf.gaussian_nll_loss(z(3, 2), z(3, 2), numdiff.ones(3, 2), reduction="batchmean")
    with pytest.raises(TypeError, match=r"soft_margin_loss: argument 'target' must be a Tensor, not list"):
        nnf.soft_margin_loss(z(2), [1, -1])
    with pytest.raises(TypeError, match=r"hinge_embedding_loss: expected 'input' to be a floating point tensor"):
        nnf.hinge_embedding_loss(numdiff.tensor([1, 2]), numdiff.tensor([1, -1]))
    with pytest.raises(ValueError, match=r"multilabel_soft_margin_loss: input must have a class dimension"):
        nnf.multilabel_soft_margin_loss(numdiff.tensor(1.0), numdiff.tensor(1.0))
    with pytest.raises(ValueError, match=r"HuberLoss: reduction must be 'none', 'mean' or 'sum', got 'avg'"):
        nn.HuberLoss(reduction="avg")


def test_losses_run_under_numdiff_compile_with_eager_values_and_gradients(rng):
    """softplus with threshold=inf (soft_margin, BCE with logits) used to be fused with the literal
    `inf` in the generated kernel, which Numba cannot name; such calls now run unfused."""

    def total(a, b, c):
        return (
            nnf.soft_margin_loss(a, c.sign()) + nnf.binary_cross_entropy_with_logits(a, c.sigmoid())
            + nnf.triplet_margin_loss(a, b, c, swap=True) + nnf.huber_loss(a, b, delta=0.5)
            + nnf.gaussian_nll_loss(a, b, c * c + 0.1) + nnf.kl_div(a.log_softmax(1), c.softmax(1), reduction="batchmean")
        )  # fmt: skip

    arrays = [rng.standard_normal((4, 5)) for _ in range(3)]
    eager = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    compiled = [numdiff.tensor(a, requires_grad=True) for a in arrays]
    expected, out = total(*eager), numdiff.compile(total)(*compiled)
    assert_close(out, expected.detach().numpy(), 1e-12, 1e-12, "compiled value")
    expected.backward()
    out.backward()
    for mine, theirs in zip(compiled, eager):
        assert_close(mine.grad, theirs.grad.numpy(), 1e-10, 1e-12, "compiled gradient")


@pytest.mark.parametrize("p", [2.0, 1.0, 1.5, 3.0, np.inf])
def test_pairwise_distance_matches_torch_and_passes_gradcheck(rng, p):
    x1, x2 = rng.standard_normal((4, 6)), rng.standard_normal((1, 6))  # broadcast over rows
    ours = nnf.pairwise_distance(numdiff.tensor(x1), numdiff.tensor(x2), p=p, eps=1e-3)
    assert_close(ours, TF.pairwise_distance(torch.tensor(x1), torch.tensor(x2), p=p, eps=1e-3), 1e-12, 0, "value")
    inputs = (numdiff.tensor(x1, requires_grad=True), numdiff.tensor(x2, requires_grad=True))
    assert gradcheck(lambda a, b: nnf.pairwise_distance(a, b, p=p, eps=1e-3), inputs)


def _multi_margin_reference(x: np.ndarray, y: np.ndarray, p: int, margin: float, w: np.ndarray | None) -> np.ndarray:
    rows = np.atleast_2d(x)
    picked = rows[np.arange(len(rows)), y][:, None]
    hinge = np.maximum(0.0, margin - picked + rows) ** p
    hinge[np.arange(len(rows)), y] = 0.0
    if w is not None:
        hinge = hinge * w[y][:, None]
    return hinge.sum(1) / rows.shape[1]


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss_matches_numpy_and_torch(p, weighted, reduction):
    rng = np.random.default_rng(p)
    x, y = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    w = rng.uniform(0.5, 2.0, 4) if weighted else None
    ours, theirs = twins(x)
    loss = nnf.multi_margin_loss(ours, numdiff.tensor(y), p, 0.7, None if w is None else numdiff.tensor(w), reduction=reduction)
    expected = _multi_margin_reference(x, y, p, 0.7, w)
    expected = {"mean": expected.mean(), "sum": expected.sum(), "none": expected}[reduction]
    np.testing.assert_allclose(loss.detach().numpy(), expected, rtol=1e-12)
    torch_loss = torch.nn.MultiMarginLoss(p, 0.7, None if w is None else torch.tensor(w), reduction=reduction)
    loss.sum().backward()
    torch_loss(theirs, torch.tensor(y)).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=1e-12, atol=1e-15)


def test_multi_margin_loss_gradient_matches_central_differences():
    rng = np.random.default_rng(3)
    x = numdiff.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    w = numdiff.tensor(rng.uniform(0.5, 2.0, 3), requires_grad=True)
    y = numdiff.tensor([0, 2, 1, 1, 0])
    assert gradcheck(lambda a, b: nnf.multi_margin_loss(a, y, 2, 0.9, b), (x, w))
    assert gradcheck(lambda a: nnf.multi_margin_loss(a[0], y[0], 1, 0.9, reduction="none"), (x,))


def test_multi_margin_loss_refuses_bad_arguments_naming_them():
    x = numdiff.zeros(2, 3)
    with pytest.raises(ValueError, match=r"only p == 1 and p == 2 are supported, got p=3"):
        nnf.multi_margin_loss(x, numdiff.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match=r"target out of range: indices must lie in \[0, 3\), got \[0, 3\]"):
        nnf.multi_margin_loss(x, numdiff.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"target \(3,\) must hold one class index per row of input \(2, 3\)"):
        nnf.multi_margin_loss(x, numdiff.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match=r"target must be a tensor of class indices .* got dtype numdiff.float32"):
        nnf.multi_margin_loss(x, numdiff.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\), got \(2,\)"):
        nnf.multi_margin_loss(x, numdiff.tensor([0, 1]), weight=numdiff.ones(2))
    with pytest.raises(ValueError, match=r"expected input of shape \(N, C\) or \(C,\)"):
        nnf.multi_margin_loss(numdiff.zeros(2, 3, 4), numdiff.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"MultiMarginLoss: only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("target_dtype", ["int64", "bool"])
def test_margin_losses_take_integer_and_bool_targets_as_pytorch(target_dtype, dtype):
    """PyTorch programs pass label tensors such as ``torch.tensor([1, -1])`` straight to the margin
    losses; the value and the gradient are those of the target in the input's dtype."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((6, 4)).astype(dtype), rng.standard_normal((6, 4)).astype(dtype)
    signs = np.array([1, -1, 1, 1, -1, -1])
    labels = np.array([[1, 0, 1, 0], [0, 0, 1, 1]] * 3)
    target = (signs > 0) if target_dtype == "bool" else signs
    cases = {
        "cosine_embedding_loss": lambda lib, x, y: lib.nn.functional.cosine_embedding_loss(
            x, y, lib.tensor(target), margin=0.2),
        "hinge_embedding_loss": lambda lib, x, y: lib.nn.functional.hinge_embedding_loss(
            (x - y).norm(dim=1), lib.tensor(target)),
        "margin_ranking_loss": lambda lib, x, y: lib.nn.functional.margin_ranking_loss(
            x[:, 0], y[:, 0], lib.tensor(target), margin=0.1),
        "soft_margin_loss": lambda lib, x, y: lib.nn.functional.soft_margin_loss(x[:, 0], lib.tensor(target)),
        "multilabel_soft_margin_loss": lambda lib, x, y: lib.nn.functional.multilabel_soft_margin_loss(
            x, lib.tensor(labels.astype(bool) if target_dtype == "bool" else labels)),
    }
    if target_dtype == "bool":  # PyTorch takes a bool target only where it just compares it with 1 and -1
        cases = {name: cases[name] for name in ("cosine_embedding_loss", "hinge_embedding_loss")}
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    for name, loss in cases.items():
        results = []
        for lib in (numdiff, torch):
            x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
            value = loss(lib, x, y)
            value.backward()
            results.append((value.detach().numpy(), x.grad.numpy(), str(value.dtype).split(".")[-1]))
        assert results[0][2] == results[1][2] == dtype, name
        np.testing.assert_allclose(results[0][0], results[1][0], err_msg=name, **tol)
        np.testing.assert_allclose(results[0][1], results[1][1], err_msg=name, **tol)
