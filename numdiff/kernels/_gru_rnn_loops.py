"""The GRU and Elman RNN loop nests of the recurrent kernels (numdiff.kernels.recurrent checks the
arguments and calls these), for a run of batch rows ``lo:hi``: the same loop nest per step, the
same helpers and the same split of the batch between threads as the LSTM's in
numdiff.kernels._recurrent_loops, whose docstring has the measurements behind them.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numdiff.kernels._blas import gemm
from numdiff.kernels._gate_math import sigmoid, tanh, wide_kernel
from numdiff.kernels._kernel_address import by_address
from numdiff.kernels._parallel import serial_and_parallel
from numdiff.kernels._recurrent_loops import (
    _OPTIONS,
    _PARTS_OPTIONS,
    _copy_into,
    _copy_rows_into,
    _forward_weight,
)
from numdiff.kernels._row_products import add_step_product
from numdiff.kernels._self_healing_cache import njit

__all__ = ["GRU_BACKWARD", "GRU_FORWARD", "RNN_BACKWARD", "RNN_FORWARD"]


# --------------------------------------------------------------------------- GRU
@by_address
@njit(**_OPTIONS)
def _gru_gates(projected, h0, hidden_part, t, out, lo):
    """Step t's gates from projected[t] and hidden_part = h_{t-1} W_hh^T + b_hh (batch rows lo..),
    into out[t]."""
    wide_kernel()
    rows, gates = hidden_part.shape
    hidden = gates // 3
    for m in range(rows):
        n = lo + m
        h_prev = h0[n] if t == 0 else out[t - 1, n, :hidden]
        row = out[t, n]
        x = projected[t, n]
        a = hidden_part[m]
        # One loop per gate: with all five outputs written in one loop LLVM left it scalar.
        for j in range(hidden):
            row[hidden + j] = sigmoid(x[j] + a[j])
        for j in range(hidden):
            row[2 * hidden + j] = sigmoid(x[hidden + j] + a[hidden + j])
        for j in range(hidden):
            row[3 * hidden + j] = tanh(x[2 * hidden + j] + row[hidden + j] * a[2 * hidden + j])
        _copy_into(a[2 * hidden :], row[4 * hidden :])
        for j in range(hidden):
            n_gate = row[3 * hidden + j]
            row[j] = n_gate + row[2 * hidden + j] * (h_prev[j] - n_gate)


@by_address
@njit(**_OPTIONS)
def _gru_forward(projected, h0, w_hh, w_t, b_hh, out, lo, hi):
    """Batch rows lo:hi of the whole sequence; w_t as in _lstm_forward."""
    steps, _, gates = projected.shape
    hidden = gates // 3
    hidden_part = np.empty((hi - lo, gates), projected.dtype)
    for t in range(steps):
        for m in range(hi - lo):
            _copy_into(b_hh, hidden_part[m])
        add_step_product(h0[lo:hi] if t == 0 else out[t - 1, lo:hi, :hidden], w_hh, w_t, hidden_part)
        _gru_gates(projected, h0, hidden_part, t, out, lo)


def _gru_forward_parts(projected, h0, w_hh, b_hh, out, bounds):
    w_t = _forward_weight(projected, w_hh)
    for part in prange(bounds.shape[0] - 1):
        _gru_forward(projected, h0, w_hh, w_t, b_hh, out, bounds[part], bounds[part + 1])


GRU_FORWARD = serial_and_parallel(_gru_forward_parts, **_PARTS_OPTIONS)


@by_address
@njit(**_OPTIONS)
def _gru_backward_step(grad, out, h0, t, dh_state, d_hidden, d_pre, lo, hi):
    """Step t's gradients of batch rows lo:hi, from grad[t] (d h_t, (N, H)), into d_pre[t] = [d r_pre,
    d z_pre, d n_pre] and d_hidden[t] = [d r_pre, d z_pre, d hn]; dh_state becomes the part of d
    h_{t-1} that does not go through W_hh."""
    wide_kernel()
    hidden = out.shape[2] // 5
    one = out.dtype.type(1.0)  # as in _lstm_backward_step
    for n in range(lo, hi):
        h_prev = h0[n] if t == 0 else out[t - 1, n, :hidden]
        row = out[t, n]
        g_row = grad[t, n]
        r_row = d_pre[t, n]
        d_h = d_hidden[t, n]
        dh_in = dh_state[n]
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            r = row[hidden + j]
            z = row[2 * hidden + j]
            n_gate = row[3 * hidden + j]
            hn = row[4 * hidden + j]
            dn = dh * (one - z)
            dz = dh * (h_prev[j] - n_gate)
            dn_pre = dn * (one - n_gate * n_gate)
            dhn = dn_pre * r
            dr = dn_pre * hn
            d_h[j] = dr * r * (one - r)
            d_h[hidden + j] = dz * z * (one - z)
            d_h[2 * hidden + j] = dhn
            r_row[2 * hidden + j] = dn_pre
            dh_in[j] = dh * z
        _copy_into(d_h[: 2 * hidden], r_row[: 2 * hidden])


@by_address
@njit(**_OPTIONS)
def _gru_backward(grad, out, h0, w_hh, d_pre, d_hidden, dh_state, lo, hi):
    """Batch rows lo:hi. dh_state (N, H) zeros on entry (d h_t from the steps after t), d h_0 on
    return; each step adds d hidden_t @ W_hh to it in one gemm (beta 1: the step left there the
    part of d h_{t-1} that does not go through W_hh)."""
    for t in range(out.shape[0] - 1, -1, -1):
        _gru_backward_step(grad, out, h0, t, dh_state, d_hidden, d_pre, lo, hi)
        gemm(False, False, 1.0, d_hidden[t, lo:hi], w_hh, 1.0, dh_state[lo:hi])


def _gru_backward_parts(grad, out, h0, w_hh, d_pre, d_hidden, dh_state, bounds):
    for part in prange(bounds.shape[0] - 1):
        _gru_backward(grad, out, h0, w_hh, d_pre, d_hidden, dh_state, bounds[part], bounds[part + 1])


GRU_BACKWARD = serial_and_parallel(_gru_backward_parts, **_PARTS_OPTIONS)


# --------------------------------------------------------------------------- RNN
@by_address
@njit(**_OPTIONS)
def _rnn_activate(out_t, relu, lo, hi):
    wide_kernel()
    hidden = out_t.shape[1]
    zero = out_t.dtype.type(0.0)
    for n in range(lo, hi):
        row = out_t[n]
        if relu:
            for j in range(hidden):
                row[j] = max(row[j], zero)
        else:
            for j in range(hidden):
                row[j] = tanh(row[j])


@by_address
@njit(**_OPTIONS)
def _rnn_forward(projected, h0, w_hh, w_t, relu, out, lo, hi):
    """Batch rows lo:hi of the whole sequence; w_t as in _lstm_forward."""
    for t in range(projected.shape[0]):
        _copy_rows_into(projected[t, lo:hi], out[t, lo:hi])
        add_step_product(h0[lo:hi] if t == 0 else out[t - 1, lo:hi], w_hh, w_t, out[t, lo:hi])
        _rnn_activate(out[t], relu, lo, hi)


def _rnn_forward_parts(projected, h0, w_hh, relu, out, bounds):
    w_t = _forward_weight(projected, w_hh)
    for part in prange(bounds.shape[0] - 1):
        _rnn_forward(projected, h0, w_hh, w_t, relu, out, bounds[part], bounds[part + 1])


RNN_FORWARD = serial_and_parallel(_rnn_forward_parts, **_PARTS_OPTIONS)


@by_address
@njit(**_OPTIONS)
def _rnn_backward_step(grad_t, out_t, dh_state, res_t, relu, lo, hi):
    wide_kernel()
    hidden = out_t.shape[1]
    one, zero = out_t.dtype.type(1.0), out_t.dtype.type(0.0)  # as in _lstm_backward_step
    for n in range(lo, hi):
        row = out_t[n]
        g_row = grad_t[n]
        r_row = res_t[n]
        dh_in = dh_state[n]
        for j in range(hidden):
            dh = g_row[j] + dh_in[j]
            r_row[j] = (dh if row[j] > zero else zero) if relu else dh * (one - row[j] * row[j])


@by_address
@njit(**_OPTIONS)
def _rnn_backward(grad, out, w_hh, relu, d_pre, dh_state, lo, hi):
    """Batch rows lo:hi. dh_state (N, H) zeros on entry (d h_t from the steps after t), d h_0 on
    return: each step's d h_{t-1} = d pre_t @ W_hh in one gemm (beta 0)."""
    for t in range(out.shape[0] - 1, -1, -1):
        _rnn_backward_step(grad[t], out[t], dh_state, d_pre[t], relu, lo, hi)
        gemm(False, False, 1.0, d_pre[t, lo:hi], w_hh, 0.0, dh_state[lo:hi])


def _rnn_backward_parts(grad, out, w_hh, relu, d_pre, dh_state, bounds):
    for part in prange(bounds.shape[0] - 1):
        _rnn_backward(grad, out, w_hh, relu, d_pre, dh_state, bounds[part], bounds[part + 1])


RNN_BACKWARD = serial_and_parallel(_rnn_backward_parts, **_PARTS_OPTIONS)
