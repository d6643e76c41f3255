"""Forward mode by rules (each op spec's `jvp`, attached by numdiff.func._jvp_rules): every scalar
rule, the linear and multilinear ops, and the double-vjp fallback for ops without a rule, against
torch.func.jvp in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numdiff
import numdiff.func._forward as forward
from numdiff import func
from numdiff._ground.scalar_rules import RULES
from numdiff.nn import functional as nf
from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.registry import SPECS

torch = pytest.importorskip("torch")
tnf = torch.nn.functional
RNG = np.random.default_rng(25)

# Values away from every rule's kinks (0, +-0.5, +-1, +-3) and poles, and the same shifted into
# the domains of the functions defined on part of the line.
VALUES = np.array([-2.3, -0.7, -0.3, 0.35, 0.8, 1.7, 2.6, -1.4])
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "polygamma", "pow", "xlogy", "xlog1py"}
UNIT = {"asin", "acos", "atanh", "erfinv"}


def _domain(name: str) -> np.ndarray:
    if name in POSITIVE:
        return np.abs(VALUES) + 0.1
    if name in UNIT:
        return VALUES / 2.7
    if name == "logit":
        return np.abs(VALUES) / 2.7 + 0.02
    if name == "acosh":
        return np.abs(VALUES) + 1.1
    return VALUES


def _torch_function(name: str):
    """The torch function computing what rule `name` does with its default attributes."""
    special = {
        "gelu_tanh": lambda x: tnf.gelu(x, approximate="tanh"),
        "polygamma": lambda x: torch.polygamma(1, x),
        "threshold": lambda x: tnf.threshold(x, 0.0, 0.0),
        "xlog1py": torch.special.xlog1py,
        "round": torch.round,
        # The prelu rule broadcasts its slope as any binary op (nn.functional.prelu reshapes it first).
        "prelu": lambda x, w: torch.where(x > 0, x, w * x),
        # The pointwise losses' rules (internal names), as torch's losses without their reduction.
        "smooth_l1": lambda x, y: tnf.smooth_l1_loss(x, y, reduction="none"),
        "huber": lambda x, y: tnf.huber_loss(x, y, reduction="none"),
        "squared_error": lambda x, y: tnf.mse_loss(x, y, reduction="none"),
        "bce_with_logits": lambda x, y: tnf.binary_cross_entropy_with_logits(x, y, reduction="none"),
        # torch has no forward-mode rule for soft_margin_loss: its elementwise value log(1 + exp(-x y)).
        "soft_margin": lambda x, y: torch.logaddexp(torch.zeros_like(x), -x * y),
        # The activations' backwards (numdiff/_ground/scalar_backward_rules.py): torch's own ops
        # where it has them, gradient first.
        "tanh_backward": torch.ops.aten.tanh_backward,
        "sigmoid_backward": torch.ops.aten.sigmoid_backward,
        # (aten's silu_backward has no forward-mode rule: its value written out)
        "silu_backward": lambda g, x: g * torch.sigmoid(x) * (1.0 + x * (1.0 - torch.sigmoid(x))),
        "gelu_backward": torch.ops.aten.gelu_backward,
        "softplus_backward": lambda g, x: torch.ops.aten.softplus_backward(g, x, 1.0, 20.0),
        "relu_backward": lambda g, y: torch.ops.aten.threshold_backward(g, y, 0.0),
        "leaky_relu_backward": lambda g, x: torch.ops.aten.leaky_relu_backward(g, x, 0.01, False),
        "sin_backward": lambda g, x: g * torch.cos(x),
        "cos_backward": lambda g, x: -g * torch.sin(x),
        # Their y-gradients' ops, x times the second derivative at y, written out (aten has none).
        "tanh_second": lambda u, y: -2.0 * u * y,
        "sigmoid_second": lambda u, y: u * (1.0 - 2.0 * y),
        "silu_second": lambda u, y: u * torch.sigmoid(y) * (1.0 - torch.sigmoid(y)) * (2.0 + y * (1.0 - 2.0 * torch.sigmoid(y))),
        "gelu_second": lambda u, y: u * torch.exp(-0.5 * y * y) / math.sqrt(2.0 * math.pi) * (2.0 - y * y),
        "softplus_second": lambda u, y: torch.where(y > 20.0, 0.0, u * torch.sigmoid(y) * (1.0 - torch.sigmoid(y))),
    }
    if name in special:
        return special[name]
    for module in (torch, tnf, torch.special):
        if hasattr(module, name):
            return getattr(module, name)
    raise AssertionError(f"no torch function for the scalar rule {name}")


def _close(ours, theirs, rtol=1e-10, atol=1e-12) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _no_fallback(monkeypatch) -> None:
    def refuse(cls, *args):
        raise AssertionError(f"{cls.__name__} went through the double-vjp fallback, not its rule")

    monkeypatch.setattr(forward, "_double_vjp", refuse)


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_scalar_rule_pushes_forward_in_one_pass_as_torch_func(name, monkeypatch):
    _no_fallback(monkeypatch)
    rule = RULES[name]
    x = _domain(name)
    ours, theirs = PUBLIC[name], _torch_function(name)
    tangents = [RNG.standard_normal(x.shape) for _ in range(rule.arity)]
    if rule.arity == 1:
        primals = [x]
    else:  # the second operand: no ties with the first, and positive where a divisor or an exponent
        primals = [x, np.abs(VALUES[::-1]) + 1.1]
    out, pushed = func.jvp(ours, tuple(numdiff.tensor(p) for p in primals), tuple(numdiff.tensor(t) for t in tangents))
    t_out, t_pushed = torch.func.jvp(theirs, tuple(torch.tensor(p) for p in primals), tuple(torch.tensor(t) for t in tangents))
    # torch's float64 hardsigmoid has the slope 1/6 rounded to float32; numdiff's polygamma
    # series is good to about 3e-8.
    rtol = 1e-7 if name in ("hardsigmoid", "digamma", "polygamma") else 1e-10
    _close(out, t_out, rtol=rtol)
    _close(pushed, t_pushed, rtol=rtol)


def test_a_scalar_rule_with_attributes_and_python_numbers_pushes_forward(monkeypatch):
    _no_fallback(monkeypatch)
    x, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    cases = [
        (lambda v: nf.leaky_relu(v, 0.2), lambda v: tnf.leaky_relu(v, 0.2)),
        (lambda v: nf.softplus(v, beta=2.0, threshold=1.5), lambda v: tnf.softplus(v, beta=2.0, threshold=1.5)),
        (lambda v: v ** 3.0 - 2.0 / (v * v + 1.0), lambda v: v ** 3.0 - 2.0 / (v * v + 1.0)),
        (lambda v: 2.0 ** v + numdiff.maximum(v, v * 0.5), lambda v: 2.0 ** v + torch.maximum(v, v * 0.5)),
    ]
    for ours, theirs in cases:
        _close(func.jvp(ours, (numdiff.tensor(x),), (numdiff.tensor(t),))[1], torch.func.jvp(theirs, (torch.tensor(x),), (torch.tensor(t),))[1])


def test_broadcast_operands_and_mixed_float_dtypes_give_a_tangent_shaped_as_the_output(monkeypatch):
    _no_fallback(monkeypatch)
    a, b = RNG.standard_normal((3, 1)), RNG.standard_normal(4)
    ta, tb = RNG.standard_normal((3, 1)), RNG.standard_normal(4)
    ours = func.jvp(lambda p, q: p * q + p.exp(), (numdiff.tensor(a), numdiff.tensor(b)), (numdiff.tensor(ta), numdiff.tensor(tb)))
    theirs = torch.func.jvp(lambda p, q: p * q + p.exp(), (torch.tensor(a), torch.tensor(b)), (torch.tensor(ta), torch.tensor(tb)))
    assert tuple(ours[1].shape) == (3, 4)
    _close(ours[1], theirs[1])
    # Only the float32 operand carries a tangent: the float64 result's tangent is float64.
    out, pushed = func.jvp(lambda p: p * numdiff.tensor(b), (numdiff.tensor(a, dtype=numdiff.float32),), (numdiff.tensor(ta, dtype=numdiff.float32),))
    assert pushed.dtype == out.dtype == numdiff.float64


LINEAR_CASES = {
    "views and indexing": lambda lib, x, w: (x.reshape(4, 3).t()[1:, ::2].flip(0).permute(1, 0) * 2.0, x[..., None].expand(3, 4, 2).sum((0, 2))),
    "roll": lambda lib, x, w: (x.roll(1, 1), x.roll((-1, 2), (0, 1)), (x * x).roll(5)),
    "cat, where, gather, cumsum": lambda lib, x, w: (
        lib.cat([x, x * x], 1).cumsum(1),
        lib.where(x > 0, x, -x),
        lib.where(x > 0, 1.5, x) + lib.where(x < 0.3, x * x, -2.0),
        x.gather(1, lib.tensor([[0, 2], [1, 1], [3, 0]])),
    ),
    "nan_to_num and nansum": lambda lib, x, w: (lib.nan_to_num(x.log()), lib.nansum(x.sqrt(), 1)),
    "triangles and diagonals": lambda lib, x, w: (x.tril(), x.triu(1), x.diagonal(), x.to(lib.float32).to(lib.float64)),
    "scatter and index_put": lambda lib, x, w: (
        lib.zeros(3, 4, dtype=lib.float64).scatter(1, lib.tensor([[0], [2], [3]]), x[:, :1]),
        lib.zeros(3, 4, dtype=lib.float64).scatter_add(1, lib.tensor([[0, 0], [2, 1], [3, 3]]), x[:, :2]),
        x.index_put((lib.tensor([0, 2]),), x[1] * 3.0),
    ),
    "matmul and linear": lambda lib, x, w: (x @ w, (x.t() @ x).sum(), lib.nn.functional.linear(x, w.t(), w[0])),
    "log_softmax and mean": lambda lib, x, w: (lib.nn.functional.log_softmax(x, 1), x.mean(0)),
    "softmax": lambda lib, x, w: (lib.nn.functional.softmax(x, 1), lib.softmax(x, 0)),
    "conv and pooling": lambda lib, x, w: (
        lib.nn.functional.avg_pool2d(lib.nn.functional.conv2d(x.reshape(1, 1, 3, 4), w[:2, :2].reshape(1, 1, 2, 2), w[0, :1], padding=1), 2),
        lib.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 3, 4), (2, 2)),
        lib.nn.functional.conv_transpose2d(x.reshape(1, 1, 3, 4), w[:2, :2].reshape(1, 1, 2, 2)),
    ),
}


@pytest.mark.parametrize("name", sorted(LINEAR_CASES))
def test_linear_and_multilinear_ops_push_forward_by_their_rules_as_torch_func(name, monkeypatch):
    _no_fallback(monkeypatch)
    fn = LINEAR_CASES[name]
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 3))
    tx, tw = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 3))
    ours = func.jvp(lambda a, b: fn(numdiff, a, b), (numdiff.tensor(x), numdiff.tensor(w)), (numdiff.tensor(tx), numdiff.tensor(tw)))
    theirs = torch.func.jvp(lambda a, b: fn(torch, a, b), (torch.tensor(x), torch.tensor(w)), (torch.tensor(tx), torch.tensor(tw)))
    for o, t in zip(ours[0], theirs[0]):
        _close(o, t)
    for o, t in zip(ours[1], theirs[1]):
        _close(o, t)



def _pool_grads(lib, x, w):
    """Gradients of pools of a convolution: their ops (conv2d_weight_grad, avg_pool2d_backward,
    max_pool_scatter, and max_pool_gather in the second derivative) under jvp."""
    nnf = lib.nn.functional

    def loss(a, b):
        y = nnf.conv2d(a.reshape(1, 1, 3, 4), b[:2, :2].reshape(1, 1, 2, 2), padding=1)
        return (nnf.avg_pool2d(y, 2) ** 2).sum() + (nnf.max_pool2d(y, 2) ** 3).sum()

    def first(a):
        return lib.func.grad(loss, argnums=(0, 1))(a, w)[0]

    return (*lib.func.grad(loss, argnums=(0, 1))(x, w), lib.func.grad(lambda a: (first(a) * a).sum())(x))


# Cases whose ops with rules sit inside a backward pass (max_pool2d itself has no rule), and
# other ops no linear case reaches.
RULE_CASES = {
    "pool and conv gradients": _pool_grads,
    "diag, diag_embed, clone": lambda lib, x, w: (lib.diag(x[0]), lib.diag_embed(x).clone()),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_rule_ops_inside_backward_passes_push_forward_as_torch_func(name):
    fn = RULE_CASES[name]
    x, w = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 3))
    tx, tw = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 3))
    ours = func.jvp(lambda a, b: fn(numdiff, a, b), (numdiff.tensor(x), numdiff.tensor(w)), (numdiff.tensor(tx), numdiff.tensor(tw)))
    theirs = torch.func.jvp(lambda a, b: fn(torch, a, b), (torch.tensor(x), torch.tensor(w)), (torch.tensor(tx), torch.tensor(tw)))
    for o, t in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        _close(o, t, rtol=1e-9, atol=1e-11)


# Moves between devices: tests/cuda replays forward mode there.
NOT_REACHED_ON_THE_CPU = {"to_device"}


def test_every_op_with_a_jvp_rule_is_pushed_forward_by_it_in_a_case_here(monkeypatch):
    reached = set()
    push_forward = forward.push_forward

    def recording(cls, *args):
        if getattr(cls, "spec", None) is not None and cls.spec.jvp is not None:
            reached.add(cls.op_name)
        return push_forward(cls, *args)

    monkeypatch.setattr(forward, "push_forward", recording)
    x, w = numdiff.tensor(RNG.standard_normal((3, 4))), numdiff.tensor(RNG.standard_normal((4, 3)))
    for fn in [*LINEAR_CASES.values(), *RULE_CASES.values()]:
        func.jvp(lambda a, b, fn=fn: fn(numdiff, a, b), (x, w), (x * 0.5, w * 0.5))
    reached |= set(RULES) | {"logcumsumexp"}  # the scalar rules' and logcumsumexp's own tests
    ruled = {name for name, spec in SPECS.items() if spec.jvp is not None}
    assert ruled - reached - NOT_REACHED_ON_THE_CPU == set(), "ops with a jvp rule no case here checks"
    assert NOT_REACHED_ON_THE_CPU <= ruled

FALLBACK_CASES = {
    "cumprod": (lambda lib, x: x.cumprod(1), ("cumprod",)),
    "prod and amax": (lambda lib, x: x.prod(1) + x.amax(0).sum(), ("prod", "amax")),
    "max_pool2d": (lambda lib, x: lib.nn.functional.max_pool2d(x.reshape(1, 1, 3, 4), 2), ("max_pool2d",)),
    "inverse and det": (lambda lib, x: (lib.linalg.inv(x[:, :3] + 3 * lib.eye(3, dtype=lib.float64)), lib.linalg.det(x[:, 1:])), ("linalg_inv", "linalg_det")),
    "clamp": (lambda lib, x: x.clamp(-0.5, 0.6), ("clamp",)),
    "cross_entropy": (lambda lib, x: lib.nn.functional.cross_entropy(x, lib.tensor([0, 3, 1])), ("cross_entropy",)),
}


@pytest.mark.parametrize("name", sorted(FALLBACK_CASES))
def test_ops_without_a_rule_are_pushed_forward_by_double_vjp(name):
    fn, ops = FALLBACK_CASES[name]
    assert all(SPECS[op].jvp is None for op in ops), "the fallback case names an op with a rule now: pick another"
    x, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    ours = func.jvp(lambda a: fn(numdiff, a), (numdiff.tensor(x),), (numdiff.tensor(t),))
    theirs = torch.func.jvp(lambda a: fn(torch, a), (torch.tensor(x),), (torch.tensor(t),))
    for o, r in zip(ours, theirs):
        for a, b in zip(o if isinstance(o, tuple) else (o,), r if isinstance(r, tuple) else (r,)):
            _close(a, b, rtol=1e-9, atol=1e-11)
    # Nothing leaks from the fallback's fresh leaves: the results are plain tensors.
    assert not any(p.requires_grad for p in (ours[1] if isinstance(ours[1], tuple) else (ours[1],)))


def test_jacfwd_matches_torch_on_rule_and_fallback_ops():
    x = RNG.standard_normal((3, 4))

    def fn(lib, v):
        return (lib.tanh(v) @ v.t()).cumprod(0) + lib.nn.functional.log_softmax(v, 1).sum(1, keepdim=True)

    _close(func.jacfwd(lambda v: fn(numdiff, v))(numdiff.tensor(x)), torch.func.jacfwd(lambda v: fn(torch, v))(torch.tensor(x)))


def test_detach_drops_the_tangent_as_in_torch_func():
    x, t = RNG.standard_normal(3), RNG.standard_normal(3)
    ours = func.jvp(lambda v: v.detach() * v + v.data.exp(), (numdiff.tensor(x),), (numdiff.tensor(t),))[1]
    theirs = torch.func.jvp(lambda v: v.detach() * v + v.data.exp(), (torch.tensor(x),), (torch.tensor(t),))[1]
    _close(ours, theirs)


def test_one_tensor_passed_as_two_primals_carries_two_tangents():
    x = numdiff.tensor(RNG.standard_normal(3))
    t1, t2 = numdiff.tensor(RNG.standard_normal(3)), numdiff.tensor(RNG.standard_normal(3))
    _, pushed = func.jvp(lambda a, b: a * b.sin(), (x, x), (t1, t2))
    np.testing.assert_allclose(pushed.numpy(), (t1 * x.sin() + x * x.cos() * t2).numpy(), rtol=1e-12)


def test_logcumsumexp_pushes_forward_by_its_rule_where_the_double_vjp_gave_zero(monkeypatch):
    # Its backward splits the output gradient by sign, so the double vjp at the dummy cotangent 0
    # gave a zero jacfwd on main.
    _no_fallback(monkeypatch)
    rng = np.random.default_rng(3)
    x, t = rng.standard_normal((2, 5)) * 3, rng.standard_normal((2, 5))
    ours = func.jvp(lambda v: numdiff.logcumsumexp(v, 1), (numdiff.tensor(x),), (numdiff.tensor(t),))
    theirs = torch.func.jvp(lambda v: torch.logcumsumexp(v, 1), (torch.tensor(x),), (torch.tensor(t),))
    _close(ours[1], theirs[1], rtol=1e-8)  # the tangent's parts go through log and exp
    # (torch's float64 derivative of the first entry, exactly 1, comes out as 1 - 7e-8 here)
    ours = func.jacfwd(lambda v: numdiff.logcumsumexp(v, 0))(numdiff.tensor(x))
    _close(ours, torch.func.jacfwd(lambda v: torch.logcumsumexp(v, 0))(torch.tensor(x)), rtol=1e-6)
