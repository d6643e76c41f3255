"""Elementwise unary functions: generated from their scalar rules (numdiff/ops/scalar_rules.py).

Each is the public function of numdiff/ops/elementwise.py: integer inputs become float32 (exp,
log, ...) or keep their dtype (abs, sign), as in PyTorch.
"""

from __future__ import annotations

from numdiff.ops.elementwise import PUBLIC

exp = PUBLIC["exp"]
log = PUBLIC["log"]
log1p = PUBLIC["log1p"]
expm1 = PUBLIC["expm1"]
sqrt = PUBLIC["sqrt"]
rsqrt = PUBLIC["rsqrt"]
abs = PUBLIC["abs"]  # noqa: A001 - PyTorch's name
sign = PUBLIC["sign"]
sin = PUBLIC["sin"]
cos = PUBLIC["cos"]
tanh = PUBLIC["tanh"]
atan = PUBLIC["atan"]
tan = PUBLIC["tan"]
asin = PUBLIC["asin"]
acos = PUBLIC["acos"]
sinh = PUBLIC["sinh"]
cosh = PUBLIC["cosh"]
asinh = PUBLIC["asinh"]
acosh = PUBLIC["acosh"]
atanh = PUBLIC["atanh"]
log2 = PUBLIC["log2"]
log10 = PUBLIC["log10"]
exp2 = PUBLIC["exp2"]
square = PUBLIC["square"]
reciprocal = PUBLIC["reciprocal"]
sigmoid = PUBLIC["sigmoid"]
erf = PUBLIC["erf"]
