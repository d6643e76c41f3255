"""numdiff.backends: PyTorch's backend switches, accepted so ported programs run unchanged.

numdiff has no cuDNN, MPS, oneDNN or TF32 paths; its own kernels (Numba on the CPU, @cuda.jit on
CUDA) serve every op. The flags keep the values you set and change nothing, which is honest to
what each promises in PyTorch:

- ``cudnn.deterministic``, ``use_deterministic_algorithms``: numdiff's CPU kernels always give
  the same bits for the same inputs. Its CUDA scatter kernels (pooling, conv and index
  backward) add with atomics, whose order can change the last bits between runs; setting the
  flag does not change that.
- ``cudnn.benchmark``: there is no algorithm search to turn on; kernels are chosen by layout.
- ``cudnn.enabled``, ``mkldnn.enabled``: nothing to disable.
- ``cuda.matmul.allow_tf32``, ``cudnn.allow_tf32``: matmuls and convolutions always run in full
  float32 (or float64) precision.
- ``mps.is_available()`` is False: numdiff has no Metal backend.

>>> import numdiff.backends.cudnn as cudnn
>>> cudnn.benchmark = True
"""

from numdiff.backends import cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
