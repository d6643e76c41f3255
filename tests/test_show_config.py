"""numdiff.show_config(): which BLAS/LAPACK, threads, Numba and CUDA, as torch.__config__.show()."""

from __future__ import annotations

import numba

import numdiff
from numdiff.kernels._blas_library import blas_library
from numdiff.kernels._conv_route import conv_route


def test_show_config_names_the_gemm_library_threads_numba_and_cuda(capsys):
    numdiff.show_config()
    text = capsys.readouterr().out
    library = blas_library()
    expected_gemm = "MKL" if library.name == "mkl" else "SciPy BLAS"
    assert f"GEMM (matmul, linear, conv): {expected_gemm}, {library.reason}" in text
    assert library.path in text
    assert "LAPACK (numdiff.linalg):" in text
    assert f"CPU threads: {numdiff.get_num_threads()} of {numba.config.NUMBA_NUM_THREADS}" in text
    assert f"Numba {numba.__version__}" in text
    assert "CUDA: " + ("not available" if not numdiff.cuda.is_available() else "available") in text


def test_show_config_says_which_route_the_conv_products_take_and_why(capsys):
    numdiff.show_config()
    text = capsys.readouterr().out
    route = conv_route()
    assert f"conv im2col products: {'Numba loops' if route.loops else 'BLAS'}, {route.reason}" in text
