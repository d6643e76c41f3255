"""The meta device: tensors with a shape, a dtype and strides but no storage (numdiff.meta).

Each forward here runs the same layer on the CPU and on the meta device and compares shapes and
dtypes; the reference strings and strides are PyTorch's."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn
import numdiff.nn.functional as F  # noqa: N812 - the usual PyTorch spelling
from numdiff.backend import CPU, META, backend_for, holds_values
from numdiff.func import functional_call, stack_module_state, vmap
from numdiff.meta import MetaArray, MetaTensorDataError


def test_meta_device_parses_and_prints_as_pytorch():
    assert str(numdiff.device("meta")) == "meta"
    assert repr(numdiff.device("meta")) == "device(type='meta')"
    assert numdiff.device("meta") == "meta"


def test_meta_device_with_an_index_is_refused_naming_it():
    with pytest.raises(ValueError, match="meta:1"):
        numdiff.device("meta:1")


@pytest.mark.parametrize("factory", ["empty", "zeros", "ones", "randn", "rand"])
def test_factories_on_meta_have_shape_dtype_and_no_values(factory):
    t = getattr(numdiff, factory)(2, 3, dtype=numdiff.float64, device="meta")
    assert (t.shape, t.dtype, t.device) == (numdiff.Size([2, 3]), numdiff.float64, numdiff.device("meta"))
    assert not holds_values(t._data)
    assert t.stride() == (3, 1) and t.is_contiguous()


def test_full_on_meta_takes_the_fill_values_dtype():
    assert numdiff.full((2,), 7, device="meta").dtype == numdiff.int64


def test_a_huge_meta_tensor_costs_no_memory():
    x = numdiff.empty(10**6, 10**6, device="meta")  # 4 TB if it had storage
    y = x @ x.T
    assert y.shape == (10**6, 10**6) and y.device.type == "meta"


def test_random_meta_tensors_leave_the_generator_alone():
    numdiff.manual_seed(0)
    numdiff.randn(5, device="meta")
    after_meta = numdiff.randn(3)
    numdiff.manual_seed(0)
    assert numdiff.equal(after_meta, numdiff.randn(3))


def test_device_context_sets_the_default_and_restores_it():
    with numdiff.device("meta"):
        assert numdiff.zeros(2).device.type == "meta"
        with numdiff.device("cpu"):
            assert numdiff.zeros(2).device.type == "cpu"
        layer = nn.Linear(4, 3)
    assert numdiff.zeros(2).device.type == "cpu"
    assert layer.weight.device.type == "meta" and layer.weight.requires_grad


def test_meta_repr_is_pytorchs():
    assert repr(numdiff.randn(3, 4, device="meta", requires_grad=True)) == (
        "tensor(..., device='meta', size=(3, 4), requires_grad=True)"
    )
    assert repr(numdiff.empty(3, dtype=numdiff.int64, device="meta")) == (
        "tensor(..., device='meta', size=(3,), dtype=numdiff.int64)"
    )
    assert repr(numdiff.empty((), device="meta")) == "tensor(..., device='meta', size=())"
    x = numdiff.randn(2, device="meta", requires_grad=True)
    assert repr(x * 2) == "tensor(..., device='meta', size=(2,), grad_fn=<MulBackward>)"


def test_meta_strides_follow_views_as_pytorchs():
    x = numdiff.empty(3, 4, device="meta")
    assert x.t().stride() == (1, 4) and not x.t().is_contiguous()
    assert x[:, 1:3].stride() == (4, 1)
    assert x.expand(2, 3, 4).stride() == (0, 4, 1)
    assert x.view(12).stride() == (1,)
    assert x.t().contiguous().stride() == (3, 1)


@pytest.mark.parametrize(
    "read, error",
    [
        (lambda t: t.sum().item(), MetaTensorDataError),
        (lambda t: t.tolist(), MetaTensorDataError),
        (lambda t: t.cpu(), MetaTensorDataError),
        (lambda t: bool(t.sum()), MetaTensorDataError),
        (lambda t: t.detach().numpy(), TypeError),
        (lambda t: np.asarray(t.detach()), TypeError),
        (lambda t: t[t > 0], NotImplementedError),
        (lambda t: t.nonzero(), NotImplementedError),
    ],
)
def test_reading_values_of_a_meta_tensor_raises(read, error):
    with pytest.raises(error):
        read(numdiff.randn(3, 4, device="meta", requires_grad=True))


def test_copying_out_of_meta_says_there_is_no_data_and_what_to_do():
    with pytest.raises(NotImplementedError, match="no data.*to_empty"):
        numdiff.empty(2, device="meta").to("cpu")


def test_meta_and_cpu_tensors_do_not_mix():
    with pytest.raises(RuntimeError, match="meta"):
        numdiff.empty(2, device="meta") + numdiff.ones(2)


def _layers() -> dict:
    return {
        "linear": (lambda **kw: nn.Linear(8, 4, **kw), (2, 8)),
        "conv2d": (lambda **kw: nn.Conv2d(3, 6, 3, padding=1, stride=2, **kw), (2, 3, 9, 9)),
        "conv_transpose2d": (lambda **kw: nn.ConvTranspose2d(3, 2, 3, stride=2, **kw), (2, 3, 5, 5)),
        "batch_norm": (lambda **kw: nn.BatchNorm2d(3, **kw), (2, 3, 5, 5)),
        "layer_norm": (lambda **kw: nn.LayerNorm(8, **kw), (2, 5, 8)),
        "group_norm": (lambda **kw: nn.GroupNorm(2, 4, **kw), (2, 4, 3, 3)),
        "attention": (lambda **kw: nn.MultiheadAttention(8, 2, batch_first=True, **kw), (2, 5, 8)),
        "encoder": (lambda **kw: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, **kw), (2, 5, 8)),
        "lstm": (lambda **kw: nn.LSTM(8, 5, batch_first=True, **kw), (2, 7, 8)),
        "gru": (lambda **kw: nn.GRU(8, 5, **kw), (7, 2, 8)),
        "conv1d": (lambda **kw: nn.Conv1d(3, 4, 3, **kw), (2, 3, 10)),
        "instance_norm": (lambda **kw: nn.InstanceNorm2d(3, affine=True, **kw), (2, 3, 5, 5)),
        "lstm_cell": (lambda **kw: nn.LSTMCell(8, 4, **kw), (2, 8)),
        "rms_norm": (lambda **kw: nn.RMSNorm(8, **kw), (2, 8)),
    }


@pytest.mark.parametrize("name", sorted(_layers()))
def test_layer_built_on_meta_runs_forward_with_cpu_shapes(name):
    make, input_shape = _layers()[name]
    on_cpu, on_meta = make(), make(device="meta")
    for p_cpu, p_meta in zip(on_cpu.parameters(), on_meta.parameters()):
        assert p_meta.device.type == "meta" and (p_meta.shape, p_meta.dtype) == (p_cpu.shape, p_cpu.dtype)
    x = numdiff.randn(*input_shape)
    args = (x, x, x) if name == "attention" else (x,)
    expected = on_cpu(*args)
    got = on_meta(*(a.to("meta") for a in args))
    expected, got = (expected[0], got[0]) if isinstance(expected, tuple) else (expected, got)
    assert got.device.type == "meta"
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)


@pytest.mark.parametrize(
    "op",
    [F.relu, F.gelu, F.silu, numdiff.tanh, numdiff.sigmoid, lambda x: F.softmax(x, -1), lambda x: F.log_softmax(x, 1),
     lambda x: F.dropout(x, 0.5), lambda x: x.mean(0), lambda x: x.var(1, keepdim=True), lambda x: x.argmax(1),
     lambda x: numdiff.cat([x, x], 1), lambda x: numdiff.stack([x, x], 0), lambda x: x.flatten()[2:7],
     lambda x: F.scaled_dot_product_attention(x[None], x[None], x[None], is_causal=True),
     lambda x: x.cumsum(1), lambda x: numdiff.where(x > 0, x, 0.0), lambda x: F.pad(x, (1, 2)),
     lambda x: x.max(1).values, lambda x: x.sort(1).indices, lambda x: x.to(numdiff.float16),
     lambda x: x.topk(2, 1).indices, lambda x: x.topk(3, 0).values, lambda x: numdiff.diag(x[0]),
     lambda x: numdiff.zeros_like(x).scatter_add(1, numdiff.zeros(4, 2, dtype=numdiff.int64, device=x.device), x[:, :2]),
     lambda x: numdiff.zeros_like(x).index_add(0, numdiff.tensor([0, 1, 1, 2], device=x.device), x),
     lambda x: F.binary_cross_entropy(numdiff.sigmoid(x), numdiff.zeros_like(x)),
     lambda x: F.one_hot(numdiff.zeros(3, dtype=numdiff.int64, device=x.device), 5),
     lambda x: numdiff.bernoulli(numdiff.sigmoid(x)), lambda x: numdiff.einsum("ij,kj->ik", x, x),
     lambda x: numdiff.multinomial(F.softmax(x, 1), 2), lambda x: numdiff.multinomial(F.softmax(x[0], 0), 9, True),
     lambda x: x.masked_fill(x > 0, 0.0), lambda x: F.cosine_similarity(x, x, dim=1), lambda x: x.logsumexp(1)],
)
def test_op_on_meta_has_the_cpu_results_shape_and_dtype(op):
    x = numdiff.randn(4, 6)
    expected, got = op(x), op(x.to("meta"))
    assert got.device.type == "meta"
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)


def test_indexing_and_losses_with_meta_integer_tensors():
    weight = numdiff.randn(10, 4, device="meta", requires_grad=True)
    index = numdiff.zeros(2, 3, dtype=numdiff.int64, device="meta")
    assert F.embedding(index, weight).shape == (2, 3, 4)
    assert weight[index].shape == (2, 3, 4)
    logits = numdiff.randn(2, 10, device="meta")
    assert F.cross_entropy(logits, index[:, 0]).shape == ()
    assert logits.gather(1, index).shape == (2, 3)


def test_embedding_bag_and_searchsorted_on_meta():
    bag = nn.EmbeddingBag(5, 4, device="meta")
    assert bag(numdiff.zeros(2, 3, dtype=numdiff.int64, device="meta")).shape == (2, 4)
    found = numdiff.searchsorted(numdiff.empty(5, device="meta"), numdiff.empty(2, 3, device="meta"), out_int32=True)
    assert (found.shape, found.dtype, found.device.type) == ((2, 3), numdiff.int32, "meta")


def test_one_hot_of_a_meta_tensor_needs_num_classes():
    with pytest.raises(NotImplementedError, match="pass num_classes"):
        F.one_hot(numdiff.zeros(3, dtype=numdiff.int64, device="meta"))


def test_backward_on_meta_gives_meta_gradients_of_the_leaves_shapes():
    layer = nn.Linear(8, 4, device="meta")
    F.relu(layer(numdiff.randn(5, 8, device="meta"))).sum().backward()
    assert layer.weight.grad.device.type == "meta" and layer.weight.grad.shape == (4, 8)
    assert layer.bias.grad.shape == (4,)


def test_module_to_meta_then_to_empty_gives_storage_of_the_same_shapes():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to("meta")
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert model[1].running_mean.device.type == "meta"
    model.to_empty(device="cpu")
    assert {t.device.type for t in (*model.parameters(), *model.buffers())} == {"cpu"}
    assert model[0].weight.shape == (4, 3) and isinstance(model[0].weight, nn.Parameter)
    assert model(numdiff.ones(2, 3)).shape == (2, 4)


def test_deepcopy_of_a_meta_model():
    copied = copy.deepcopy(nn.Linear(3, 2, device="meta"))
    assert copied.weight.device.type == "meta" and copied.weight.shape == (2, 3)


def test_model_ensembling_tutorial_with_a_meta_base_model():
    """PyTorch's model-ensembling tutorial: a meta copy of one model carries the structure, the
    stacked parameters carry the values."""
    models = [nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3)) for _ in range(4)]
    minibatch = numdiff.randn(5, 3, 4)
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    got = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    expected = numdiff.stack([m(minibatch) for m in models])
    assert got.device.type == "cpu"
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_meta_backend_has_every_cpu_launcher_and_writes_nothing():
    assert backend_for(MetaArray((2,), np.float32)) is META
    assert set(META.kernel_names()) == set(CPU.kernel_names())
    out = MetaArray((2, 4), np.float32)
    assert META.gemm_nn(MetaArray((2, 3), np.float32), MetaArray((3, 4), np.float32), out) is out


def test_a_meta_model_takes_a_checkpoint_with_assign():
    source = nn.Linear(3, 2)
    with numdiff.device("meta"):
        model = nn.Linear(3, 2)
    model.load_state_dict(source.state_dict(), assign=True)
    assert model.weight.device.type == "cpu" and isinstance(model.weight, nn.Parameter)
    assert numdiff.equal(model(numdiff.ones(1, 3)), source(numdiff.ones(1, 3)))


def test_copying_a_checkpoint_into_a_meta_model_warns_it_is_a_no_op():
    model = nn.Linear(3, 2, device="meta")
    with pytest.warns(UserWarning, match="no-op.*assign=True"):
        model.load_state_dict(nn.Linear(3, 2).state_dict())
    assert model.weight.device.type == "meta"


def test_bfloat16_casts_on_meta_change_the_dtype_only():
    x = numdiff.empty(2, 3, device="meta")
    assert x.to(numdiff.bfloat16).dtype == numdiff.bfloat16
    assert x.to(numdiff.bfloat16).float().dtype == numdiff.float32
    assert x.to(numdiff.bfloat16).device.type == "meta"


@pytest.mark.parametrize(
    "initialise",
    [nn.init.xavier_uniform_, nn.init.kaiming_normal_, nn.init.trunc_normal_, nn.init.orthogonal_, nn.init.eye_,
     lambda t: nn.init.sparse_(t, 0.5), lambda t: nn.init.constant_(t, 0.3)],
)
def test_init_functions_leave_a_huge_meta_tensor_as_it_is(initialise):
    weight = numdiff.empty(10**5, 10**5, device="meta")  # host-side inits (QR, erfinv) must not run
    assert initialise(weight) is weight and weight.device.type == "meta"


def test_dirac_init_on_meta():
    weight = numdiff.empty(2, 2, 3, 3, device="meta")
    assert nn.init.dirac_(weight) is weight


def test_a_language_model_step_on_meta_allocates_nothing_in_proportion_to_its_tensors():
    """Embedding lookup, attention, a loss over every token and backward, at sizes whose host
    arrays would need hundreds of gigabytes: index checks and shapes must run on stand-ins."""
    import tracemalloc

    with numdiff.device("meta"):
        embedding = nn.Embedding(50000, 1024)
        layer = nn.TransformerEncoderLayer(1024, 8, 4096, batch_first=True)
    ids = numdiff.zeros(2048, 2048, dtype=numdiff.int64, device="meta")
    tracemalloc.start()
    try:
        hidden = layer(embedding(ids))
        loss = F.cross_entropy(hidden.reshape(-1, 1024) @ embedding.weight.t(), ids.reshape(-1))
        loss.backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert embedding.weight.grad.shape == (50000, 1024) and loss.device.type == "meta"
    assert peak < 200 * 2**20, f"peak host allocation {peak / 2**20:.0f} MiB"


def test_function_transforms_run_on_meta_tensors():
    x = numdiff.randn(3, 4, device="meta")
    assert vmap(nn.Linear(4, 2, device="meta"))(x).shape == (3, 2)
    assert numdiff.func.grad(lambda r: (r * r).sum())(x).device.type == "meta"
    jacobian = numdiff.func.jacrev(lambda r: r.sin())(x[0])  # the basis is made on the input's device
    assert jacobian.shape == (4, 4) and jacobian.device.type == "meta"


def test_meta_tensors_and_meta_models_pickle_as_shapes():
    import pickle

    x = numdiff.empty(10**6, 10**6, dtype=numdiff.float16, device="meta", requires_grad=True)
    data = pickle.dumps(x)
    assert len(data) < 10_000
    back = pickle.loads(data)
    assert (back.shape, back.dtype, back.device.type, back.requires_grad) == (x.shape, x.dtype, "meta", True)
    model = pickle.loads(pickle.dumps(nn.Linear(3, 2, device="meta")))
    assert model.weight.device.type == "meta" and isinstance(model.weight, nn.Parameter)


def test_a_convolution_on_meta_takes_any_size_while_the_cpu_still_refuses_it():
    layer = numdiff.nn.Conv2d(3, 5, 3, padding=1, device="meta")
    out = layer(numdiff.empty(1024, 3, 65535, 65535, device="meta"))
    assert tuple(out.shape) == (1024, 5, 65535, 65535) and out.device.type == "meta"
    with pytest.raises(ValueError, match="conv2d: the output would have shape"):
        numdiff.nn.functional.conv2d(numdiff.empty(1, 1, 1, 1).expand(2**20, 1, 1, 1), numdiff.ones(2**17, 1, 1, 1))
