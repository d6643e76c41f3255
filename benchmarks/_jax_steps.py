"""JAX jit versions of bench_compile.py's digits train step and elementwise chain (bench only).

The digits CNN written with jax.lax (conv_general_dilated, reduce_window) and Adam by hand, the
whole step (forward, backward, update) under one ``jax.jit``, as a JAX user would write it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def adam_step(loss_fn: Callable) -> Callable:
    """``step(p, m, v, t, x, y) -> (p, m, v, t)``: one Adam update (lr 1e-3, PyTorch's defaults) of the
    parameter tree `p` on ``loss_fn(p, x, y)``, forward, backward and update under one ``jax.jit``."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(p: dict, m: dict, v: dict, t: Any, x: Any, y: Any) -> tuple:
        grads = jax.grad(loss_fn)(p, x, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
        v = jax.tree_util.tree_map(lambda a, g: 0.999 * a + 0.001 * g * g, v, grads)
        p = jax.tree_util.tree_map(
            lambda w, a, b: w - 1e-3 * (a / (1 - 0.9**t)) / (jnp.sqrt(b / (1 - 0.999**t)) + 1e-8), p, m, v
        )
        return p, m, v, t

    return step


def digits_step(images: np.ndarray, labels: np.ndarray) -> Any:
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)

    def init(*shape: int) -> Any:
        fan_in = int(np.prod(shape[1:]))
        return jnp.asarray(rng.uniform(-1, 1, shape).astype(np.float32) / np.sqrt(fan_in))

    params = {
        "c1": init(16, 1, 3, 3), "b1": jnp.zeros(16, jnp.float32),
        "c2": init(32, 16, 3, 3), "b2": jnp.zeros(32, jnp.float32),
        "f1": init(64, 128), "g1": jnp.zeros(64, jnp.float32),
        "f2": init(10, 64), "g2": jnp.zeros(10, jnp.float32),
    }

    def conv(x: Any, w: Any, b: Any) -> Any:
        y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)))
        return jax.nn.relu(y + b[None, :, None, None])

    def pool(x: Any) -> Any:
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(p: dict, x: Any, y: Any) -> Any:
        h = pool(conv(pool(conv(x, p["c1"], p["b1"])), p["c2"], p["b2"]))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["f1"].T + p["g1"])
        logits = h @ p["f2"].T + p["g2"]
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

    step = adam_step(loss_fn)

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, zeros, jnp.float32(0)]
    x, y = jnp.asarray(images), jnp.asarray(labels)

    def run() -> None:
        state[:] = step(*state, x, y)
        jax.block_until_ready(state[0])

    return run


def chain_step(data: np.ndarray, chain: Any) -> Any:
    import jax
    import jax.numpy as jnp

    grad = jax.jit(jax.grad(lambda x: chain(jnp.sin, jnp.exp, x).sum()))
    x = jnp.asarray(data)

    def run() -> None:
        jax.block_until_ready(grad(x))

    return run
