"""JAX jit versions of bench_models.py's recurrent language models (bench only).

char_lstm, char_gru, rnn_tanh and word_lstm as a JAX user would write them: Embedding (a row
gather), the recurrent layer as a ``jax.lax.scan`` over time per layer (the input projection of
every step in one matmul before the scan, PyTorch's gate order and two biases), Linear,
cross-entropy and Adam by hand, the whole step (forward, backward, update) under one ``jax.jit``.
Weights and data come from benchmarks/_models.py's seeds, so the three libraries train the same
numbers. The thread count is set by benchmarks/_isolated.py (XLA_FLAGS), as for bench_compile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import _models  # benchmarks/_models.py: the sizes, weights and data of the workloads
from _jax_steps import adam_step  # benchmarks/_jax_steps.py: Adam by hand under jax.jit


def _parameters(cell: str, sizes: tuple) -> dict:
    """The workload's parameters under PyTorch's names ("embed.weight", "rnn.weight_ih_l0", ...)."""
    vocab, embedding, hidden, layers, _, _ = sizes
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    shapes = {"embed.weight": (vocab, embedding)}
    for layer in range(layers):
        width = embedding if layer == 0 else hidden
        shapes[f"rnn.weight_ih_l{layer}"] = (gates * hidden, width)
        shapes[f"rnn.weight_hh_l{layer}"] = (gates * hidden, hidden)
        shapes[f"rnn.bias_ih_l{layer}"] = (gates * hidden,)
        shapes[f"rnn.bias_hh_l{layer}"] = (gates * hidden,)
    shapes["head.weight"] = (vocab, hidden)
    shapes["head.bias"] = (vocab,)
    return {name: _models.weight_values(f"0.{name}", shape) for name, shape in shapes.items()}


def _cell(cell: str, hidden: int) -> Callable:
    """carry, (x projected + b_ih at one step) -> carry, h: one step of `cell` given W_hh and b_hh."""
    import jax
    import jax.numpy as jnp

    def lstm(w_hh: Any, b_hh: Any, carry: tuple, gx: Any) -> tuple:
        h, c = carry
        g = gx + h @ w_hh.T + b_hh
        i, f = jax.nn.sigmoid(g[:, :hidden]), jax.nn.sigmoid(g[:, hidden : 2 * hidden])
        o = jax.nn.sigmoid(g[:, 3 * hidden :])
        c = f * c + i * jnp.tanh(g[:, 2 * hidden : 3 * hidden])
        h = o * jnp.tanh(c)
        return (h, c), h

    def gru(w_hh: Any, b_hh: Any, carry: tuple, gx: Any) -> tuple:
        (h,) = carry
        gh = h @ w_hh.T + b_hh
        r = jax.nn.sigmoid(gx[:, :hidden] + gh[:, :hidden])
        z = jax.nn.sigmoid(gx[:, hidden : 2 * hidden] + gh[:, hidden : 2 * hidden])
        n = jnp.tanh(gx[:, 2 * hidden :] + r * gh[:, 2 * hidden :])
        h = (1 - z) * n + z * h
        return (h,), h

    def rnn(w_hh: Any, b_hh: Any, carry: tuple, gx: Any) -> tuple:
        h = jnp.tanh(gx + carry[0] @ w_hh.T + b_hh)
        return (h,), h

    return {"LSTM": lstm, "GRU": gru, "RNN": rnn}[cell]


def token_lm_step(workload: str, quick: bool) -> Callable[[], None]:
    """One jitted Adam step of the TOKEN_LMS `workload`; ``step.loss()`` is the loss at the weights now."""
    import jax
    import jax.numpy as jnp

    cell, full = _models.TOKEN_LMS[workload]
    sizes = _models.token_lm_sizes(full, quick)
    vocab, _, hidden, layers, _, batch = sizes
    step_cell = _cell(cell, hidden)
    carried = 2 if cell == "LSTM" else 1

    def loss_fn(p: dict, x: Any, y: Any) -> Any:
        h = p["embed.weight"][x]  # (steps, batch, embedding)
        for layer in range(layers):
            gx = h @ p[f"rnn.weight_ih_l{layer}"].T + p[f"rnn.bias_ih_l{layer}"]
            w_hh, b_hh = p[f"rnn.weight_hh_l{layer}"], p[f"rnn.bias_hh_l{layer}"]
            zeros = tuple(jnp.zeros((batch, hidden), jnp.float32) for _ in range(carried))
            _, h = jax.lax.scan(lambda carry, g, w=w_hh, b=b_hh: step_cell(w, b, carry, g), zeros, gx)
        logits = (h @ p["head.weight"].T + p["head.bias"]).reshape(-1, vocab)
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    step = adam_step(loss_fn)

    params = {name: jnp.asarray(value) for name, value in _parameters(cell, sizes).items()}
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, zeros, jnp.float32(0)]
    x, y = (jnp.asarray(a) for a in _models.token_lm_data(vocab, sizes[4], batch))
    loss = jax.jit(loss_fn)

    def run() -> None:
        state[:] = step(*state, x, y)
        jax.block_until_ready(state[0])

    run.loss = lambda: float(loss(state[0], x, y))
    return run
