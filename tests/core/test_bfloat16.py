"""bfloat16 as a storage dtype that every op computes on: writes, reads, ops and files, each
compared with torch (reference only) bit for bit where PyTorch rounds once from float32."""

import numpy as np
import pytest
import torch

import numdiff as nd

VALUES = [[0.0, 1.5, -2.25], [3.140625, float("nan"), -7.0]]


def _pair():
    return nd.tensor(VALUES, dtype=nd.bfloat16), torch.tensor(VALUES, dtype=torch.bfloat16)


def _bits(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.view(torch.int16).numpy().view(np.uint16)
    return t._data.view(np.uint16)


def _write(lib, how):
    t = lib.zeros(2, 3, dtype=lib.bfloat16)
    if how == "fill_ float":
        t.fill_(1.5)
    elif how == "fill_ int":
        t.fill_(1)
    elif how == "setitem element":
        t[0, 1] = 1.5
    elif how == "setitem slice":
        t[0:2] = 2.5
    elif how == "setitem row from float32":
        t[1] = lib.tensor([1.0, 1.00390625, 3.0])  # 1.00390625 rounds to even in bfloat16
    elif how == "zero_ after fill":
        t.fill_(3.0).zero_()
    elif how == "masked_fill_":
        t.masked_fill_(lib.tensor([[True, False, True], [False, False, True]]), -0.75)
    elif how == "copy_ from float64":
        t.copy_(lib.tensor(VALUES, dtype=lib.float64))
    elif how == "add_":
        t.add_(0.1)
    elif how == "mul_ after fill":
        t.fill_(1.1).mul_(3)
    return t


@pytest.mark.parametrize("how", [
    "fill_ float", "fill_ int", "setitem element", "setitem slice", "setitem row from float32",
    "zero_ after fill", "masked_fill_", "copy_ from float64", "add_", "mul_ after fill",
])
def test_bfloat16_writes_store_the_rounded_value_like_torch(how):
    np.testing.assert_array_equal(_bits(_write(nd, how)), _bits(_write(torch, how)))


OPS = {
    "eq": lambda t: t == t.flip(0), "lt": lambda t: t < 1, "ge scalar": lambda t: t >= -2.25,
    "isnan": lambda t: t.isnan(), "isinf": lambda t: t.isinf(), "isfinite": lambda t: t.isfinite(),
    "argmax": lambda t: t.nan_to_num().argmax(), "argmin dim": lambda t: t.nan_to_num().argmin(1),
    "floor_divide": lambda t: t // 2, "remainder": lambda t: t % 2, "neg": lambda t: -t,
    "masked_fill": lambda t: t.masked_fill(t > 1, 0.5), "where": lambda t: t.where(t > 0, t * 2),
    "sort": lambda t: t.sort(1).values, "argsort": lambda t: t.nan_to_num().argsort(1),
    "unique": lambda t: t.nan_to_num().unique(), "sum": lambda t: t.nan_to_num().sum(),
    "mean": lambda t: t.nan_to_num().mean(1), "prod": lambda t: t.nan_to_num().prod(1),
    "cumsum": lambda t: t.nan_to_num().cumsum(1), "cummax": lambda t: t.nan_to_num().cummax(1).values,
    "amax": lambda t: t.nan_to_num().amax(0), "std": lambda t: t.nan_to_num().std(),
    "exp": lambda t: t.exp(), "tanh": lambda t: t.tanh(), "sigmoid": lambda t: t.sigmoid(),
    "relu": lambda t: torch.relu(t) if isinstance(t, torch.Tensor) else nd.relu(t),
    "softmax": lambda t: t.nan_to_num().softmax(1), "matmul": lambda t: t.nan_to_num() @ t.nan_to_num().t(),
    "add float32": lambda t: t + t.float(), "mul int": lambda t: t * 3, "truediv int tensor": lambda t: t / t.int(),
    "clamp": lambda t: t.clamp(-1, 1), "abs": lambda t: t.abs(), "round": lambda t: t.round(),
    "searchsorted": lambda t: (torch if isinstance(t, torch.Tensor) else nd).searchsorted(
        t.nan_to_num().flatten().sort().values, t.nan_to_num()),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_bfloat16_ops_match_torch(name):
    b, tb = _pair()
    got, expected = OPS[name](b), OPS[name](tb)
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
    if expected.dtype == torch.bfloat16:
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())
    else:
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_bfloat16_save_and_load_keep_every_bit(tmp_path):
    bits = np.array([0x3FC0, 0x7FC0, 0xFF80, 0x0001, 0x8000, 0x7F7F, 0x3F81], dtype=np.uint16)
    t = nd.tensor(np.zeros(7, dtype=np.float32)).bfloat16()
    t._data.view(np.uint16)[...] = bits
    model = nd.nn.Linear(3, 2).bfloat16()
    nd.save({"t": t, "model": model.state_dict()}, tmp_path / "b.pt")
    loaded = nd.load(tmp_path / "b.pt")
    assert loaded["t"].dtype is nd.bfloat16
    np.testing.assert_array_equal(_bits(loaded["t"]), bits)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(_bits(loaded["model"][key]), _bits(value))


@pytest.mark.parametrize("half", ["half", "bfloat16"])
def test_a_half_state_dict_loads_into_a_float32_module_like_torch(half):
    source = torch.nn.Linear(3, 2)
    state = {k: getattr(v, half)() for k, v in source.state_dict().items()}
    target = nd.nn.Linear(3, 2)
    target.load_state_dict({k: nd.tensor(v.float().numpy()).to(getattr(nd, half)) for k, v in state.items()})
    reference = torch.nn.Linear(3, 2)
    reference.load_state_dict(state)
    assert target.weight.dtype is nd.float32
    np.testing.assert_array_equal(target.weight.detach().numpy(), reference.weight.detach().numpy())


_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)


def _bf16(lib, array):
    return lib.tensor(array).to(lib.bfloat16)


LAYERS = {
    "linear": lambda lib: lib.nn.functional.linear(_bf16(lib, _X[0, 0]), _bf16(lib, _X[1, 0]), _bf16(lib, _X[0, 1, 0])),
    "conv2d": lambda lib: lib.nn.functional.conv2d(_bf16(lib, _X), _bf16(lib, _X[:, :, :3, :3])),
    "max_pool2d": lambda lib: lib.nn.functional.max_pool2d(_bf16(lib, _X), 2),
    "layer_norm": lambda lib: lib.nn.functional.layer_norm(_bf16(lib, _X), (6,)),
    "batch_norm": lambda lib: lib.nn.functional.batch_norm(_bf16(lib, _X), None, None, training=True),
    "embedding": lambda lib: lib.nn.functional.embedding(lib.tensor([0, 2]), _bf16(lib, _X[0, 0])),
    "cross_entropy": lambda lib: lib.nn.functional.cross_entropy(_bf16(lib, _X[0, 0]), lib.tensor([0, 1, 2, 3, 4, 5])),
    "interpolate bilinear": lambda lib: lib.nn.functional.interpolate(_bf16(lib, _X), scale_factor=2, mode="bilinear"),
    "attention": lambda lib: lib.nn.functional.scaled_dot_product_attention(_bf16(lib, _X[0]), _bf16(lib, _X[1]), _bf16(lib, _X[0])),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_bfloat16_layers_match_torch(name):
    got, expected = LAYERS[name](nd), LAYERS[name](torch)
    assert got.dtype is nd.bfloat16
    np.testing.assert_allclose(got.float().numpy(), expected.float().numpy(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
@pytest.mark.parametrize("optimizer", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_half_parameters_train_with_the_fused_optimizers_like_torch(half, optimizer):
    """The fused kernels take float32/float64: a half parameter's step runs on float32 copies of
    it, its gradient and its state, rounded back (they raised 'param must be float32 or float64')."""
    results = []
    for lib in (torch, nd):
        w = lib.tensor(_X[0, 0] * 0.1).to(getattr(lib, half)).requires_grad_()
        options = {"momentum": 0.9} if optimizer == "SGD" else {}
        opt = getattr(lib.optim, optimizer)([w], lr=0.05, **options)
        for _ in range(3):
            opt.zero_grad()
            (w.float().exp() * w.float()).sum().backward()
            opt.step()
        assert w.dtype is getattr(lib, half)
        results.append(w.detach().float().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=3e-2, atol=3e-2)
