"""PyTorch's small top-level utilities (numdiff._torch_misc) against torch: promotion queries,
the random state, windows, vander, combinations, unravel_index, histogram, random fills."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import numdiff


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize(
    "a, b",
    [
        ("int32", 2.5), ("int8", 300), ("bool", True), ("float16", 1.0), ("uint8", -1),
        ("int64", "float16"), ("bool", "int8"), ("uint8", "int8"), ("bfloat16", "float16"),
    ],
)  # fmt: skip
def test_result_type_matches_torch(a, b):
    def build(lib, value, ndim):
        return lib.ones((2,) * ndim, dtype=getattr(lib, value)) if isinstance(value, str) else value

    for ndim_b in (0, 1):
        ours = numdiff.result_type(build(numdiff, a, 1), build(numdiff, b, ndim_b))
        theirs = torch.result_type(build(torch, a, 1), build(torch, b, ndim_b))
        assert _name(ours) == _name(theirs), (a, b, ndim_b)


@pytest.mark.parametrize("a", ["bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("b", ["bool", "uint8", "int16", "int32", "float16", "bfloat16", "float64"])
def test_promote_types_and_can_cast_match_torch(a, b):
    assert _name(numdiff.promote_types(getattr(numdiff, a), getattr(numdiff, b))) == _name(
        torch.promote_types(getattr(torch, a), getattr(torch, b))
    )
    assert numdiff.can_cast(getattr(numdiff, a), getattr(numdiff, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))


def test_rng_state_round_trips_and_bad_state_is_refused():
    state = numdiff.get_rng_state()
    first = numdiff.rand(4)
    numdiff.set_rng_state(state)
    assert numdiff.equal(numdiff.rand(4), first)
    numdiff.manual_seed(3)
    assert numdiff.initial_seed() == 3
    with pytest.raises(TypeError, match="set_rng_state"):
        numdiff.set_rng_state(numdiff.ones(3))
    with pytest.raises(ValueError, match="set_rng_state"):
        numdiff.set_rng_state(numdiff.tensor([1, 2, 3], dtype=numdiff.uint8))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, length, periodic):
    ours = getattr(numdiff, name)(length, periodic, dtype=numdiff.float64)
    theirs = getattr(torch, name)(length, periodic, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match=name):
        getattr(numdiff, name)(4, dtype=numdiff.int64)
    with pytest.raises(ValueError, match=name):
        getattr(numdiff, name)(-1)


def test_vander_and_combinations_match_torch_with_gradients():
    x = np.array([0.5, -1.5, 2.0])
    for kwargs in ({}, {"N": 4, "increasing": True}, {"N": 0}):
        ours = numdiff.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        a, b = numdiff.vander(ours, **kwargs), torch.vander(theirs, **kwargs)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
        if b.numel():  # the gradient of sum(x^k) over the columns' powers k
            a.sum().backward()
            powers = np.arange(b.shape[1])
            expected = (powers * x[:, None] ** np.maximum(powers - 1, 0)).sum(1)
            np.testing.assert_allclose(ours.grad.numpy(), expected)
    for r, replace in ((2, False), (3, False), (2, True), (0, False), (5, False)):
        a = numdiff.combinations(numdiff.tensor([1.0, 2.0, 3.0, 4.0]), r, replace)
        b = torch.combinations(torch.tensor([1.0, 2.0, 3.0, 4.0]), r, replace)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="vander: x must be 1-D"):
        numdiff.vander(numdiff.ones(2, 2))
    with pytest.raises(ValueError, match="combinations: input must be 1-D"):
        numdiff.combinations(numdiff.ones(2, 2))


def test_unravel_index_and_histogram_match_torch():
    ours = numdiff.unravel_index(numdiff.tensor([5, 7, -1]), (3, 4))
    theirs = torch.unravel_index(torch.tensor([5, 7, -1]), (3, 4))
    assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]
    with pytest.raises(IndexError, match="unravel_index"):
        numdiff.unravel_index(numdiff.tensor([12]), (3, 4))
    data = np.random.default_rng(0).standard_normal(50).astype(np.float32)
    for kwargs in ({"bins": 5}, {"bins": 4, "range": (-1.0, 1.0), "density": True}):
        hist, edges = numdiff.histogram(numdiff.tensor(data), **kwargs)
        their_hist, their_edges = torch.histogram(torch.tensor(data), **kwargs)
        np.testing.assert_allclose(hist.numpy(), their_hist.numpy(), rtol=1e-5)
        np.testing.assert_allclose(edges.numpy(), their_edges.numpy(), rtol=1e-5)
    with pytest.raises(TypeError, match="histogram: input must be a floating"):
        numdiff.histogram(numdiff.tensor([1, 2]))


def test_random_fills_have_the_right_distribution_and_refuse_bad_parameters():
    numdiff.manual_seed(0)
    x = numdiff.empty(20000, dtype=numdiff.float64)
    assert abs(float(x.exponential_(2.0).mean()) - 0.5) < 0.02
    assert float(x.geometric_(0.25).min()) >= 1 and abs(float(x.mean()) - 4.0) < 0.15
    assert abs(float(x.log_normal_(0.0, 0.5).log().std()) - 0.5) < 0.02
    assert abs(float(x.cauchy_(1.0, 2.0).median()) - 1.0) < 0.1
    ints = numdiff.empty(5000, dtype=numdiff.int64).random_(3, 7)
    assert set(ints.unique().tolist()) == {3, 4, 5, 6}
    assert float(numdiff.empty(100).random_(5).max()) < 5
    with pytest.raises(ValueError, match="exponential_: lambd"):
        x.exponential_(-1.0)
    with pytest.raises(ValueError, match="geometric_: p"):
        x.geometric_(1.5)
    with pytest.raises(TypeError, match="cauchy_: expected a floating"):
        numdiff.zeros(3, dtype=numdiff.int64).cauchy_()
    with pytest.raises(ValueError, match="random_"):
        x.random_(5, 2)


def test_fill_diagonal_and_new_match_torch():
    for dims, wrap in (((3, 3), False), ((5, 2), True), ((5, 2), False), ((2, 5), False), ((3, 3, 3), False)):
        ours = numdiff.zeros(*dims).fill_diagonal_(2.0, wrap=wrap)
        theirs = torch.zeros(*dims).fill_diagonal_(2.0, wrap=wrap)
        assert ours.tolist() == theirs.tolist()
    with pytest.raises(ValueError, match="fill_diagonal_"):
        numdiff.zeros(2, 3, 4).fill_diagonal_(1.0)
    x = numdiff.ones(2, dtype=numdiff.float64)
    assert tuple(x.new(2, 3).shape) == (2, 3) and x.new(2, 3).dtype == numdiff.float64
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new().numel() == 0
    assert tuple(x.new(numdiff.Size([4])).shape) == (4,)


def test_process_switches_are_kept_and_validated():
    numdiff.set_float32_matmul_precision("high")
    assert numdiff.get_float32_matmul_precision() == "high"
    numdiff.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        numdiff.set_float32_matmul_precision("low")
    numdiff.set_anomaly_enabled(True)
    assert numdiff.is_anomaly_enabled()
    numdiff.set_anomaly_enabled(False)
    assert not numdiff.is_anomaly_enabled()
    assert numdiff.typename(numdiff.ones(2)) == numdiff.ones(2).type()
    assert numdiff.scalar_tensor(3).dtype == numdiff.float32
    base = numdiff.ones(3)
    assert numdiff.asarray(base) is base or numdiff.asarray(base)._data is base._data
    assert numdiff.asarray(base, copy=True)._data is not base._data
    assert tuple(numdiff.empty_strided((2, 3), (3, 1)).shape) == (2, 3)


def test_keyword_arguments_programs_pass_are_accepted():
    g = numdiff.Generator().manual_seed(4)
    first = numdiff.rand_like(numdiff.ones(3), generator=g)
    assert not numdiff.equal(first, numdiff.rand_like(numdiff.ones(3), generator=g))
    assert numdiff.randn_like(numdiff.ones(2, dtype=numdiff.float64), generator=g).dtype == numdiff.float64
    assert set(numdiff.randint_like(numdiff.ones(50), 2, 4, generator=g).tolist()) <= {2.0, 3.0}
    assert sorted(numdiff.randperm(5, requires_grad=False).tolist()) == [0, 1, 2, 3, 4]
    assert numdiff.prod(numdiff.tensor([1, 2, 3]), dtype=numdiff.float64).dtype == numdiff.float64
    assert numdiff.tensor([2, 3]).prod(0, dtype=numdiff.float32).item() == 6.0
    weights = numdiff.ones(2, requires_grad=True)
    assert weights.numpy(force=True).tolist() == [1.0, 1.0]
    assert numdiff.gather(numdiff.arange(3.0), 0, numdiff.tensor([2]), sparse_grad=False).tolist() == [2.0]


@pytest.mark.parametrize("seed", [-1, -(2**63), 2**64 - 1, 0, 12345])
def test_manual_seed_takes_pytorchs_range(seed):
    """A negative seed wraps modulo 2**64 as in PyTorch (torch.manual_seed(-1).initial_seed() is 2**64 - 1),
    and the same seed draws the same numbers again."""
    first = numdiff.manual_seed(seed)
    assert first.initial_seed() == seed % 2**64
    a = numdiff.randn(4).numpy()
    numdiff.manual_seed(seed % 2**64)
    np.testing.assert_array_equal(numdiff.randn(4).numpy(), a)
    assert numdiff.Generator().manual_seed(seed).initial_seed() == seed % 2**64


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1])
def test_manual_seed_out_of_range_names_the_seed(seed):
    with pytest.raises(ValueError, match=f"manual_seed: the seed {seed} is outside"):
        numdiff.manual_seed(seed)


def test_frombuffer_shares_the_buffers_memory_as_torchs():
    raw = bytearray(np.arange(6, dtype=np.float32).tobytes())
    ours = numdiff.frombuffer(raw, dtype=numdiff.float32, count=4, offset=4)
    theirs = torch.frombuffer(bytearray(raw), dtype=torch.float32, count=4, offset=4)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours[0] = 9.0
    assert np.frombuffer(raw, np.float32)[1] == 9.0
    assert numdiff.frombuffer(raw, dtype=numdiff.int16).shape == (12,)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dtype": numdiff.float64}, "not a multiple of numdiff.float64's 8"),
    ({"dtype": numdiff.float32, "count": 7}, "7 elements of numdiff.float32 from offset 0 pass the buffer's 24 bytes"),
    ({"dtype": numdiff.float32, "offset": 24}, r"frombuffer: offset \(24\) must be in \[0, 24\)"),
])  # fmt: skip
def test_frombuffer_refuses_what_does_not_fit_naming_the_sizes(kwargs, message):
    raw = bytearray(20) + bytearray(4)
    if kwargs["dtype"] is numdiff.float64:
        raw = raw[:20]
        message = "the buffer's 20 bytes from offset 0 are " + message
    with pytest.raises(ValueError, match=message):
        numdiff.frombuffer(raw, **kwargs)


def test_set_flush_denormal_reports_that_it_set_nothing():
    assert numdiff.set_flush_denormal(True) is False
    with pytest.raises(TypeError, match="set_flush_denormal: mode must be a bool"):
        numdiff.set_flush_denormal("yes")


def _methods_of(lib):
    x = lib.tensor([-1.5, 0.2, 0.3, 3.0, -0.1], dtype=lib.float64)
    hist, edges = x.histogram(4)
    out = lib.zeros(2, dtype=lib.float64)
    out.addmv_(lib.ones(2, 5, dtype=lib.float64), x, alpha=2.0)
    return [hist, edges, x.prelu(lib.tensor([0.25], dtype=lib.float64)), x.hardshrink(0.25), out]


def test_histogram_prelu_hardshrink_and_addmv_as_methods_match_torch():
    for ours, theirs in zip(_methods_of(numdiff), _methods_of(torch)):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_a_generators_own_state_round_trips_as_torch_generators_does():
    g = numdiff.Generator().manual_seed(3)
    numdiff.randn(4, generator=g)
    state = g.get_state()
    first = numdiff.rand(5, generator=g)
    assert g.set_state(state) is g
    assert numdiff.equal(numdiff.rand(5, generator=g), first)
    other = numdiff.Generator().set_state(state)  # another generator takes it, seed included
    assert numdiff.equal(numdiff.rand(5, generator=other), first) and other.initial_seed() == 3
    assert str(g.device) == "cpu" and isinstance(g.seed(), int)
    with pytest.raises(TypeError, match="uint8 tensor"):
        g.set_state(numdiff.ones(3))
