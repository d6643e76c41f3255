"""The sparse COO kernels' CUDA twins (numdiff.cuda.kernels.sparse) give the CPU kernels'
results, duplicates and empty inputs included; the op cases replay on CUDA in test_op_cases_cuda."""

import numpy as np
import pytest

import numdiff
from numdiff.cuda.array import CudaArray
from numdiff.cuda.kernels import sparse as cuda_sparse
from numdiff.kernels import sparse as cpu_sparse


@pytest.mark.parametrize("nnz", [0, 1, 9])
def test_spmm_and_sddmm_twins_agree(nnz):
    rng = np.random.default_rng(nnz)
    rows = rng.integers(0, 4, nnz).astype(np.int64)
    cols = rng.integers(0, 3, nnz).astype(np.int64)
    values = rng.standard_normal(nnz)
    dense = rng.standard_normal((3, 5))
    expected = np.empty((4, 5))
    cpu_sparse.coo_spmm(rows, cols, values, dense, expected)
    out = CudaArray.from_numpy(np.full((4, 5), 7.0), numdiff.device("cuda"))
    cuda_sparse.coo_spmm(*(CudaArray.from_numpy(a, numdiff.device("cuda")) for a in (rows, cols, values, dense)), out)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-12, atol=1e-12)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    sampled = np.empty(nnz)
    cpu_sparse.coo_sddmm(rows, cols, a, b, sampled)
    np.testing.assert_allclose(sampled, (a @ b.T)[rows, cols], rtol=1e-12, atol=1e-12)
    device_out = CudaArray.from_numpy(np.zeros(nnz), numdiff.device("cuda"))
    cuda_sparse.coo_sddmm(*(CudaArray.from_numpy(x, numdiff.device("cuda")) for x in (rows, cols, a, b)), device_out)
    np.testing.assert_allclose(device_out.to_host(), sampled, rtol=1e-12, atol=1e-12)


def test_a_sparse_product_runs_on_cuda_with_gradients():
    adjacency = numdiff.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 2.0, 3.0], (2, 2), device="cuda")
    dense = numdiff.ones(2, 3, device="cuda", requires_grad=True)
    out = adjacency @ dense
    assert out.device == numdiff.device("cuda")
    out.sum().backward()
    np.testing.assert_allclose(dense.grad.cpu().numpy(), [[2.0] * 3, [4.0] * 3])


def _csr(rng, rows: int, cols: int, nnz: int):
    row_of = np.sort(rng.integers(0, rows, nnz)).astype(np.int64)
    crow = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=rows))]).astype(np.int64)
    return crow, rng.integers(0, cols, nnz).astype(np.int64), row_of


@pytest.mark.parametrize("nnz", [0, 1, 9])
def test_csr_spmm_and_sddmm_twins_agree(nnz):
    rng = np.random.default_rng(10 + nnz)
    crow, cols, rows = _csr(rng, 4, 3, nnz)
    values = rng.standard_normal(nnz)
    dense = rng.standard_normal((3, 5))
    expected = np.full((4, 5), np.nan)  # the kernel writes every element, empty rows included
    cpu_sparse.csr_spmm(crow, cols, values, dense, expected)
    reference = np.zeros((4, 3))
    np.add.at(reference, (rows, cols), values)
    np.testing.assert_allclose(expected, reference @ dense, rtol=1e-12, atol=1e-12)
    out = CudaArray.from_numpy(np.full((4, 5), np.nan), numdiff.device("cuda"))
    cuda_sparse.csr_spmm(*(CudaArray.from_numpy(a, numdiff.device("cuda")) for a in (crow, cols, values, dense)), out)
    np.testing.assert_allclose(out.to_host(), expected, rtol=1e-12, atol=1e-12)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    sampled = np.empty(nnz)
    cpu_sparse.csr_sddmm(crow, cols, a, b, sampled)
    np.testing.assert_allclose(sampled, (a @ b.T)[rows, cols], rtol=1e-12, atol=1e-12)
    device_out = CudaArray.from_numpy(np.zeros(nnz), numdiff.device("cuda"))
    cuda_sparse.csr_sddmm(*(CudaArray.from_numpy(x, numdiff.device("cuda")) for x in (crow, cols, a, b)), device_out)
    np.testing.assert_allclose(device_out.to_host(), sampled, rtol=1e-12, atol=1e-12)


def test_a_csr_product_runs_on_cuda_with_gradients_to_both_sides():
    matrix = numdiff.sparse_csr_tensor([0, 1, 3], [1, 0, 1], [1.0, 2.0, 3.0], (2, 2), device="cuda",
                                       requires_grad=True)
    dense = numdiff.ones(2, 3, device="cuda", requires_grad=True)
    out = matrix @ dense
    assert out.device == numdiff.device("cuda") and matrix.crow_indices().device == numdiff.device("cuda")
    out.sum().backward()
    np.testing.assert_allclose(dense.grad.cpu().numpy(), [[2.0] * 3, [4.0] * 3])
    np.testing.assert_allclose(matrix.values().grad.cpu().numpy(), [3.0, 3.0, 3.0])
