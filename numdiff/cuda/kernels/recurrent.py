"""Recurrent-layer kernels on CUDA: the twins of numdiff.kernels.recurrent (same arguments, same
layouts, documented there).

Per time step the launcher runs the recurrent GEMM (numdiff.cuda.kernels.matmul.bgemm) and then
one fused gate kernel, one thread per (batch row, hidden unit): grid ceil(N * H / THREADS) blocks
of THREADS threads. The time loop is the launcher's Python loop: each step depends on the last.
Every launcher checks its arrays (types, dtype, device, layout, shapes) before the first launch.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels._checks import check_float_arrays
from numdiff.cuda.kernels.matmul import bgemm
from numdiff.kernels._recurrent_layout import backward_blocks, backward_size, split

__all__ = [
    "gru_sequence_backward",
    "gru_sequence_forward",
    "lstm_sequence_backward",
    "lstm_sequence_forward",
    "rnn_sequence_backward",
    "rnn_sequence_forward",
]

THREADS = 128


@cuda.jit(device=True)
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@cuda.jit
def _lstm_gates(projected_t, hh, c_state, record_t, h_t, hidden):
    """record_t (N, 5H) <- [c, i, f, g, o] and h_t (N, H) <- h from gates projected_t + hh (N, 4H);
    c_state (N, H) in, out."""
    k = cuda.grid(1)
    if k < c_state.size:
        n, j = k // hidden, k % hidden
        base = n * 4 * hidden + j
        i = _sigmoid(projected_t[base] + hh[base])
        f = _sigmoid(projected_t[base + hidden] + hh[base + hidden])
        g = math.tanh(projected_t[base + 2 * hidden] + hh[base + 2 * hidden])
        o = _sigmoid(projected_t[base + 3 * hidden] + hh[base + 3 * hidden])
        c = f * c_state[k] + i * g
        c_state[k] = c
        h_t[k] = o * math.tanh(c)
        row = n * 5 * hidden + j
        record_t[row] = c
        record_t[row + hidden] = i
        record_t[row + 2 * hidden] = f
        record_t[row + 3 * hidden] = g
        record_t[row + 4 * hidden] = o


@cuda.jit
def _lstm_gate_grads(grad_t, record_t, c_prev, prev_stride, dh_state, dc_state, d_gates_t, hidden):
    """d_gates_t (N, 4H) <- d gates before activation from grad_t (N, H) = d h_t; dc_state (d c_t from
    the steps after t, d c_L at the start) <- d c_{t-1}."""
    k = cuda.grid(1)
    if k < dc_state.size:
        n, j = k // hidden, k % hidden
        row = n * 5 * hidden + j
        gate = n * 4 * hidden + j
        c, i, f = record_t[row], record_t[row + hidden], record_t[row + 2 * hidden]
        g, o = record_t[row + 3 * hidden], record_t[row + 4 * hidden]
        dh = grad_t[k] + dh_state[k]
        tanh_c = math.tanh(c)
        do = dh * tanh_c
        dc = dc_state[k] + dh * o * (1.0 - tanh_c * tanh_c)
        di = dc * g
        df = dc * c_prev[n * prev_stride + j]
        dg = dc * i
        d_gates_t[gate] = di * i * (1.0 - i)
        d_gates_t[gate + hidden] = df * f * (1.0 - f)
        d_gates_t[gate + 2 * hidden] = dg * (1.0 - g * g)
        d_gates_t[gate + 3 * hidden] = do * o * (1.0 - o)
        dc_state[k] = dc * f


@cuda.jit
def _gru_gates(projected_t, hh, b_hh, h_prev, prev_stride, out_t, hidden, size):
    """out_t (N, 5H) <- [h, r, z, n, hn] from projected_t (N, 3H), hh = h_{t-1} W_hh^T and b_hh."""
    k = cuda.grid(1)
    if k < size:
        n, j = k // hidden, k % hidden
        base = n * 3 * hidden + j
        r = _sigmoid(projected_t[base] + hh[base] + b_hh[j])
        z = _sigmoid(projected_t[base + hidden] + hh[base + hidden] + b_hh[hidden + j])
        hn = hh[base + 2 * hidden] + b_hh[2 * hidden + j]
        n_gate = math.tanh(projected_t[base + 2 * hidden] + r * hn)
        row = n * 5 * hidden + j
        out_t[row] = n_gate + z * (h_prev[n * prev_stride + j] - n_gate)
        out_t[row + hidden] = r
        out_t[row + 2 * hidden] = z
        out_t[row + 3 * hidden] = n_gate
        out_t[row + 4 * hidden] = hn


@cuda.jit
def _gru_gate_grads(grad_t, out_t, h_prev, prev_stride, dh_state, d_hidden, d_pre_t, hidden):
    """d_pre_t (N, 3H) <- [d r_pre, d z_pre, d n_pre], d_hidden (N, 3H) <- [d r_pre, d z_pre, d hn]
    from grad_t (N, H) = d h_t; dh_state <- the part of d h_{t-1} that skips the GEMM (dh * z)."""
    k = cuda.grid(1)
    if k < dh_state.size:
        n, j = k // hidden, k % hidden
        row = n * 5 * hidden + j
        r, z = out_t[row + hidden], out_t[row + 2 * hidden]
        n_gate, hn = out_t[row + 3 * hidden], out_t[row + 4 * hidden]
        dh = grad_t[k] + dh_state[k]
        dn = dh * (1.0 - z)
        dz = dh * (h_prev[n * prev_stride + j] - n_gate)
        dn_pre = dn * (1.0 - n_gate * n_gate)
        dhn = dn_pre * r
        dr = dn_pre * hn
        dr_pre, dz_pre = dr * r * (1.0 - r), dz * z * (1.0 - z)
        base = n * 3 * hidden + j
        d_pre_t[base], d_pre_t[base + hidden], d_pre_t[base + 2 * hidden] = dr_pre, dz_pre, dn_pre
        d_hidden[base], d_hidden[base + hidden], d_hidden[base + 2 * hidden] = dr_pre, dz_pre, dhn
        dh_state[k] = dh * z


@cuda.jit
def _rnn_activation(projected_t, out_t, relu):
    """out_t (N, H) <- act(projected_t + out_t), out_t holding h_{t-1} W_hh^T on entry."""
    k = cuda.grid(1)
    if k < out_t.size:
        pre = projected_t[k] + out_t[k]
        out_t[k] = (pre if pre > 0.0 else 0.0) if relu else math.tanh(pre)


@cuda.jit
def _rnn_pre_grads(grad_t, out_t, dh_state, d_pre_t, relu):
    """d_pre_t (N, H) <- d pre from grad_t + dh_state (the gradient of h_t)."""
    k = cuda.grid(1)
    if k < out_t.size:
        dh = grad_t[k] + dh_state[k]
        h = out_t[k]
        d_pre_t[k] = (dh if h > 0.0 else 0.0) if relu else dh * (1.0 - h * h)


# --------------------------------------------------------------------------- launchers
def _flat(array: CudaArray) -> Any:
    """The numba device array under a C-contiguous CudaArray (or view), flat."""
    return array._buffer[array._offset : array._offset + array.size]


def _launch(kernel: Any, count: int, device: Any, *args: Any) -> None:
    with cuda.gpus[getattr(device, "index", None) or 0]:
        kernel[(count + THREADS - 1) // THREADS, THREADS](*args)


def _matmul(a: CudaArray, b: CudaArray, out: CudaArray) -> None:
    """out (M, N) <- a (M, K) @ b (K, N), a and b read through their strides."""
    bgemm(a.broadcast_to((1,) + a.shape), b.broadcast_to((1,) + b.shape), out.reshape((1,) + out.shape))


def _result_blocks(op: str, res: CudaArray, steps: int, batch: int, hidden: int) -> list[CudaArray]:
    """The blocks of a backward's flat result (numdiff.kernels._recurrent_layout)."""
    if tuple(res.shape) != (backward_size(op, steps, batch, hidden),):
        raise ValueError(f"{op}_sequence_backward: res must have shape ({backward_size(op, steps, batch, hidden)}), got {tuple(res.shape)}")
    return split(res, backward_blocks(op, steps, batch, hidden))


def _check(op: str, steps_shape: tuple, expected: dict[str, tuple], **arrays: CudaArray) -> None:
    check_float_arrays(op, **arrays)
    for name, shape in expected.items():
        if tuple(arrays[name].shape) != shape:
            raise ValueError(f"{op}: {name} must have shape {shape}, got {tuple(arrays[name].shape)}")
    if not steps_shape[0]:
        raise ValueError(f"{op}: expected a sequence of length >= 1, got shape {steps_shape}")


def lstm_sequence_forward(projected: CudaArray, h0: CudaArray, c0: CudaArray, w_hh: CudaArray, record: CudaArray,
                          hs: CudaArray) -> CudaArray:  # fmt: skip
    """numdiff.kernels.recurrent.lstm_sequence_forward on CUDA."""
    steps, batch, gates = projected.shape
    hidden = gates // 4
    _check("lstm_sequence_forward", projected.shape,
           {"h0": (batch, hidden), "c0": (batch, hidden), "w_hh": (gates, hidden), "record": (steps, batch, 5 * hidden),
            "hs": (steps + 1, batch, hidden)},
           projected=projected, h0=h0, c0=c0, w_hh=w_hh, record=record, hs=hs)  # fmt: skip
    c_state = c0.copy()
    hh = CudaArray.empty((batch, gates), projected.dtype, projected.device)
    w_t = w_hh.T
    for t in range(steps):
        _matmul(h0 if t == 0 else hs[t - 1], w_t, hh)
        _launch(_lstm_gates, batch * hidden, hs.device, _flat(projected[t]), _flat(hh), _flat(c_state), _flat(record[t]),
                _flat(hs[t]), hidden)  # fmt: skip
    hs[steps] = c_state  # c_L
    return hs


def lstm_sequence_backward(grad: CudaArray, record: CudaArray, c0: CudaArray, w_hh: CudaArray, res: CudaArray) -> CudaArray:
    """numdiff.kernels.recurrent.lstm_sequence_backward on CUDA."""
    steps, batch, width = record.shape
    hidden = width // 5
    _check("lstm_sequence_backward", record.shape,
           {"grad": (steps + 1, batch, hidden), "c0": (batch, hidden), "w_hh": (4 * hidden, hidden)},
           grad=grad, record=record, c0=c0, w_hh=w_hh, res=res)  # fmt: skip
    d_gates, dh_state, dc_state = _result_blocks("lstm", res, steps, batch, hidden)
    dh_state[...] = 0
    dc_state[...] = grad[steps]  # d c_L
    for t in range(steps - 1, -1, -1):
        c_prev, stride = (c0, hidden) if t == 0 else (record[t - 1], width)
        _launch(_lstm_gate_grads, batch * hidden, record.device, _flat(grad[t]), _flat(record[t]), _flat(c_prev),
                stride, _flat(dh_state), _flat(dc_state), _flat(d_gates[t]), hidden)  # fmt: skip
        _matmul(d_gates[t], w_hh, dh_state)
    return res


def gru_sequence_forward(projected: CudaArray, h0: CudaArray, w_hh: CudaArray, b_hh: CudaArray, out: CudaArray) -> CudaArray:
    """numdiff.kernels.recurrent.gru_sequence_forward on CUDA."""
    steps, batch, gates = projected.shape
    hidden = gates // 3
    _check("gru_sequence_forward", projected.shape,
           {"h0": (batch, hidden), "w_hh": (gates, hidden), "b_hh": (gates,), "out": (steps, batch, 5 * hidden)},
           projected=projected, h0=h0, w_hh=w_hh, b_hh=b_hh, out=out)  # fmt: skip
    hh = CudaArray.empty((batch, gates), projected.dtype, projected.device)
    w_t = w_hh.T
    for t in range(steps):
        h_prev, stride = (h0, hidden) if t == 0 else (out[t - 1], 5 * hidden)
        _matmul(h0 if t == 0 else out[t - 1][:, :hidden], w_t, hh)
        _launch(_gru_gates, batch * hidden, out.device, _flat(projected[t]), _flat(hh), _flat(b_hh), _flat(h_prev),
                stride, _flat(out[t]), hidden, batch * hidden)  # fmt: skip
    return out


def gru_sequence_backward(grad: CudaArray, out: CudaArray, h0: CudaArray, w_hh: CudaArray, res: CudaArray) -> CudaArray:
    """numdiff.kernels.recurrent.gru_sequence_backward on CUDA."""
    steps, batch, width = out.shape
    hidden = width // 5
    _check("gru_sequence_backward", out.shape,
           {"grad": (steps, batch, hidden), "h0": (batch, hidden), "w_hh": (3 * hidden, hidden)},
           grad=grad, out=out, h0=h0, w_hh=w_hh, res=res)  # fmt: skip
    d_pre, d_hidden, grad_h0 = _result_blocks("gru", res, steps, batch, hidden)
    dh_state = CudaArray.empty((batch, hidden), out.dtype, out.device)
    dh_state[...] = 0
    through_gemm = CudaArray.empty((batch, hidden), out.dtype, out.device)
    for t in range(steps - 1, -1, -1):
        h_prev, stride = (h0, hidden) if t == 0 else (out[t - 1], width)
        _launch(_gru_gate_grads, batch * hidden, out.device, _flat(grad[t]), _flat(out[t]), _flat(h_prev), stride,
                _flat(dh_state), _flat(d_hidden[t]), _flat(d_pre[t]), hidden)  # fmt: skip
        _matmul(d_hidden[t], w_hh, through_gemm)
        dh_state = dh_state + through_gemm
    grad_h0[...] = dh_state
    return res


def rnn_sequence_forward(projected: CudaArray, h0: CudaArray, w_hh: CudaArray, out: CudaArray, relu: bool) -> CudaArray:
    """numdiff.kernels.recurrent.rnn_sequence_forward on CUDA."""
    steps, batch, hidden = projected.shape
    _check("rnn_sequence_forward", projected.shape, {"h0": (batch, hidden), "w_hh": (hidden, hidden), "out": projected.shape},
           projected=projected, h0=h0, w_hh=w_hh, out=out)  # fmt: skip
    for t in range(steps):
        _matmul(h0 if t == 0 else out[t - 1], w_hh.T, out[t])
        _launch(_rnn_activation, batch * hidden, out.device, _flat(projected[t]), _flat(out[t]), bool(relu))
    return out


def rnn_sequence_backward(grad: CudaArray, out: CudaArray, w_hh: CudaArray, res: CudaArray, relu: bool) -> CudaArray:
    """numdiff.kernels.recurrent.rnn_sequence_backward on CUDA."""
    steps, batch, hidden = out.shape
    _check("rnn_sequence_backward", out.shape, {"grad": out.shape, "w_hh": (hidden, hidden)},
           grad=grad, out=out, w_hh=w_hh, res=res)  # fmt: skip
    d_pre, dh_state = _result_blocks("rnn", res, steps, batch, hidden)
    dh_state[...] = 0
    for t in range(steps - 1, -1, -1):
        _launch(_rnn_pre_grads, batch * hidden, out.device, _flat(grad[t]), _flat(out[t]), _flat(dh_state), _flat(d_pre[t]), bool(relu))
        _matmul(d_pre[t], w_hh, dh_state)
    return res
