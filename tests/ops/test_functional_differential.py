"""numdiff against torch 2.13 on randomly drawn calls of torch.nn.functional and its normalization
and convolution modules (tests/ops/differential_functional.py draws them: keyword combinations,
empty, size-1 and non-contiguous inputs, float32 forwards and float64 first gradients, and bad
inputs), and each defect that comparison found, pinned with its own numbers so that it runs
without torch too. tools/torch_functional_differential.py draws more."""

from __future__ import annotations

import numpy as np
import pytest

import numdiff
from numdiff.autograd import gradcheck
from tests.ops.differential_functional import REFUSED, agree, functional_cases

F = numdiff.nn.functional


def test_numdiff_agrees_with_torch_on_drawn_functional_calls():
    torch = pytest.importorskip("torch")
    differences = []
    for name, case in functional_cases(seed=26, count=1200):
        difference = agree(case, torch, numdiff)
        if difference and not difference.startswith(REFUSED):
            differences.append(f"{name}: {difference}")
    assert not differences, f"{len(differences)} differ from torch:\n" + "\n".join(differences[:10])


def test_the_comparison_catches_a_wrong_gradient_a_missing_error_and_a_crash():
    torch = pytest.importorskip("torch")

    def wrong_gradient(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (x * x * (3.0 if lib is numdiff else 2.0) / 2).sum().backward()
        return [x.grad]

    assert agree(wrong_gradient, torch, numdiff)
    assert agree(lambda lib: F.relu(lib.ones(2)) if lib is numdiff else lib.ones(2) + lib.ones(3), torch, numdiff)
    assert "crashed" in agree(lambda lib: lib.ones(2) + lib.ones(3) if lib is torch else {}["key"], torch, numdiff)
    assert agree(lambda lib: lib.ones(2) + lib.ones(3), torch, numdiff) is None
    assert agree(lambda lib: lib.nn.functional.relu(lib.ones(2, dtype=lib.float32) * 1.000001), torch, numdiff) is None


# The defects the drawn calls found, each pinned with its own numbers.


def test_avg_and_lp_pool3d_refuse_an_input_smaller_than_the_window_as_torch():
    x = numdiff.ones(1, 2, 1, 6, 6)
    for call in (lambda: F.avg_pool3d(x, 2, padding=1), lambda: F.avg_pool3d(x, 2, ceil_mode=True),
                 lambda: F.lp_pool3d(x, 2.0, 2, ceil_mode=True)):  # fmt: skip
        with pytest.raises(ValueError, match=r"avg_pool3d: input of spatial size \(1, 6, 6\) is smaller than kernel_size"):
            call()
    assert F.max_pool3d(x, 2, ceil_mode=True).shape == (1, 2, 1, 3, 3)  # max_pool3d takes it, as torch's
    with pytest.raises(ValueError, match=r"lp_pool2d: avg_pool2d: kernel_size \(3, 3\) .* does not fit input \(1, 2, 3, 1\)"):
        F.lp_pool2d(numdiff.ones(1, 2, 3, 1), 2.0, 3)  # the error names the call made, then the pool inside
    assert F.avg_pool3d(numdiff.arange(8.0).reshape(1, 1, 2, 2, 2), 2).item() == 3.5


def test_group_norm_refuses_one_sample_with_a_value_per_group_and_takes_a_batch_of_them():
    with pytest.raises(ValueError, match=r"group_norm: expected more than 1 value per channel.*\(1, 3, 1\)"):
        F.group_norm(numdiff.ones(1, 3, 1), 3)
    with pytest.raises(ValueError, match="group_norm"):
        F.group_norm(numdiff.ones(1, 1), 1)
    assert F.group_norm(numdiff.tensor([[[1.0], [2.0], [3.0]], [[4.0], [5.0], [6.0]]]), 3).abs().sum().item() == 0.0
    assert F.group_norm(numdiff.tensor([[1.0, 3.0]]), 1)[0].tolist() == pytest.approx([-1.0, 1.0], abs=1e-4)


def test_instance_norm_of_an_n_by_c_input_normalizes_by_the_running_statistics_outside_training():
    out = F.instance_norm(numdiff.tensor([[1.0, 2.0]]), numdiff.tensor([0.0, 1.0]), numdiff.tensor([1.0, 4.0]), use_input_stats=False)
    assert out[0].tolist() == pytest.approx([1 / np.sqrt(1 + 1e-5), 1 / np.sqrt(4 + 1e-5)])
    x = numdiff.tensor([[1.0, 2.0]], dtype=numdiff.float64, requires_grad=True)
    assert gradcheck(lambda t: F.instance_norm(t, numdiff.zeros(2, dtype=numdiff.float64), numdiff.ones(2, dtype=numdiff.float64) * 2,
                                               use_input_stats=False), (x,))  # fmt: skip
    with pytest.raises(ValueError, match=r"instance_norm: expected more than 1 spatial element when training, got input of shape \(1, 2\)"):
        F.instance_norm(numdiff.tensor([[1.0, 2.0]]))
    with pytest.raises(ValueError, match=r"instance_norm: expected input of shape \(N, C, \*\), got \(2,\)"):
        F.instance_norm(numdiff.tensor([1.0, 2.0]), numdiff.zeros(2), numdiff.ones(2), use_input_stats=False)


def test_embedding_bag_with_include_last_offset_takes_csr_offsets_and_refuses_others():
    w = numdiff.eye(4, dtype=numdiff.float64).requires_grad_()
    for mode, expected in (("sum", [[0, 1, 0, 0], [0, 0, 1, 1]]), ("mean", [[0, 1, 0, 0], [0, 0, 0.5, 0.5]]), ("max", [[0, 1, 0, 0], [0, 0, 1, 1]])):
        out = F.embedding_bag(numdiff.tensor([1, 2, 3]), w, numdiff.tensor([0, 1, 3]), mode=mode, include_last_offset=True)
        assert out.tolist() == expected
    assert gradcheck(lambda t: F.embedding_bag(numdiff.tensor([1, 2, 3]), t, numdiff.tensor([0, 1, 3]), mode="mean", include_last_offset=True), (w,))
    empty = F.embedding_bag(numdiff.zeros(0, dtype=numdiff.int64), w, numdiff.tensor([0]), mode="sum", include_last_offset=True)
    assert empty.shape == (0, 4)
    # torch sums [1] for the bag, takes the mean of [1] over 3 entries and the max of [1, 2, 3]
    for mode in ("sum", "mean", "max"):
        with pytest.raises(ValueError, match=r"embedding_bag: with include_last_offset=True the last offset must be the input's length 3, got offsets \[0, 1, 2\]"):
            F.embedding_bag(numdiff.tensor([1, 2, 3]), w, numdiff.tensor([0, 1, 2]), mode=mode, include_last_offset=True)
    with pytest.raises(ValueError, match="embedding_bag: with include_last_offset=True"):  # torch reads past its memory
        F.embedding_bag(numdiff.tensor([1, 1]), w, numdiff.tensor([0]), mode="sum", include_last_offset=True, per_sample_weights=numdiff.ones(2, dtype=numdiff.float64))


def test_nearest_grid_sample_gives_the_grid_a_zero_gradient_as_torch():
    x = numdiff.arange(9.0, dtype=numdiff.float64).reshape(1, 1, 3, 3).requires_grad_()
    grid = numdiff.tensor([[[[0.2, float("inf")], [0.5, -0.3]]]], dtype=numdiff.float64, requires_grad=True)
    out = F.grid_sample(x, grid, mode="nearest", align_corners=False)
    assert out.tolist() == [[[[0.0, 5.0]]]]  # the infinite point reads the zero padding
    (out * numdiff.tensor([2.0, 3.0], dtype=numdiff.float64)).sum().backward()
    assert grid.grad.tolist() == [[[[0.0, 0.0], [0.0, 0.0]]]]
    assert x.grad.reshape(-1).tolist() == [0, 0, 0, 0, 0, 3, 0, 0, 0]
    inside = numdiff.tensor([[[[0.2, 0.1], [0.5, -0.3]]]], dtype=numdiff.float64)
    assert gradcheck(lambda t: F.grid_sample(t, inside, mode="nearest", align_corners=True), (x,))


def test_conv3d_and_conv_transpose3d_of_an_empty_batch_give_empty_outputs_and_zero_weight_gradients():
    for groups in (1, 2):
        x = numdiff.zeros(0, 4, 3, 4, 3, dtype=numdiff.float64, requires_grad=True)
        w = numdiff.ones(4, 4 // groups, 2, 2, 2, dtype=numdiff.float64, requires_grad=True)
        y = F.conv3d(x, w, groups=groups, stride=(2, 1, 1))
        z = F.conv_transpose3d(x, w, groups=groups, stride=2, output_padding=1)
        assert y.shape == (0, 4, 1, 3, 2) and z.shape == (0, 4 // groups * groups, 7, 9, 7)
        (y.sum() + z.sum()).backward()
        assert x.grad.shape == (0, 4, 3, 4, 3) and w.grad.abs().sum().item() == 0.0
    x = numdiff.tensor(np.random.default_rng(0).normal(size=(1, 4, 3, 3, 2)), requires_grad=True)
    w = numdiff.tensor(np.random.default_rng(1).normal(size=(4, 2, 2, 2, 1)), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv_transpose3d(a, b, groups=2, stride=(2, 1, 1)), (x, w))
    assert gradcheck(lambda a, b: F.conv3d(a, b, groups=2), (x, w))
    with pytest.raises(ValueError, match="conv3d"):
        F.conv3d(numdiff.zeros(0, 3, 3, 4, 3, dtype=numdiff.float64), w, groups=2)


def test_cosine_similarity_gradient_below_eps_is_the_derivative_of_its_forward():
    # torch clamps the norms in place under no_grad: its gradient here is [-0.648, 1.651], not the
    # forward's derivative [-0.8, 1.6] (finite differences of torch's own forward agree with numdiff).
    x = numdiff.tensor([[0.3], [0.1]], dtype=numdiff.float64, requires_grad=True)
    y = numdiff.tensor([[-0.2], [0.4]], dtype=numdiff.float64)
    F.cosine_similarity(x, y, dim=0, eps=0.5).sum().backward()
    assert x.grad.reshape(-1).tolist() == pytest.approx([-0.8, 1.6])
    assert gradcheck(lambda t: F.cosine_similarity(t, y, dim=0, eps=0.5), (x,))


def _bicubic_reference(image: np.ndarray, px: float, py: float) -> float:
    """Keys' cubic convolution (a = -0.75) of a 2-D image at pixel (px, py), zero outside."""
    def kernel(d: float) -> float:
        d, a = abs(d), -0.75
        return ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0

    total = 0.0
    for row in range(int(np.floor(py)) - 1, int(np.floor(py)) + 3):
        for column in range(int(np.floor(px)) - 1, int(np.floor(px)) + 3):
            inside = 0 <= row < image.shape[0] and 0 <= column < image.shape[1]
            total += (image[row, column] if inside else 0.0) * kernel(px - column) * kernel(py - row)
    return total


def test_bicubic_grid_sample_matches_cubic_convolution_and_checks_its_gradients():
    image = np.random.default_rng(1).normal(size=(6, 7))
    px, py = np.array([2.3, 3.7, 1.5, -0.4, 5.9]), np.array([1.2, 2.9, 3.4, 0.3, 5.0])  # pixel coordinates (x, y)
    grid = numdiff.tensor(np.stack([px / 6 * 2 - 1, py / 5 * 2 - 1], -1).reshape(1, 1, 5, 2), dtype=numdiff.float64)
    out = F.grid_sample(numdiff.tensor(image.reshape(1, 1, 6, 7)), grid, mode="bicubic", align_corners=True)
    expected = [_bicubic_reference(image, x, y) for x, y in zip(px, py)]
    assert out.reshape(-1).tolist() == pytest.approx(expected, abs=1e-12)
    x = numdiff.tensor(np.random.default_rng(2).normal(size=(1, 2, 3, 4)), requires_grad=True)
    g = numdiff.tensor(np.random.default_rng(3).uniform(-1.2, 1.2, (1, 2, 2, 2)), requires_grad=True)
    for padding_mode in ("zeros", "border", "reflection"):
        for align in (False, True):
            assert gradcheck(lambda a, b, p=padding_mode, c=align: F.grid_sample(a, b, mode="bicubic", padding_mode=p, align_corners=c), (x, g))
    with pytest.raises(ValueError, match=r"grid_sample: bicubic interpolation only supports 4-D input, got shape \(1, 1, 2, 2, 2\)"):
        F.grid_sample(numdiff.ones(1, 1, 2, 2, 2), numdiff.zeros(1, 1, 1, 1, 3), mode="bicubic")
