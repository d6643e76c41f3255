"""dtype names, PyTorch's promotion, conversions (bfloat16 bit-for-bit), defaults, formatting."""

import itertools

import numpy as np
import pytest
import torch

import numdiff as nd

NAMES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]
ALIASES = {"float": "float32", "double": "float64", "half": "float16", "short": "int16", "int": "int32", "long": "int64"}


def test_torch_dtype_names_and_aliases_exist():
    for name in NAMES:
        assert getattr(nd, name).name == name
        assert getattr(nd, name).itemsize == getattr(torch, name).itemsize
        assert getattr(nd, name).is_floating_point == getattr(torch, name).is_floating_point
    for alias, name in ALIASES.items():
        assert getattr(nd, alias) is getattr(nd, name)


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(NAMES, 2)))
def test_promotion_matches_torch(a, b):
    expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
    got = nd._dtype.promote(getattr(nd, a), getattr(nd, b))
    assert got.name == str(expected).removeprefix("torch.")


def test_mixed_integer_arithmetic_promotes_like_torch():
    x = nd.tensor([100, 7], dtype=nd.uint8) + nd.tensor([100, -8], dtype=nd.int8)
    expected = torch.tensor([100, 7], dtype=torch.uint8) + torch.tensor([100, -8], dtype=torch.int8)
    assert x.dtype is nd.int16 and x.tolist() == expected.tolist()


def _special_floats() -> np.ndarray:
    rng = np.random.default_rng(0)
    values = rng.standard_normal(2000).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, 2000)
    ties = (np.arange(1, 200, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exactly halfway
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-40, 1e-45, 65504, 65520], np.float32)
    return np.concatenate([values, ties, -ties, specials])


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_float32_to_half_types_is_bit_identical_to_torch(name):
    values = _special_floats()
    ours = nd.tensor(values).to(getattr(nd, name))
    theirs = torch.tensor(values).to(getattr(torch, name))
    our_bits = ours._data.view(np.uint16)
    their_bits = theirs.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(our_bits, their_bits)
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_float64_and_int_conversions_match_torch(name):
    rng = np.random.default_rng(1)
    doubles = rng.standard_normal(500) * 1e3
    ints = rng.integers(-(2**40), 2**40, 500)
    for values in (doubles, ints):
        ours = nd.tensor(values).to(getattr(nd, name)).double().numpy()
        theirs = torch.tensor(values).to(getattr(torch, name)).double().numpy()
        np.testing.assert_array_equal(ours, theirs)
    back = nd.tensor([1.7, -2.5, 300.9]).to(getattr(nd, name)).long()
    assert back.tolist() == torch.tensor([1.7, -2.5, 300.9]).to(getattr(torch, name)).long().tolist()


def test_conversion_methods_and_type_strings():
    t = nd.tensor([1.5, -2.0])
    assert t.half().dtype is nd.float16 and t.bfloat16().dtype is nd.bfloat16
    assert t.short().dtype is nd.int16 and t.char().dtype is nd.int8 and t.byte().dtype is nd.uint8
    assert t.type() == torch.tensor([1.5]).type() == "torch.FloatTensor"
    assert t.half().type() == "torch.HalfTensor"
    assert t.type(nd.float64).dtype is nd.float64
    assert t.type("torch.DoubleTensor").dtype is nd.float64
    assert t.to(nd.half).dtype is nd.float16
    assert nd.zeros(2, dtype=nd.bfloat16).tolist() == [0.0, 0.0]
    assert nd.ones(2, dtype=nd.bfloat16).float().tolist() == [1.0, 1.0]
    assert repr(nd.tensor([1.5], dtype=nd.bfloat16)) == "tensor([1.5000], dtype=numdiff.bfloat16)"


def test_float16_computes_like_torchs_cpu_build():
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((6, 5)).astype(np.float16) for _ in range(2))
    c = rng.standard_normal((5, 4)).astype(np.float16)
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    na, nb, nc = (nd.from_numpy(x) for x in (a, b, c))
    for ours, theirs in [(na + nb, ta + tb), (na * nb, ta * tb), ((na @ nc), (ta @ tc)), (na.exp(), ta.exp())]:
        assert ours.dtype is nd.float16
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_float16_gradients_flow_through_conversion():
    w = nd.tensor([0.5, 2.0], dtype=nd.float16, requires_grad=True)
    (w.float() * 3).sum().backward()
    assert w.grad.dtype is nd.float16 and w.grad.tolist() == [3.0, 3.0]
    b = nd.tensor([0.5, 2.0], dtype=nd.bfloat16, requires_grad=True)
    (b.float() ** 2).sum().backward()
    assert b.grad.dtype is nd.bfloat16 and b.grad.float().tolist() == [1.0, 4.0]


def test_bfloat16_computes_in_float32_and_rounds_once_like_torch():
    values = [[1.0, 2.5], [-3.0, 4.75]]
    b, tb = nd.tensor(values, dtype=nd.bfloat16), torch.tensor(values, dtype=torch.bfloat16)
    assert b.t().reshape(4).float().tolist() == [1.0, -3.0, 2.5, 4.75]
    assert b[1].float().tolist() == [-3.0, 4.75] and b[0, 1].item() == 2.5
    for op in (lambda t: t + 1, lambda t: t.exp(), lambda t: t * t / 3, lambda t: t.sum(), lambda t: t.mean(1),
               lambda t: t.softmax(1), lambda t: t @ t, lambda t: t.sqrt(), lambda t: t // 2):
        got, expected = op(b), op(tb)
        assert got.dtype is nd.bfloat16
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
    with pytest.raises(TypeError, match="BFloat16"):
        b.numpy()


def test_bfloat16_gradients_flow_in_bfloat16_like_torch():
    b = nd.tensor([0.5, 1.5, 2.0], dtype=nd.bfloat16, requires_grad=True)
    tb = torch.tensor([0.5, 1.5, 2.0], dtype=torch.bfloat16, requires_grad=True)
    (b.exp() * b).sum().backward()
    (tb.exp() * tb).sum().backward()
    assert b.grad.dtype is nd.bfloat16
    np.testing.assert_allclose(b.grad.float().numpy(), tb.grad.float().numpy(), rtol=1e-2)


def test_float16_without_a_kernel_computes_in_float32_like_torch():
    x, w = torch.randn(1, 1, 4, 4).half(), torch.randn(1, 1, 3, 3).half()
    got = nd.nn.functional.conv2d(nd.tensor(x.float().numpy()).half(), nd.tensor(w.float().numpy()).half())
    assert got.dtype is nd.float16
    np.testing.assert_allclose(got.float().numpy(), torch.nn.functional.conv2d(x, w).float().numpy(), rtol=2e-3, atol=2e-3)


def test_unknown_dtypes_are_refused():
    with pytest.raises(TypeError, match="supported"):
        nd.from_numpy(np.zeros(2, np.uint32))
    with pytest.raises(TypeError, match="cannot interpret"):
        nd.zeros(2, dtype="complex-ish")


def test_set_default_dtype_changes_factories_and_python_floats():
    assert nd.get_default_dtype() is nd.float32
    try:
        nd.set_default_dtype(nd.float64)
        assert nd.get_default_dtype() is nd.float64
        assert nd.tensor([1.5]).dtype is nd.float64 and nd.zeros(2).dtype is nd.float64
        assert nd.randn(2).dtype is nd.float64 and nd.arange(0.0, 1.0, 0.5).dtype is nd.float64
        assert repr(nd.tensor([1.5])) == "tensor([1.5000])"
        assert nd.tensor([1]).dtype is nd.int64
    finally:
        nd.set_default_dtype(nd.float32)
    with pytest.raises(TypeError, match="set_default_dtype: only float32, float64 and float16"):
        nd.set_default_dtype(nd.int64)
    with pytest.raises(TypeError, match="only float32, float64 and float16.*bfloat16 tensors are made"):
        nd.set_default_dtype(nd.bfloat16)


def test_set_default_device_cpu_round_trip():
    assert nd.get_default_device() == "cpu"
    nd.set_default_device("cpu")
    try:
        assert nd.zeros(1).device == "cpu"
    finally:
        nd.set_default_device(None)
    with pytest.raises(ValueError, match="unknown device"):
        nd.set_default_device("tpu")


def test_format_spec_on_a_zero_dim_tensor_formats_its_number():
    loss = nd.tensor(0.123456)
    assert f"{loss:.4f}" == f"{torch.tensor(0.123456):.4f}" == "0.1235"
    assert f"{nd.tensor(2.345, dtype=nd.float64):+.2f}" == "+2.35"
    assert f"{nd.tensor(3):>4}" == "   3"
    assert f"{nd.tensor([1.5])}" == "tensor([1.5000])"


def test_format_spec_on_a_dimensioned_tensor_is_refused_as_in_torch():
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{nd.tensor([1.5]):.2f}"


def test_randint_has_torchs_two_forms():
    assert nd.randint(10, (2, 3)).shape == (2, 3)
    x = nd.randint(5, 8, (100,))
    assert x.dtype is nd.int64 and 5 <= int(x.min()) and int(x.max()) < 8
    assert nd.randint(3, size=(4,)).shape == (4,)
    assert nd.randint(0, 2, (3,), dtype=nd.float32).dtype is nd.float32
    with pytest.raises(TypeError, match="randint: missing the size"):
        nd.randint(10)
    with pytest.raises(ValueError, match=r"randint: high \(3\) must be greater than low \(5\)"):
        nd.randint(5, 3, (2,))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_finfo_matches_torch(name):
    ours, theirs = nd.finfo(getattr(nd, name)), torch.finfo(getattr(torch, name))
    for key in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, key) == getattr(theirs, key), key


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = nd.iinfo(getattr(nd, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.max, ours.min) == (theirs.bits, theirs.max, theirs.min)


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(TypeError, match="finfo: numdiff.int64 is not a floating point dtype"):
        nd.finfo(nd.int64)
    with pytest.raises(TypeError, match="iinfo: numdiff.float32 is a floating point dtype"):
        nd.iinfo(nd.float32)


def test_module_half_and_bfloat16_convert_parameters():
    layer = nd.nn.Linear(3, 2).half()
    assert layer.weight.dtype is nd.float16 and layer.weight.is_leaf and layer.weight.requires_grad
    out = layer(nd.ones(4, 3).half())
    out.sum().backward()
    assert out.dtype is nd.float16 and layer.weight.grad.dtype is nd.float16
    assert nd.nn.Linear(3, 2).bfloat16().bias.dtype is nd.bfloat16


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ByteTensor"])
def test_legacy_tensor_types_build_and_check_like_torch(name):
    ours, theirs = getattr(nd, name), getattr(torch, name)
    assert ours([1, 2]).dtype.name == str(theirs([1, 2]).dtype).removeprefix("torch.")
    assert ours([1, 2]).tolist() == theirs([1, 2]).tolist()
    assert ours(2, 3).shape == theirs(2, 3).shape and ours().shape == theirs().shape
    assert isinstance(ours([1]), ours) and not isinstance(ours([1]), nd.BoolTensor)
    assert nd.tensor([1.7, 2.2]).type(ours).dtype is ours.dtype
    with pytest.raises(TypeError, match=f"{name}\\(\\): expected sizes"):
        ours(2.5)


def test_new_factories_and_type_as_take_dtype_and_device_from_the_tensor():
    ours, theirs = nd.ones(2, dtype=nd.float64), torch.ones(2, dtype=torch.float64)
    pairs = [
        (ours.new_zeros(3), theirs.new_zeros(3)),
        (ours.new_ones((2, 2)), theirs.new_ones((2, 2))),
        (ours.new_full((2,), 7), theirs.new_full((2,), 7)),
        (ours.new_tensor([1, 2]), theirs.new_tensor([1, 2])),
        (ours.new_zeros(2, dtype=nd.int64), theirs.new_zeros(2, dtype=torch.int64)),
        (nd.tensor([1, 2]).type_as(ours), torch.tensor([1, 2]).type_as(theirs)),
    ]
    for a, b in pairs:
        assert a.dtype.name == str(b.dtype).removeprefix("torch.") and a.tolist() == b.tolist()
    assert ours.new_empty(2, 3).shape == (2, 3)
    assert ours.new_tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="type_as: expected a Tensor"):
        ours.type_as(nd.float32)


@pytest.mark.parametrize(
    "reduce",
    [
        lambda m, x: x.mean(),
        lambda m, x: x.var(),
        lambda m, x: x.std(),
        lambda m, x: m.var_mean(x)[1],
        lambda m, x: m.softmax(x, 0)[:3],
        lambda m, x: x.norm(),
        lambda m, x: m.linalg.vector_norm(x, 3),
        lambda m, x: x.reshape(4, -1).mean(1),
    ],
)
def test_float16_reductions_past_half_range_compute_in_float32_like_torch(reduce):
    # The sums (and a mean's count, 100000 as float16 is inf) overflowed in float16: the mean of
    # 100,000 ones was NaN, its std NaN, softmax 0 and norm inf (PyTorch: 1, 0, 1e-5, 316.25).
    torch = pytest.importorskip("torch")
    values = np.ones(100_000, np.float16)
    ours = reduce(nd, nd.tensor(values, requires_grad=True))
    theirs = reduce(torch, torch.tensor(values, requires_grad=True))
    assert ours.dtype is nd.float16
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


@pytest.mark.parametrize(
    "op",
    [lambda x, y: x * y, lambda x, y: x / y, lambda x, y: y**x, lambda x, y: x.exp(), lambda x, y: y.log(), lambda x, y: x.tanh(),
     lambda x, y: x.maximum(y), lambda x, y: x.abs()],
)
def test_float16_elementwise_backward_past_the_small_size_matches_torch(op):
    # Past 256 elements the backward ran a Numba loop, which has no float16 arrays: it raised
    # NotImplementedError("float16") from inside Numba.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(1000) * 0.5).astype(np.float16)
    b = (rng.standard_normal(1000) * 0.5 + 2.0).astype(np.float16)
    grads = []
    for lib in (nd, torch):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        op(x, y).float().sum().backward()
        grads.append([t.grad.float().numpy() if t.grad is not None else np.zeros(1000, np.float32) for t in (x, y)])
    for ours, theirs in zip(*grads):
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize(
    "op", [lambda x: x / 100000, lambda x: x / 1e5, lambda x: x * 1e-5, lambda x: x - 70000, lambda x: x / 7, lambda x: 0.1 - x]
)
def test_float16_with_a_python_number_computes_in_float32_like_torch(op):
    # NumPy rounds the number to float16 first: 1e5 became inf, so x / 1e5 was 0 with gradient 0.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (nd, torch):
        x = lib.tensor([1.0, 2.0, 1000.0], dtype=lib.float16, requires_grad=True)
        out = op(x)
        out.float().sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "op",
    [lambda m, a: a + 2.5, lambda m, a: a * 0.5, lambda m, a: a / 2, lambda m, a: a / a, lambda m, a: m.sqrt(a), lambda m, a: m.exp(a),
     lambda m, a: m.atan2(a, a), lambda m, a: 2.5**a, lambda m, a: m.clamp(a, 0.5, 1.5), lambda m, a: m.where(a > 1, a, 2.5),
     lambda m, a: (a > 1) + 1.5],
)
def test_integer_to_float_promotion_takes_the_default_dtype_like_torch(op):
    # An integer meeting a float (or an op that needs floats) became float32 even after
    # set_default_dtype(float64): PyTorch takes the default dtype.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (nd, torch):
        lib.set_default_dtype(lib.float64)
        try:
            out = op(lib, lib.tensor([1, 2, 3]))
        finally:
            lib.set_default_dtype(lib.float32)
        results.append((str(out.dtype).split(".")[1], out.numpy()))
    assert results[0][0] == results[1][0] == "float64"
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-15)  # 1 ulp: sqrt's last bit


# Lists of NumPy scalars and arrays, as built from a NumPy computation (np.mean, an array's
# rows): numdiff gave them the default float dtype, so [np.float64(0.1)] lost its digits.
NUMPY_ITEM_LISTS = [
    [np.float64(0.1), 2.0],
    [np.float32(1.5)],
    [np.float16(1.0), 2],
    [np.int32(1), np.int32(2)],
    [np.int16(1), 2],
    [np.uint8(1), np.int8(-1)],
    [np.float32(1.0), True],
    [np.bool_(True), False],
    [np.int64(3), 2.0],
    [np.ones(2), np.zeros(2)],
    [np.ones(2, dtype=np.float32), [1.0, 2.0]],
    [np.arange(2, dtype=np.int32), [1, 2]],
    [[np.float64(0.5)], [np.float64(0.25)]],
]


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("case", range(len(NUMPY_ITEM_LISTS)))
def test_a_list_of_numpy_items_promotes_their_dtypes_like_torch(case, default):
    data = NUMPY_ITEM_LISTS[case]
    torch_default, nd_default = torch.get_default_dtype(), nd.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default))
    nd.set_default_dtype(getattr(nd, default))
    try:
        expected, got = torch.tensor(data), nd.tensor(data)
    finally:
        torch.set_default_dtype(torch_default)
        nd.set_default_dtype(nd_default)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
    assert got.tolist() == expected.tolist()


def test_a_list_of_numpy_items_keeps_an_explicit_dtype_and_refuses_an_unsupported_one():
    assert nd.tensor([np.float64(0.1)], dtype=nd.float32).dtype is nd.float32
    assert nd.tensor([np.float64(0.1)]).item() == 0.1
    with pytest.raises(TypeError, match="complex128"):
        nd.tensor([np.complex128(1.0)])
