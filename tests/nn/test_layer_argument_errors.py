"""Bad integer arguments of layers and functionals outside conv/pool (which tests/kernels covers):
each is a TypeError or ValueError naming the op and the argument, never a leaked Python error
('float' object is not iterable, '<' not supported between ...); NumPy ints work, as in torch."""

import numpy as np
import pytest

import numdiff as nd

F = nd.nn.functional
x4 = nd.randn(1, 2, 6, 6)

CALLS = {
    "unfold kernel_size": lambda v: F.unfold(x4, v),
    "unfold stride": lambda v: F.unfold(x4, 2, stride=v),
    "fold output_size": lambda v: F.fold(nd.randn(1, 8, 4), v, 2),
    "Conv2d kernel_size": lambda v: nd.nn.Conv2d(2, 3, v),
    "Conv2d stride": lambda v: nd.nn.Conv2d(2, 3, 2, stride=v),
    "layer_norm normalized_shape": lambda v: F.layer_norm(x4, v),
    "pad pad": lambda v: F.pad(x4, v),
    "one_hot num_classes": lambda v: F.one_hot(nd.tensor([0, 1]), v),
    "Linear out_features": lambda v: nd.nn.Linear(2, v),
    "softmax dim": lambda v: F.softmax(x4, v),
    "dropout p": lambda v: F.dropout(x4, v),
    "reshape shape": lambda v: x4.reshape(v, -1),
    "view shape": lambda v: x4.view(v, -1),
    "permute shape": lambda v: x4.permute(v, 0, 1, 2),
    "repeat shape": lambda v: x4.repeat(v, 1, 1, 1),
    "expand shape": lambda v: x4[:, :1].expand(1, v, 6, 6),
    "flip dim": lambda v: x4.flip([v]),
    "squeeze dim": lambda v: x4.squeeze([v]),
    "sum dim": lambda v: x4.sum([v]),
    "roll shifts": lambda v: x4.roll([v], [0]),
    "narrow start": lambda v: x4.narrow(1, v, 1),
    "chunk chunks": lambda v: x4.chunk(v),
    "split split_size_or_sections": lambda v: x4.split([v, 1]),
    "zeros size": lambda v: nd.zeros(2, v),
    "eye n": lambda v: nd.eye(v),
    "LayerNorm normalized_shape": lambda v: nd.nn.LayerNorm([v]),
    "AvgPool1d kernel_size": lambda v: nd.nn.AvgPool1d(v),
}
BAD = [1.5, None, True, "2", (1.5, 1), [None]]


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_bad_argument_is_an_error_naming_the_op_and_argument(call, value):
    op, argument = call.split(" ")
    if call == "dropout p" and isinstance(value, float):
        pytest.skip("a float is dropout's probability")
    if call == "softmax dim" and value is None:
        pytest.skip("softmax(dim=None) takes PyTorch's implicit dim, with its warning")
    with pytest.raises((TypeError, ValueError)) as caught:
        CALLS[call](value)
    message = str(caught.value)
    assert message.startswith(f"{op}:"), message
    assert argument in message or "dim" in message or argument == "pad" or (argument == "size" and "size" in message), message


@pytest.mark.parametrize("call", ["unfold kernel_size", "fold output_size", "Conv2d kernel_size", "one_hot num_classes",
                                  "Linear out_features", "softmax dim", "layer_norm normalized_shape"])
def test_numpy_ints_are_accepted_like_python_ints(call):
    value = {"fold output_size": 3, "layer_norm normalized_shape": 6, "softmax dim": 1}.get(call, 2)
    expected = CALLS[call](value)
    got = CALLS[call](np.int64(value))
    if isinstance(expected, nd.Tensor):
        assert got.shape == expected.shape
