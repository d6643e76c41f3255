"""numdiff.kernels.attention: forward against a NumPy softmax in float32 and float64, backward in
float32 against float64, and the argument checks that run before any compiled code."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numdiff
from numdiff.kernels import attention
from numdiff.ops.attention import attention as fused_attention
from tests.ops.cases_attention import attention_reference

NO_BIAS = np.zeros((0, 0, 0))


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("causal", [False, True])
def test_forward_matches_numpy(dtype, tol, causal):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((3, 6, 4), (3, 6, 4), (3, 6, 5)))
    bias = rng.standard_normal((1, 6, 6)).astype(dtype)
    out = attention.attention_forward(q, k, v, bias, 0.5, causal, np.empty((3, 6, 6), dtype))
    np.testing.assert_allclose(out, attention_reference(q, k, v, bias, causal, 0.5), rtol=tol, atol=tol)


@pytest.mark.parametrize("rows, cols", [(5, 9), (9, 5), (64, 64)])
def test_causal_forward_with_more_or_fewer_keys_than_queries_matches_numpy(rows, cols):
    # The forward reads row i's first min(i + 1, S) scores only: rows past S see every key, and a
    # bias of -inf on a row's visible keys leaves it seeing none (output 0, log-sum-exp -inf).
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal(s) for s in ((2, rows, 4), (2, cols, 4), (2, cols, 3)))
    bias = rng.standard_normal((2, rows, cols))
    bias[1, 2, :] = -np.inf
    out = attention.attention_forward(q, k, v, bias, 0.7, True, np.empty((2, rows, 4)))
    np.testing.assert_allclose(out, attention_reference(q, k, v, bias, True, 0.7), rtol=1e-12, atol=1e-12)
    assert out[1, 2, 3] == -np.inf and (out[1, 2, :3] == 0).all()


def test_float32_backward_matches_float64():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((2, 5, 3), (2, 7, 3), (2, 7, 4), (2, 5, 5))]
    results = []
    for dtype in (np.float64, np.float32):
        q, k, v, grad = (a.astype(dtype) for a in arrays)
        bias = NO_BIAS.astype(dtype)
        out = attention.attention_forward(q, k, v, bias, 0.6, False, np.empty((2, 5, 5), dtype))
        res = np.empty((2, (5 + 7) * 3 + 7 * 4), dtype)
        results.append(attention.attention_backward(grad, out, q, k, v, bias, 0.6, False, res))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4)


def test_bad_arguments_name_the_kernel_and_the_shapes():
    q, v = np.zeros((2, 3, 4)), np.zeros((2, 5, 4))
    with pytest.raises(ValueError, match=r"attention_forward: k must have shape \(2, \*, 4\), got \(2, 5, 3\)"):
        attention.attention_forward(q, np.zeros((2, 5, 3)), v, NO_BIAS, 1.0, False, np.empty((2, 3, 5)))
    with pytest.raises(ValueError, match=r"attention_forward: bias must be \(Bb, 3, 5\) with Bb dividing 2, or \(0, 0, 0\), got \(3, 3, 5\)"):
        attention.attention_forward(q, v, v, np.zeros((3, 3, 5)), 1.0, False, np.empty((2, 3, 5)))
    with pytest.raises(TypeError, match="attention_forward: all arrays must share one dtype"):
        attention.attention_forward(q.astype(np.float32), v, v, NO_BIAS, 1.0, False, np.empty((2, 3, 5)))
    with pytest.raises(ValueError, match=r"attention_forward: out must have shape \(2, 3, 5\)"):
        attention.attention_forward(q, v, v, NO_BIAS, 1.0, False, np.empty((2, 3, 4)))


def test_attention_op_refuses_a_bias_whose_count_does_not_divide_the_heads():
    q, kv = numdiff.zeros(6, 3, 2), numdiff.zeros(6, 4, 2)
    with pytest.raises(ValueError, match=r"attention: bias must have shape \(Bb, 3, 4\) with Bb dividing 6, got \(4, 3, 4\)"):
        fused_attention(q, kv, kv, numdiff.zeros(4, 3, 4))


@pytest.mark.parametrize("rows, cols", [(5, 7), (7, 5)])
def test_causal_backward_passes_gradcheck_with_more_or_fewer_keys_than_queries(rows, cols):
    # The backward, like the forward, recomputes only each causal row's visible probabilities.
    rng = np.random.default_rng(3)
    q, k, v = (numdiff.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, rows, 3), (2, cols, 3), (2, cols, 4)))

    def attend(q, k, v):
        return numdiff.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    assert numdiff.autograd.gradcheck(attend, (q, k, v))


# Past CAUSAL_BLOCK query rows a causal head runs in row blocks, each block's products limited to the
# keys it sees: more rows than keys (late blocks see every key), fewer, and a block boundary inside.
BLOCKED = [(attention.CAUSAL_BLOCK + 9, 23), (23, attention.CAUSAL_BLOCK + 9), (2 * attention.CAUSAL_BLOCK + 5,) * 2]


@pytest.mark.parametrize("rows, cols", BLOCKED)
@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_causal_forward_in_row_blocks_matches_numpy(rows, cols, dtype, tol):
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((3, rows, 5), (3, cols, 5), (3, cols, 4)))
    bias = rng.standard_normal((3, rows, cols)).astype(dtype)
    bias[2, rows - 3, :] = -np.inf  # a row in the last block that sees no key
    out = attention.attention_forward(q, k, v, bias, 0.4, True, np.empty((3, rows, 5), dtype))
    np.testing.assert_allclose(out, attention_reference(q, k, v, bias, True, 0.4), rtol=tol, atol=tol)
    assert out[2, rows - 3, 4] == -np.inf and (out[2, rows - 3, :4] == 0).all()


@pytest.mark.parametrize("rows, cols", BLOCKED[:2])
def test_causal_backward_in_row_blocks_passes_gradcheck(rows, cols):
    # dK and dV are summed over the row blocks; the log-sum-exp column's gradient flows too.
    rng = np.random.default_rng(5)
    q, k, v = (numdiff.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, rows, 2), (2, cols, 2), (2, cols, 3)))
    bias = numdiff.tensor(rng.standard_normal((1, rows, cols)))
    assert numdiff.autograd.gradcheck(lambda q, k, v: fused_attention(q, k, v, bias, 0.8, True), (q, k, v))


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-4), (np.float64, 1e-11)])
def test_causal_backward_in_row_blocks_matches_one_block(dtype, tol):
    # The same head as one whole block: the causal mask as a bias of -inf above the diagonal.
    rows, cols = BLOCKED[2]
    rng = np.random.default_rng(6)
    q, k, v, grad = (rng.standard_normal(s).astype(dtype) for s in ((2, rows, 4), (2, cols, 4), (2, cols, 3), (2, rows, 4)))
    hidden = np.where(np.triu(np.ones((1, rows, cols), bool), k=1), -np.inf, 0.0).astype(dtype)
    results = []
    for bias, causal in ((NO_BIAS.astype(dtype), True), (hidden, False)):
        out = attention.attention_forward(q, k, v, bias, 0.5, causal, np.empty((2, rows, 4), dtype))
        res = np.empty((2, (rows + cols) * 4 + cols * 3), dtype)
        results.append((out, attention.attention_backward(grad, out, q, k, v, bias, 0.5, causal, res)))
    for blocked, whole in zip(*results):
        np.testing.assert_allclose(blocked, whole, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_softmax_runs_in_the_scores_precision(dtype):
    # A float64 -inf start for the row maximum (and a float64 1 / sum) made a float32 row's exp and
    # scaling run in float64, at half the SIMD lanes: the scores (s), their exps (e), each row's sum
    # (seen) and its inverse stay in the scores' dtype.
    kernel = numba.njit(error_model="numpy")(attention._forward)  # the loop nest both builds compile
    q = np.zeros((2, 3, 4), dtype)
    kernel(q, q, q, np.zeros((0, 0, 0), dtype), 0.5, True, np.zeros((2, 3, 5), dtype))
    typemap = kernel.overloads[kernel.signatures[0]].type_annotation.typemap
    local = {name: str(kind) for name, kind in typemap.items() if name.split(".")[0] in ("s", "e", "seen", "inverse")}
    assert local and set(local.values()) == {np.dtype(dtype).name}, local


@pytest.mark.parametrize("dtype, low, tol", [(np.float32, -87.0, 2e-5), (np.float64, -708.0, 1e-12)])
def test_scores_far_below_the_row_maximum_match_numpy(dtype, low, tol):
    # Probabilities below the dtype's normal range are dropped (a subnormal exp costs a microcode
    # assist); those around it must still come out as NumPy's softmax has them, in both directions.
    rng = np.random.default_rng(7)
    q, k, v, grad = (rng.standard_normal(s).astype(dtype) for s in ((2, 4, 3), (2, 6, 3), (2, 6, 5), (2, 4, 6)))
    bias = np.zeros((1, 4, 6), dtype)
    bias[0, :, 1] = low + 30.0  # exp still normal: these keys keep their tiny weight
    bias[0, :, 2] = low - 20.0  # exp subnormal or 0: dropped
    bias[0, 1, 3] = -np.inf
    out = attention.attention_forward(q, k, v, bias, 0.5, False, np.empty((2, 4, 6), dtype))
    np.testing.assert_allclose(out, attention_reference(q, k, v, bias, False, 0.5), rtol=tol, atol=tol)
    res = np.empty((2, (4 + 6) * 3 + 6 * 5), dtype)
    attention.attention_backward(grad, out, q, k, v, bias, 0.5, False, res)
    d_v = res[:, (4 + 6) * 3 :].reshape(2, 6, 5)
    scores = 0.5 * q.astype(np.float64) @ k.transpose(0, 2, 1).astype(np.float64) + bias
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    expected = weights.transpose(0, 2, 1) @ grad[..., :5].astype(np.float64)  # dV = P^T dO
    assert np.isfinite(res).all() and (d_v[:, 2] == 0).all()
    np.testing.assert_allclose(d_v[:, 1], expected[:, 1], rtol=tol * 10, atol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_a_nan_score_makes_its_row_nan_and_leaves_the_others(causal):
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 3), (2, 5, 3), (2, 5, 4)))
    q[1, 3, 0] = np.nan
    out = attention.attention_forward(q, k, v, NO_BIAS.astype(np.float32), 0.5, causal, np.empty((2, 5, 5), np.float32))
    assert np.isnan(out[1, 3]).all()
    others = np.ones(out.shape[:2], bool)
    others[1, 3] = False
    reference = attention_reference(q, k, v, None, causal, 0.5)
    np.testing.assert_allclose(out[others], reference[others], rtol=2e-5, atol=2e-6)
