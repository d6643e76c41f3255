"""Module API: registration, traversal order, modes, freezing, dtype moves, hooks, repr, containers."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import numdiff
import numdiff.nn as nn


class Scale(nn.Module):
    """y = x * w + b, elementwise, with a persistent and a non-persistent buffer."""

    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.w = nn.Parameter(numdiff.ones(n))
        self.b = nn.Parameter(numdiff.zeros(n))
        self.register_buffer("count", numdiff.tensor(0))
        self.register_buffer("scratch", numdiff.zeros(n), persistent=False)

    def forward(self, x):
        return x * self.w + self.b


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = Scale()
        self.gain = nn.Parameter(numdiff.tensor(2.0))
        self.blocks = nn.Sequential(Scale(), nn.ReLU(), Scale())

    def forward(self, x):
        return self.blocks(self.first(x)) * self.gain


# ----------------------------------------------------------------------------- registration
def test_parameter_is_a_leaf_that_requires_grad_and_shares_storage():
    data = numdiff.zeros(3)
    p = nn.Parameter(data)
    assert p.is_leaf and p.requires_grad and isinstance(p, numdiff.Tensor)
    with numdiff.no_grad():
        p[0] = 5.0
    assert data[0].item() == 5.0
    assert repr(p) == "Parameter containing:\ntensor([5., 0., 0.], requires_grad=True)"


def test_parameter_of_integers_cannot_require_grad():
    with pytest.raises(TypeError, match="only floating point.*int64"):
        nn.Parameter(numdiff.tensor([1, 2]))
    assert not nn.Parameter(numdiff.tensor([1, 2]), requires_grad=False).requires_grad


def test_named_parameters_follow_registration_order_depth_first():
    names = [name for name, _ in Net().named_parameters()]
    assert names == ["gain", "first.w", "first.b", "blocks.0.w", "blocks.0.b", "blocks.2.w", "blocks.2.b"]


def test_named_buffers_children_and_modules():
    net = Net()
    assert [n for n, _ in net.named_buffers()] == [
        "first.count", "first.scratch", "blocks.0.count", "blocks.0.scratch", "blocks.2.count", "blocks.2.scratch",
    ]
    assert [n for n, _ in net.named_children()] == ["first", "blocks"]
    assert [n for n, _ in net.named_modules()] == ["", "first", "blocks", "blocks.0", "blocks.1", "blocks.2"]
    assert len(list(net.modules())) == 6 and list(net.children())[0] is net.first


def test_shared_parameters_and_modules_are_listed_once():
    net = nn.Module()
    shared = Scale()
    net.a = shared
    net.b = shared
    assert [n for n, _ in net.named_parameters()] == ["a.w", "a.b"]
    assert [n for n, _ in net.named_modules()] == ["", "a"]
    assert len(list(net.named_parameters(remove_duplicate=False))) == 4


def test_assigning_a_tensor_to_a_parameter_slot_is_refused():
    layer = Scale()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        layer.w = numdiff.ones(3)
    layer.w = None
    assert layer.w is None and [n for n, _ in layer.named_parameters()] == ["b"]


def test_assigning_before_init_is_refused():
    class Forgetful(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(numdiff.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Forgetful()


def test_reassigning_a_name_moves_it_between_kinds():
    layer = nn.Module()
    layer.x = Scale()
    layer.x = nn.Parameter(numdiff.ones(1))
    assert "x" not in layer._modules and layer._parameters["x"] is layer.x
    with pytest.raises(TypeError, match="cannot assign 'Scale' as parameter 'x'"):
        layer.x = Scale()  # as PyTorch: a parameter slot takes only a Parameter or None
    del layer.x
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'x'"):
        _ = layer.x


def test_register_buffer_rejects_non_tensors_and_dotted_names():
    layer = nn.Module()
    with pytest.raises(TypeError, match="cannot assign 'list' object to buffer 'b'"):
        layer.register_buffer("b", [1, 2])
    with pytest.raises(KeyError, match='empty or contain ".", got'):
        layer.register_buffer("a.b", numdiff.ones(1))
    layer.plain = 3
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        layer.register_buffer("plain", numdiff.ones(1))


def test_get_submodule_and_get_parameter():
    net = Net()
    assert net.get_submodule("blocks.2") is net.blocks[2]
    assert net.get_parameter("blocks.0.w") is net.blocks[0].w
    with pytest.raises(AttributeError, match="no submodule 'nope'"):
        net.get_submodule("blocks.nope")


def test_get_buffer_finds_persistent_and_non_persistent_buffers_by_path():
    # torch's Module.get_buffer; a probe11 program stopped on its absence
    model = nn.Sequential(nn.BatchNorm1d(3))
    model[0].register_buffer("scale", numdiff.ones(3), persistent=False)
    assert model.get_buffer("0.running_mean") is model[0].running_mean
    assert model.get_buffer("0.scale") is model[0].scale
    with pytest.raises(AttributeError, match=r"BatchNorm1d has no buffer 'weight' \(looking up '0.weight'\)"):
        model.get_buffer("0.weight")


# ----------------------------------------------------------------------------- modes, grads, freezing
def test_train_and_eval_reach_every_descendant():
    net = Net().eval()
    assert not any(m.training for m in net.modules())
    assert all(m.training for m in net.train().modules())
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


def test_zero_grad_sets_to_none_or_zeroes_in_place():
    net = Net()
    net(numdiff.ones(3)).sum().backward()
    grad = net.first.w.grad
    net.zero_grad(set_to_none=False)
    assert net.first.w.grad is grad and grad.tolist() == [0.0, 0.0, 0.0]
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_frozen_parameters_get_no_grad_and_ops_on_them_record_no_node():
    net = Net()
    net.first.requires_grad_(False)
    frozen = net.first.w
    assert frozen.is_leaf and not frozen.requires_grad
    only_frozen = net.first(numdiff.ones(3))
    assert only_frozen.grad_fn is None and not only_frozen.requires_grad
    net(numdiff.ones(3)).sum().backward()
    assert net.first.w.grad is None and net.first.b.grad is None
    assert net.blocks[0].w.grad is not None
    net.requires_grad_(True)
    assert all(p.requires_grad for p in net.parameters())


def test_apply_visits_children_before_the_parent():
    seen = []
    Net().apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Scale", "Scale", "ReLU", "Scale", "Sequential", "Net"]


# ----------------------------------------------------------------------------- dtype moves
def test_to_double_converts_in_place_keeping_the_same_leaf_parameters():
    net = Net()
    net(numdiff.ones(3)).sum().backward()
    before = list(net.parameters())
    assert net.double() is net
    after = list(net.parameters())
    assert all(a is b for a, b in zip(before, after))
    assert all(p.dtype is numdiff.float64 and p.is_leaf and p.requires_grad for p in after)
    assert net.first.w.grad.dtype is numdiff.float64
    assert net.first.scratch.dtype is numdiff.float64
    assert net.first.count.dtype is numdiff.int64  # integer buffers keep their dtype
    out = net(numdiff.ones(3, dtype=numdiff.float64))
    assert out.dtype is numdiff.float64
    net.float()
    assert net.gain.dtype is numdiff.float32


def test_to_an_integer_dtype_is_refused():
    with pytest.raises(TypeError, match="floating point dtypes.*int64"):
        Net().to(numdiff.int64)


def test_cpu_keeps_parameters_on_the_cpu():
    net = Net().cpu()
    assert all(p.device.type == "cpu" for p in net.parameters())


# ----------------------------------------------------------------------------- hooks and calling
def test_forward_pre_hook_can_replace_the_input_and_forward_hook_the_output():
    layer = Scale()
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 10,))
    post = layer.register_forward_hook(lambda m, args, out: calls.append(args[0].tolist()) or out + 1)
    assert layer(numdiff.ones(3)).tolist() == [11.0, 11.0, 11.0]
    assert calls == [[10.0, 10.0, 10.0]]
    pre.remove()
    post.remove()
    assert layer(numdiff.ones(3)).tolist() == [1.0, 1.0, 1.0]


def test_prepended_hook_runs_first():
    layer = Scale()
    order = []
    layer.register_forward_hook(lambda m, a, o: order.append("second"))
    layer.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
    layer(numdiff.ones(3))
    assert order == ["first", "second"]


def test_module_without_forward_names_itself():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward"'):
        nn.Module()(numdiff.ones(1))


# ----------------------------------------------------------------------------- repr
def test_repr_nests_children_with_extra_repr():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.1), nn.LayerNorm(3)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.1, inplace=False)\n"
        "    (1): LayerNorm((3,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  )\n"
        ")"
    )


def test_repr_matches_torch_for_a_small_model():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 2, bias=False),
        nn.Embedding(5, 2, padding_idx=0), nn.LayerNorm(2, bias=False), nn.BatchNorm1d(2, affine=False),
        nn.CrossEntropyLoss(),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(16, 2, bias=False), torch.nn.Embedding(5, 2, padding_idx=0), torch.nn.LayerNorm(2, bias=False),
        torch.nn.BatchNorm1d(2, affine=False), torch.nn.CrossEntropyLoss(),
    )
    assert repr(ours) == repr(theirs)


# ----------------------------------------------------------------------------- containers
def test_sequential_indexing_slicing_len_append_and_delete():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    assert len(seq) == 3 and isinstance(seq[-1], nn.Sigmoid)
    assert isinstance(seq[1:], nn.Sequential) and [type(m) for m in seq[1:]] == [nn.Tanh, nn.Sigmoid]
    seq.append(nn.Identity())
    assert len(seq) == 4 and isinstance(seq[3], nn.Identity)
    del seq[0]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    with pytest.raises(IndexError, match="index 7 is out of range for length 3"):
        _ = seq[7]
    x = numdiff.tensor([-1.0, 2.0])
    assert np.allclose(seq(x).numpy(), 1 / (1 + np.exp(-np.tanh([-1.0, 2.0]))))


def test_sequential_from_an_ordered_dict_keeps_the_names():
    from collections import OrderedDict

    seq = nn.Sequential(OrderedDict([("act", nn.ReLU()), ("out", Scale())]))
    assert [n for n, _ in seq.named_parameters()] == ["out.w", "out.b"]


def test_module_list_registers_its_modules():
    layers = nn.ModuleList([Scale(), Scale()])
    layers.append(Scale())
    layers += [Scale()]
    holder = nn.Module()
    holder.layers = layers
    assert len(layers) == 4 and len(list(holder.parameters())) == 8
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    del layers[0]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2"]


def test_module_list_repr_groups_repeated_children_like_torch():
    torch = pytest.importorskip("torch")
    ours = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Linear(2, 2), nn.Sequential(nn.Tanh()), nn.Sequential(nn.Tanh())])
    theirs = torch.nn.ModuleList(
        [torch.nn.ReLU(), torch.nn.ReLU(), torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.Tanh()),
         torch.nn.Sequential(torch.nn.Tanh())]
    )
    assert repr(ours) == repr(theirs)
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.ModuleDict({"a": nn.ReLU()})) == repr(torch.nn.ModuleDict({"a": torch.nn.ReLU()}))


def test_module_dict_behaves_like_a_dict_of_registered_modules():
    heads = nn.ModuleDict({"a": Scale(), "b": nn.ReLU()})
    heads["c"] = Scale(2)
    assert list(heads) == ["a", "b", "c"] and "b" in heads and len(heads) == 3
    assert [n for n, _ in heads.named_parameters()] == ["a.w", "a.b", "c.w", "c.b"]
    assert isinstance(heads.pop("a"), Scale) and list(heads.keys()) == ["b", "c"]
    with pytest.raises(KeyError, match="has no module 'z'"):
        _ = heads["z"]


def test_deepcopy_gives_independent_parameters():
    net = Net()
    clone = copy.deepcopy(net)
    with numdiff.no_grad():
        clone.first.w.fill_(7.0)
    assert net.first.w.tolist() == [1.0, 1.0, 1.0]
    assert isinstance(clone.first.w, nn.Parameter) and clone.first.w.requires_grad


def test_train_goes_through_each_childs_own_train():
    class Recorder(nn.Module):
        def __init__(self):
            super().__init__()
            self.modes = []

        def train(self, mode=True):
            self.modes.append(mode)
            return super().train(mode)

    net = nn.Sequential(nn.Sequential(Recorder()))
    net.eval()
    net.train()
    assert net[0][0].modes == [False, True]


def test_forward_hooks_with_kwargs_and_always_call_run_as_in_torch():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    module, log = Scaled(), []
    module.register_forward_pre_hook(lambda m, args, kwargs: (args, {**kwargs, "scale": 3.0}), with_kwargs=True)
    module.register_forward_hook(lambda m, args, kwargs, out: log.append(dict(kwargs)) or out + 1, with_kwargs=True)
    module.register_forward_hook(lambda m, args, out: log.append(out), always_call=True)
    out = module(numdiff.ones(2), scale=2.0)
    assert out.tolist() == [4.0, 4.0]
    assert log[0] == {"scale": 3.0} and log[1].tolist() == [4.0, 4.0]
    log.clear()
    with pytest.raises(TypeError):
        module("not a tensor")
    assert log == [None]  # the always_call hook ran before the error went on; the other did not
    bad = Scaled()
    bad.register_forward_pre_hook(lambda m, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs\)"):
        bad(numdiff.ones(1))
    with pytest.raises(TypeError, match="hook must be callable, got int"):
        bad.register_forward_hook(3, with_kwargs=True)
