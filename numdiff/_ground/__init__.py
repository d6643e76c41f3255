"""The ground floor: what ops and both kernel targets share, importing nothing of numdiff above it.

- :mod:`scalar_expressions` and :mod:`scalar_rules`: the language of elementwise scalar rules and
  the table of rules, read by the ops (numdiff.ops.elementwise), the CPU and CUDA kernel
  generators, vmap and compile.
- :mod:`args`: the integer arguments of conv and pooling, parsed and bounded once.
- :mod:`conv_geometry` and :mod:`pool_geometry`: output sizes, window arithmetic and the checks of
  a conv or pooling configuration (the window arithmetic is plain Python, compiled for the CPU by
  numdiff.kernels._pool_compiled and for CUDA by numdiff.cuda.kernels._pool_device).

Modules here import only the standard library, NumPy and each other (tests/structure checks it).
"""
