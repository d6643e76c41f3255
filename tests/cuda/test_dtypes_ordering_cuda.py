"""float16/bfloat16 storage and the ordering ops on device="cuda" give what the CPU gives."""

import numpy as np

import numdiff


def test_bfloat16_round_trips_through_the_device_bit_for_bit():
    values = numdiff.tensor([1.5, -3.14159, 1e-3, 65504.0])
    on_device = values.to("cuda").bfloat16()
    assert on_device.device == "cuda" and on_device.dtype is numdiff.bfloat16
    np.testing.assert_array_equal(on_device.float().cpu().numpy(), values.bfloat16().float().numpy())


def test_float16_arithmetic_and_matmul_on_device_match_the_cpu():
    rng = np.random.default_rng(0)
    a, b = (numdiff.tensor(rng.standard_normal((3, 3)), dtype=numdiff.float16) for _ in range(2))
    for cpu, gpu in [(a + b, a.cuda() + b.cuda()), (a @ b, a.cuda() @ b.cuda())]:
        assert gpu.dtype is numdiff.float16
        np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())


def test_sort_topk_multinomial_stay_on_the_device():
    x = numdiff.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]], requires_grad=True)
    xc = x.detach().cuda().requires_grad_()
    values, indices = xc.sort(dim=1, descending=True)
    assert values.device == indices.device == "cuda"
    assert indices.cpu().tolist() == [[0, 2, 1], [1, 0, 2]]
    values.sum().backward()
    assert xc.grad.cpu().tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    assert numdiff.topk(xc, 1).indices.cpu().tolist() == [[0], [1]]
    assert numdiff.multinomial(numdiff.tensor([0.0, 1.0]).cuda(), 1).cpu().tolist() == [1]


def test_search_ops_and_integer_scans_stay_on_the_device():
    x = numdiff.tensor([[3, 0, 2], [0, 5, 3]])
    xc = x.cuda()
    pairs = [
        (x.cumsum(1), xc.cumsum(1)),
        (x.cumprod(0), xc.cumprod(0)),
        (x.nonzero(), xc.nonzero()),
        (numdiff.unique(x, return_counts=True)[1], numdiff.unique(xc, return_counts=True)[1]),
        (numdiff.searchsorted(numdiff.tensor([1, 3]), x), numdiff.searchsorted(numdiff.tensor([1, 3]).cuda(), xc)),
        (numdiff.isclose(x, x + 1), numdiff.isclose(xc, xc + 1)),
        (x.take(numdiff.tensor([4, -1])), xc.take(numdiff.tensor([4, -1]).cuda())),
    ]
    for cpu, gpu in pairs:
        assert gpu.device == "cuda" and gpu.dtype is cpu.dtype
        np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())
    y = numdiff.zeros(3).cuda()
    y.scatter_(0, numdiff.tensor([2]).cuda(), 4.0)
    y.index_add_(0, numdiff.tensor([0, 0]).cuda(), numdiff.ones(2).cuda())
    assert y.cpu().tolist() == [2.0, 0.0, 4.0]


def test_diagonal_on_the_device_is_a_view_that_in_place_edits_reach():
    x = numdiff.zeros(2, 3, 3).cuda()
    d = x.diagonal(1, 1, 2)
    d.add_(2.0)
    assert x._version == d._version == 1
    expected = np.zeros((2, 3, 3))
    expected[:, [0, 1], [1, 2]] = 2.0
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    x[0, 0, 1] = 7.0
    assert d.cpu().tolist() == [[7.0, 2.0], [2.0, 2.0]]


def test_bfloat16_writes_and_ops_on_device_match_the_cpu():
    """fill_, setitem and computing ops on a bfloat16 device tensor: the copy kernel moves its
    bits as uint16 (it cannot type bfloat16's opaque items), ops compute in float32 and round."""
    results = []
    for where in ("cpu", "cuda"):
        t = numdiff.zeros(2, 3, dtype=numdiff.bfloat16, device=where)
        t.fill_(1.5)
        t[0, 1] = 2.25
        t[1] = t[0] * 3
        results.append([t, (t * 3 + 1).exp(), t > 2, t.sum(), t.argmax(), t.softmax(1)])
    for cpu, gpu in zip(*results):
        assert gpu.device == "cuda" and gpu.dtype is cpu.dtype
        np.testing.assert_array_equal(gpu.cpu().float().numpy(), cpu.float().numpy())


def test_integer_overflow_rules_hold_on_device():
    x = numdiff.tensor([1, 200], dtype=numdiff.uint8, device="cuda")
    assert (x + 300).cpu().tolist() == [45, 244]
    assert (x < -3).cpu().tolist() == [True, True]
    try:
        x.fill_(300)
    except RuntimeError as error:
        assert "fill_: value 300" in str(error)
    else:
        raise AssertionError("fill_(300) into uint8 must raise")
