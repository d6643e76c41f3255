"""nn.functional.ctc_loss and nn.CTCLoss against PyTorch: values and log_probs.grad (PyTorch's
gradient, also for log-probabilities that are not normalised), every reduction, zero_infinity,
padded, concatenated and unbatched targets, float32 and float64; the derivative against central
differences; and the arguments PyTorch refuses (or reads out of bounds) refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd.gradcheck import gradcheck
from numdiff.kernels import ctc as ctc_kernels
from numdiff.kernels._parallel import always_parallel
from numdiff.ops.ctc import CtcArgumentError
from tests.ops.cases_ctc import ctc_reference

torch = pytest.importorskip("torch")
F = numdiff.nn.functional


def _draw(rng, steps, items, classes, longest, blank=0):
    """Log-probabilities' logits, padded targets (labels other than blank, repeats likely) and lengths."""
    labels = [c for c in range(classes) if c != blank]
    targets = rng.choice(labels, (items, longest)) if longest else np.zeros((items, 0), np.int64)
    input_lengths = rng.integers(0, steps + 1, items)
    input_lengths[0] = steps  # the full length appears
    target_lengths = rng.integers(0, longest + 1, items)
    return rng.standard_normal((steps, items, classes)), targets, input_lengths, target_lengths


def _both(x, targets, input_lengths, target_lengths, dtype, normalise=True, weights=None, **kwargs):
    """(numdiff's loss, its x.grad), (torch's loss, its x.grad) for the same call."""
    results = []
    for lib in (numdiff, torch):
        x_lib = lib.tensor(x.astype(dtype), requires_grad=True)
        log_probs = x_lib.log_softmax(2) if normalise else x_lib
        loss = lib.nn.functional.ctc_loss(
            log_probs, lib.tensor(targets), lib.tensor(input_lengths), lib.tensor(target_lengths), **kwargs
        )
        w = np.ones(loss.shape) if weights is None else weights[: loss.numel()].reshape(loss.shape)
        (loss * lib.tensor(w.astype(dtype))).sum().backward()
        results.append((loss.detach().numpy(), x_lib.grad.numpy()))
    return results


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_loss_and_gradient_match_torch(seed, dtype, reduction):
    rng = np.random.default_rng(seed)
    steps, items, classes = int(rng.integers(1, 30)), int(rng.integers(1, 6)), int(rng.integers(2, 9))
    blank = int(rng.integers(0, classes))
    longest = int(rng.integers(0, 8))
    x, targets, input_lengths, target_lengths = _draw(rng, steps, items, classes, longest, blank)
    zero_infinity = bool(seed % 2)
    weights = rng.standard_normal(items)
    (got, got_grad), (want, want_grad) = _both(
        x, targets, input_lengths, target_lengths, dtype, weights=weights,
        blank=blank, reduction=reduction, zero_infinity=zero_infinity,
    )  # fmt: skip
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_grad, want_grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_unnormalised_log_probs_get_torchs_gradient_and_infeasible_items_nan(zero_infinity):
    # Item 1's target [1, 1] needs 3 frames (a blank between the repeats) and has 2: its loss is
    # inf and its gradient NaN, or both 0 under zero_infinity.
    rng = np.random.default_rng(7)
    lp = rng.standard_normal((6, 3, 5))
    targets = np.array([[1, 2, 2], [1, 1, 0], [3, 0, 0]])
    lengths = (np.array([6, 2, 5]), np.array([3, 2, 1]))
    results = []
    for lib in (numdiff, torch):
        x = lib.tensor(lp, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(
            x,
            lib.tensor(targets),
            *(lib.tensor(n) for n in lengths),
            reduction="none",
            zero_infinity=zero_infinity,
        )
        loss.backward(lib.tensor([1.0, 2.0, -0.5], dtype=lib.float64))
        results.append((loss.detach().numpy(), x.grad.numpy()))
    (got, got_grad), (want, want_grad) = results
    assert (got[1] == 0) if zero_infinity else got[1] == np.inf
    assert np.isnan(got_grad[:2, 1]).all() != zero_infinity
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-10, atol=1e-12)  # NaN where torch's is


def test_matches_enumerated_alignments_with_repeats_and_empty_targets():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4, 3))
    log_probs = x - np.log(np.exp(x).sum(2, keepdims=True))
    targets = np.array([[1, 1], [2, 1], [0, 0], [2, 2]])
    input_lengths, target_lengths = [5, 3, 4, 2], [2, 2, 0, 2]  # item 3: [2, 2] in 2 frames is impossible
    got = F.ctc_loss(
        numdiff.tensor(log_probs), numdiff.tensor(targets), input_lengths, target_lengths, reduction="none"
    )
    want = ctc_reference(log_probs, targets, input_lengths, target_lengths)
    assert want[3] == np.inf
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(got.numpy()[2], -log_probs[:4, 2, 0].sum(), rtol=1e-14)  # all blanks


def test_concatenated_unbatched_and_list_forms_equal_the_padded_one():
    rng = np.random.default_rng(4)
    x, targets, _, _ = _draw(rng, 12, 3, 6, 4)
    log_probs = numdiff.tensor(x).log_softmax(2)
    input_lengths, target_lengths = [12, 9, 10], [4, 0, 2]
    padded = F.ctc_loss(log_probs, numdiff.tensor(targets), input_lengths, target_lengths, reduction="none")
    concatenated = np.concatenate([targets[n, :k] for n, k in enumerate(target_lengths)])
    joined = F.ctc_loss(
        log_probs, numdiff.tensor(concatenated), tuple(input_lengths), numdiff.tensor(target_lengths, dtype=numdiff.int32),
        reduction="none",
    )  # fmt: skip
    np.testing.assert_array_equal(joined.numpy(), padded.numpy())
    for n in range(3):  # unbatched: (1, S) padded, or (S,) holding exactly the target (PyTorch's rule)
        row, target = numdiff.tensor(targets[n : n + 1]), numdiff.tensor(targets[n, : target_lengths[n]])
        one = F.ctc_loss(log_probs[:, n], row, input_lengths[n], target_lengths[n], reduction="none")
        assert one.shape == () and one.item() == padded[n].item()
        want = torch.nn.functional.ctc_loss(
            torch.tensor(log_probs[:, n].numpy()),
            torch.tensor(target.numpy()),
            [input_lengths[n]],
            [target_lengths[n]],
        )
        got = F.ctc_loss(log_probs[:, n], target, [input_lengths[n]], [target_lengths[n]])
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def test_module_is_the_functional_with_its_settings():
    rng = np.random.default_rng(5)
    x, targets, input_lengths, target_lengths = _draw(rng, 10, 3, 5, 3, blank=4)
    log_probs = numdiff.tensor(x).log_softmax(2)
    layer = numdiff.nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True)
    assert (layer.blank, layer.reduction, layer.zero_infinity) == (4, "sum", True)
    args = (numdiff.tensor(targets), numdiff.tensor(input_lengths), numdiff.tensor(target_lengths))
    assert (
        layer(log_probs, *args).item()
        == F.ctc_loss(log_probs, *args, blank=4, reduction="sum", zero_infinity=True).item()
    )
    with pytest.raises(ValueError, match="reduction must be"):
        numdiff.nn.CTCLoss(reduction="avg")


def test_derivative_through_log_softmax_against_central_differences():
    rng = np.random.default_rng(6)
    x, targets, _, _ = _draw(rng, 6, 3, 4, 3)
    targets = numdiff.tensor(targets)
    for reduction in ("none", "mean"):

        def loss(t, reduction=reduction):
            return F.ctc_loss(t.log_softmax(2), targets, [6, 5, 4], [3, 2, 0], reduction=reduction)

        assert gradcheck(loss, (numdiff.tensor(x, requires_grad=True),))


def test_second_derivative_raises_as_in_torch():
    x = numdiff.randn(5, 2, 4, dtype=numdiff.float64, requires_grad=True)
    loss = F.ctc_loss(x.log_softmax(2), numdiff.tensor([[1, 2], [3, 0]]), [5, 5], [2, 1])
    (grad,) = numdiff.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice"):
        grad.sum().backward()


def test_compiled_step_reads_each_calls_targets_and_lengths():
    def step(x, targets, input_lengths, target_lengths):
        loss = F.ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths)
        loss.backward()
        return loss

    compiled = numdiff.compile(step)
    rng = np.random.default_rng(8)
    for _ in range(3):
        x, targets, input_lengths, target_lengths = _draw(rng, 8, 2, 5, 3)
        inputs = [numdiff.tensor(a) for a in (targets, input_lengths, target_lengths)]
        results = []
        for fn in (compiled, step):
            leaf = numdiff.tensor(x, requires_grad=True)
            results.append((fn(leaf, *inputs).item(), leaf.grad.numpy()))
        assert results[0][0] == results[1][0]
        np.testing.assert_array_equal(results[0][1], results[1][1])


def _call(log_probs=None, targets=None, input_lengths=(5, 4), target_lengths=(2, 1), **kwargs):
    log_probs = numdiff.randn(5, 2, 4).log_softmax(2) if log_probs is None else log_probs
    targets = numdiff.tensor([[1, 2], [3, 0]]) if targets is None else targets
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input_lengths": (6, 4)}, CtcArgumentError, r"input_lengths\[0\] = 6 is outside \[0, 5\]"),
        ({"input_lengths": (5, -1)}, CtcArgumentError, r"input_lengths\[1\] = -1 is outside"),
        ({"target_lengths": (3, 1)}, CtcArgumentError, r"target_lengths\[0\] = 3 is outside \[0, 2\]"),
        ({"target_lengths": (-1, 1)}, CtcArgumentError, r"target_lengths\[0\] = -1"),
        ({"input_lengths": (5, 4, 3)}, CtcArgumentError, r"input_lengths must have one entry per batch item \(2\)"),
        ({"blank": 4}, CtcArgumentError, r"blank must be in label range \[0, 3\], got 4"),
        ({"blank": -1}, CtcArgumentError, r"blank must be in label range"),
        ({"targets": numdiff.tensor([[1, 0], [3, 0]])}, CtcArgumentError, r"targets\[0\]\[1\] = 0 is not a label"),
        ({"targets": numdiff.tensor([[1, 4], [3, 0]])}, CtcArgumentError, r"targets\[0\]\[1\] = 4 is not a label"),
        ({"targets": numdiff.tensor([[1, 2], [-3, 0]])}, CtcArgumentError, r"targets\[1\]\[0\] = -3"),
        ({"targets": numdiff.tensor([1, 2])}, CtcArgumentError, r"sum\(target_lengths\) = 3 entries, got 2"),
        ({"targets": numdiff.tensor([[1, 2]])}, CtcArgumentError, r"padded targets must have 2 rows"),
        ({"targets": numdiff.tensor([[[1, 2]], [[3, 0]]])}, CtcArgumentError, r"1-D \(concatenated\) or 2-D"),
        ({"targets": numdiff.tensor([[1.5, 2.0], [3.0, 0.0]])}, TypeError, r"whole numbers"),
        ({"input_lengths": numdiff.tensor([5.0, 4.0])}, TypeError, r"input_lengths must be integral"),
        ({"log_probs": numdiff.randn(5, 2, 4).long()}, TypeError, r"float32 or float64, got"),
        ({"log_probs": numdiff.randn(1, 5, 2, 4)}, CtcArgumentError, r"\(T, N, C\) or unbatched \(T, C\)"),
        ({"log_probs": numdiff.randn(0, 2, 4)}, CtcArgumentError, r"must not be empty"),
        ({"reduction": "avg"}, ValueError, r"reduction must be 'none', 'mean' or 'sum'"),
        ({"input_lengths": "54"}, TypeError, r"input_lengths must be a Tensor, a list or tuple"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused_by_name_before_the_kernel(kwargs, error, message):
    with pytest.raises(error, match=message):
        _call(**kwargs)


def test_a_compiled_replay_still_refuses_a_bad_target():
    compiled = numdiff.compile(lambda lp, t: F.ctc_loss(lp, t, [5, 4], [2, 1]))
    log_probs = numdiff.randn(5, 2, 4).log_softmax(2)
    compiled(log_probs, numdiff.tensor([[1, 2], [3, 0]]))
    with pytest.raises(CtcArgumentError, match=r"targets\[1\]\[0\] = 9 is not a label"):
        compiled(log_probs, numdiff.tensor([[1, 2], [9, 0]]))


def test_the_parallel_build_gives_the_serial_builds_values():
    rng = np.random.default_rng(9)
    x, targets, input_lengths, target_lengths = _draw(rng, 20, 5, 6, 6)
    log_probs = x - np.log(np.exp(x).sum(2, keepdims=True))
    serial = ctc_kernels.ctc_loss(log_probs, targets, input_lengths, target_lengths, 0, False, True)
    with always_parallel():
        parallel = ctc_kernels.ctc_loss(log_probs, targets, input_lengths, target_lengths, 0, False, True)
    for got, want in zip(parallel, serial):
        np.testing.assert_array_equal(got, want)


def test_vmap_runs_it_entry_by_entry_and_says_so(monkeypatch):
    # vmap warns once per op and process; another test (jacfwd of the op cases) may have been first.
    from numdiff import _vmap_level

    monkeypatch.setattr(_vmap_level, "_warned_ops", set())
    x = numdiff.randn(3, 6, 2, 4, dtype=numdiff.float64)
    targets = numdiff.tensor([[1, 2], [3, 0]])

    def loss(lp):
        return F.ctc_loss(lp.log_softmax(2), targets, [6, 5], [2, 1], reduction="none")

    with pytest.warns(UserWarning, match="op 'ctc_loss' has no batching rule"):
        batched = numdiff.func.vmap(loss)(x)
    np.testing.assert_array_equal(batched.numpy(), numdiff.stack([loss(x[i]) for i in range(3)]).numpy())
