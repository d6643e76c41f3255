"""Elementwise ops as a table of scalar rules: the forward expression and its partial derivatives.

Everything else about an elementwise op is generated from its `ScalarRule` (numdiff/ops/elementwise.py):
the registered `Function` (forward, and a backward that is itself differentiable), the public
function (``numdiff.exp``), the Tensor method (``x.exp()``), the CPU kernels (``@njit``, in
numdiff/kernels/elementwise.py) and the CUDA kernels (``@cuda.jit``, numdiff/cuda/kernels/elementwise.py).
A compiler that fuses elementwise chains reads the same expressions. Adding an op is one line:

    ScalarRule("atan", 1, "math.atan(x)", ("1.0 / (1.0 + x * x)",)),

The fields of `ScalarRule` and the expression language the forward and derivatives are written in
are described in numdiff/_ground/scalar_expressions.py, which also derives the backward expressions
(`vjp_expression`) and checks this table (`check_rules`: tests/ops/test_backward_rules runs it on the
whole table, which is fixed source, instead of every `import numdiff` paying its 2 ms).

NaN semantics follow PyTorch 2.13 and are encoded in the expressions: relu's derivative is
``where(out <= 0.0, 0.0, 1.0)``, so a NaN input passes its gradient (1, as PyTorch) and a NaN
output propagates; maximum/minimum give a NaN operand the whole gradient and split ties in half.
A ``where`` branch that is the literal ``0.0`` gives an exact zero gradient even where the incoming
gradient is NaN or inf, as PyTorch's masked backwards do.
"""

from __future__ import annotations

from numdiff._ground.scalar_backward_rules import BACKWARD_RULES
from numdiff._ground.scalar_expressions import (
    MATH_RULES,
    ScalarRule,
    math_functions_in,
    names_in,
    vjp_expression,
)
from numdiff._ground.scalar_loss_rules import LOSS_RULES

# MATH_RULES, ScalarRule and the expression helpers live in numdiff._ground.scalar_expressions; they
# are importable from here too, where code built on the table has always found them.
__all__ = ["MATH_RULES", "RULES", "ScalarRule", "math_functions_in", "names_in", "vjp_expression"]


# The roundings. math.floor and math.ceil give an int (in Numba as in Python), so each is taken only
# below 2 ** 52 in magnitude, where the int holds it exactly: from there on every float is an integer
# already, and inf and NaN are too large or unordered to pass. A zero result takes x's sign, as an
# IEEE rounding's does (floor(-0.0) and ceil(-0.5) are -0.0).
def _integral(value: str) -> str:
    """The rounding of x whose value below 2 ** 52 is `value`."""
    return f"where(math.fabs(x) < 4503599627370496.0, where({value} == 0.0, x * 0.0, {value}), x)"


_TRUNC = _integral("where(x >= 0.0, math.floor(x), math.ceil(x))")
# Ties to even. x - floor(x) is exact (Sterbenz) but between -1 and 0, where rounding it can only
# move a value just above -0.5 onto the tie, which rounds to the same -0.0. floor(x) is even when
# halving it leaves an integer.
_NEAREST = (
    "where(x - math.floor(x) > 0.5, math.floor(x) + 1.0, where(x - math.floor(x) < 0.5, math.floor(x),"
    " where(math.floor(x) * 0.5 == math.floor(math.floor(x) * 0.5), math.floor(x), math.floor(x) + 1.0)))"
)

# 1 - S for erfcx's asymptotic series S = sum_k>=0 (-1)^k (2k - 1)!! r^k, r = 1 / (2 x^2), to k = 9 (the
# next term is below 1e-19 relative from x = 26 on), in Horner form: r (1 - 3r (1 - 5r (1 - ...))).
_ERFCX_TAIL = "".join(f"{2 * k - 1}.0 * (0.5 / (x * x)) * (1.0 - " for k in range(1, 10)) + "0.0" + ")" * 9

# The table. Derivatives are checked by gradcheck/gradgradcheck in tests/ops/test_op_cases.py and
# against PyTorch (including NaN and inf inputs) in tests/ops/test_scalar_rules.py.
_TABLE = (
    # arithmetic
    ScalarRule("add", 2, "x + y", ("1.0", "1.0"), ufunc="add", dtypes="any", method=False),
    ScalarRule("sub", 2, "x - y", ("1.0", "-1.0"), ufunc="subtract", dtypes="any", method=False),
    ScalarRule("mul", 2, "x * y", ("y", "x"), ufunc="multiply", dtypes="any", method=False),
    # d/dy recomputes x / y rather than reading out, as PyTorch does: the node keeps x and y, so
    # q = x / y; q.masked_fill_(m, 0) still differentiates. x / y is out bit for bit.
    ScalarRule("div", 2, "x / y", ("1.0 / y", "-(x / y) / y"), ufunc="true_divide", method=False),
    ScalarRule("neg", 1, "-x", ("-1.0",), ufunc="negative", dtypes="any", method=False),
    ScalarRule(
        "pow", 2, "x ** y",
        # 0 ** 0 is 1 whatever the exponent's gradient says: d/dx is 0 where y == 0, and
        # d/dy takes log(0) as 0 where y >= 0 (PyTorch's masks).
        ("where(y == 0.0, 0.0, y * x ** (y - 1.0))",
         "out * where(x == 0.0, where(y >= 0.0, 0.0, math.log(x)), math.log(x))"),
        ufunc="power", dtypes="any", method=False,
    ),
    ScalarRule(
        "maximum", 2, "where(x > y, x, where(x != x, x, y))",
        # A NaN on either side takes the whole gradient (neither x < y nor x > y holds), ties split.
        ("where(x == y, 0.5, where(x < y, 0.0, 1.0))", "where(x == y, 0.5, where(x > y, 0.0, 1.0))"),
        ufunc="maximum", dtypes="any", method=False,
    ),
    ScalarRule(
        "minimum", 2, "where(x < y, x, where(x != x, x, y))",
        ("where(x == y, 0.5, where(x > y, 0.0, 1.0))", "where(x == y, 0.5, where(x < y, 0.0, 1.0))"),
        ufunc="minimum", dtypes="any", method=False,
    ),
    ScalarRule(
        "atan2", 2, "math.atan2(x, y)",
        # Where x * x + y * y is 0 (or underflows), a zero gradient, as PyTorch's, signed as its.
        ("where(x * x + y * y == 0.0, y * 0.0, y / (x * x + y * y))",
         "where(x * x + y * y == 0.0, -x * 0.0, -x / (x * x + y * y))"), ufunc="arctan2",
        doc="Elementwise arctangent of input / other, in the quadrant of (other, input).",
    ),
    ScalarRule("hypot", 2, "math.hypot(x, y)", ("x / out", "y / out"), ufunc="hypot", doc="Elementwise sqrt(x ** 2 + y ** 2)."),
    ScalarRule(
        "logaddexp", 2,
        # Equal arguments (both infinite ones included) give x + ln 2; otherwise the larger plus a
        # term that cannot overflow.
        "where(x == y, x + 0.6931471805599453, where(x > y, x, y) + math.log1p(math.exp(-math.fabs(x - y))))",
        ("1.0 / (1.0 + math.exp(y - x))", "1.0 / (1.0 + math.exp(x - y))"), ufunc="logaddexp",
        doc="Elementwise log(exp(x) + exp(y)).",
    ),
    ScalarRule(
        "xlogy", 2, "where(y != y, y, where(x == 0.0, 0.0, x * math.log(y)))",
        # d/dx is log(y) even where x is 0, but 0 there for y <= 0 (PyTorch's mask).
        ("where(x == 0.0, where(y <= 0.0, 0.0, math.log(y)), math.log(y))", "x / y"),
        doc="Elementwise x * log(y), 0 where x is 0 (unless y is NaN).",
    ),
    ScalarRule(
        "xlog1py", 2, "where(y != y, y, where(x == 0.0, 0.0, x * math.log1p(y)))",
        ("where(x == 0.0, where(y <= -1.0, 0.0, math.log1p(y)), math.log1p(y))", "x / (1.0 + y)"),
        method=False, export=False, doc="Elementwise x * log1p(y), 0 where x is 0 (unless y is NaN).",
    ),
    # unary functions
    ScalarRule("exp", 1, "math.exp(x)", ("out",), ufunc="exp", doc="Elementwise e ** x."),
    ScalarRule("log", 1, "math.log(x)", ("1.0 / x",), ufunc="log", doc="Elementwise natural logarithm."),
    ScalarRule("log1p", 1, "math.log1p(x)", ("1.0 / (x + 1.0)",), ufunc="log1p", doc="Elementwise log(1 + x)."),
    ScalarRule("expm1", 1, "math.expm1(x)", ("out + 1.0",), ufunc="expm1", doc="Elementwise exp(x) - 1."),
    ScalarRule("sqrt", 1, "math.sqrt(x)", ("0.5 / out",), ufunc="sqrt", doc="Elementwise square root."),
    ScalarRule("rsqrt", 1, "1.0 / math.sqrt(x)", ("-0.5 * out * out * out",), doc="Elementwise 1 / sqrt(x)."),
    # At 0 and NaN PyTorch multiplies the gradient by sgn(x) = 0 (NaN for an infinite gradient): a
    # product, 0.0 * 1.0, where a literal 0.0 would mask the gradient as relu's does.
    ScalarRule(
        "abs", 1, "math.fabs(x)", ("where(x > 0.0, 1.0, where(x < 0.0, -1.0, 0.0 * 1.0))",),
        ufunc="absolute", dtypes="any", method=False,
    ),
    ScalarRule(
        # NaN's sign is 0, as PyTorch's; NumPy's np.sign keeps NaN, so ops/elementwise.py's host
        # function for this row sets it to 0 after the ufunc.
        "sign", 1, "where(x > 0.0, 1.0, where(x < 0.0, -1.0, 0.0))", ("0.0",),
        ufunc="sign", dtypes="any", bool_result="itself", doc="Elementwise sign: -1, 0 or 1 (0 for NaN, as PyTorch).",
    ),
    ScalarRule("sin", 1, "math.sin(x)", ("math.cos(x)",), ufunc="sin", doc="Elementwise sine.", tensor_vjps=("math.sin_backward(g, x)",)),
    ScalarRule("cos", 1, "math.cos(x)", ("-math.sin(x)",), ufunc="cos", doc="Elementwise cosine.", tensor_vjps=("math.cos_backward(g, x)",)),
    ScalarRule(
        "tanh", 1, "math.tanh(x)", ("1.0 - out * out",), ufunc="tanh", doc="Elementwise hyperbolic tangent.",
        tensor_vjps=("math.tanh_backward(g, out)",),
    ),
    ScalarRule("atan", 1, "math.atan(x)", ("1.0 / (1.0 + x * x)",), ufunc="arctan", doc="Elementwise arctangent."),
    ScalarRule("tan", 1, "math.tan(x)", ("1.0 + out * out",), ufunc="tan", doc="Elementwise tangent."),
    ScalarRule("asin", 1, "math.asin(x)", ("1.0 / math.sqrt(1.0 - x * x)",), ufunc="arcsin", doc="Elementwise arcsine."),
    ScalarRule("acos", 1, "math.acos(x)", ("-1.0 / math.sqrt(1.0 - x * x)",), ufunc="arccos", doc="Elementwise arccosine."),
    ScalarRule("sinh", 1, "math.sinh(x)", ("math.cosh(x)",), ufunc="sinh", doc="Elementwise hyperbolic sine."),
    ScalarRule("cosh", 1, "math.cosh(x)", ("math.sinh(x)",), ufunc="cosh", doc="Elementwise hyperbolic cosine."),
    ScalarRule(
        "asinh", 1, "math.asinh(x)", ("1.0 / math.sqrt(x * x + 1.0)",), ufunc="arcsinh",
        doc="Elementwise inverse hyperbolic sine.",
    ),
    ScalarRule(
        "acosh", 1, "math.acosh(x)", ("1.0 / math.sqrt(x * x - 1.0)",), ufunc="arccosh",
        doc="Elementwise inverse hyperbolic cosine.",
    ),
    ScalarRule(
        "atanh", 1, "math.atanh(x)", ("1.0 / (1.0 - x * x)",), ufunc="arctanh",
        doc="Elementwise inverse hyperbolic tangent.",
    ),
    ScalarRule("log2", 1, "math.log2(x)", ("1.4426950408889634 / x",), ufunc="log2", doc="Elementwise base-2 logarithm."),  # 1 / ln 2
    ScalarRule(
        "log10", 1, "math.log10(x)", ("0.4342944819032518 / x",), ufunc="log10",  # 1 / ln 10
        doc="Elementwise base-10 logarithm.",
    ),
    ScalarRule("exp2", 1, "2.0 ** x", ("out * 0.6931471805599453",), ufunc="exp2", doc="Elementwise 2 ** x."),  # ln 2
    ScalarRule(
        "square", 1, "x * x", ("2.0 * x",), ufunc="square", dtypes="any", bool_result="int64",
        doc="Elementwise x * x.",
    ),
    ScalarRule("reciprocal", 1, "1.0 / x", ("-out * out",), ufunc="reciprocal", doc="Elementwise 1 / x."),
    # rounding: zero gradient everywhere, as PyTorch's
    ScalarRule("floor", 1, _integral("math.floor(x)"), ("0.0",), ufunc="floor", dtypes="integral", doc="Elementwise largest integer <= x."),
    ScalarRule("ceil", 1, _integral("math.ceil(x)"), ("0.0",), ufunc="ceil", dtypes="integral", doc="Elementwise smallest integer >= x."),
    ScalarRule("trunc", 1, _TRUNC, ("0.0",), ufunc="trunc", dtypes="integral", doc="Elementwise x rounded toward 0."),
    ScalarRule(
        "round", 1, _integral(_NEAREST), ("0.0",), ufunc="rint", dtypes="integral", method=False, export=False,
        doc="Elementwise x rounded to the nearest integer, ties to even.",
    ),
    ScalarRule("frac", 1, f"x - {_TRUNC}", ("1.0",), dtypes="float", doc="Elementwise x - trunc(x)."),
    ScalarRule(
        "sigmoid", 1,
        # exp(-x) overflows to inf for x < -709, and 1 / inf = 0 is the right limit: one exp, no branch.
        "1.0 / (1.0 + math.exp(-x))",
        ("out * (1.0 - out)",), doc="Elementwise 1 / (1 + exp(-x)).", tensor_vjps=("math.sigmoid_backward(g, out)",),
    ),
    ScalarRule(
        "erf", 1, "math.erf(x)", ("1.1283791670955126 * math.exp(-(x * x))",),  # 2 / sqrt(pi)
        doc="Elementwise error function.",
    ),
    ScalarRule(
        "erfc", 1, "math.erfc(x)", ("-1.1283791670955126 * math.exp(-(x * x))",),  # -2 / sqrt(pi)
        doc="Elementwise complementary error function 1 - erf(x), accurate where erf(x) is near 1.",
    ),
    ScalarRule(
        "erfinv", 1, "math.erfinv(x)", ("0.886226925452758 * math.exp(out * out)",),  # sqrt(pi) / 2
        doc="Elementwise inverse error function: erfinv(erf(x)) = x; +-inf at +-1, NaN beyond.",
    ),
    # special functions: math.digamma and math.polygamma are numdiff.kernels._special's
    ScalarRule(
        "lgamma", 1, "math.lgamma(x)", ("math.digamma(x)",),
        doc="Elementwise log |Gamma(x)|; inf at 0 and the negative integers.",
    ),
    ScalarRule(
        "digamma", 1, "math.digamma(x)", ("math.polygamma(x, 1.0)",),
        doc="Elementwise psi(x), the derivative of lgamma; NaN at the negative integers, -inf at 0.",
    ),
    ScalarRule(
        "polygamma", 1, "math.polygamma(x, order)", ("math.polygamma(x, order + 1.0)",),
        attrs=(("order", 1.0),),
        method=False, export=False,  # numdiff.polygamma(n, input): PyTorch's argument order
        doc="Elementwise derivative of digamma of the given order >= 1.",
    ),
    # the modified Bessel functions of the first kind and the scaled erfc (numdiff.kernels._special's).
    # i1's derivative i0 - i1 / x is 1/2 at 0 (its limit), and at NaN, as PyTorch's mask gives; i0e and
    # i1e carry exp(-|x|), whose derivative adds -sign(x) times the function (PyTorch's formulas).
    ScalarRule("i0", 1, "math.i0(x)", ("math.i1(x)",), export=True, doc="Elementwise I0(x), the modified Bessel function of order 0."),
    ScalarRule(
        "i0e", 1, "math.i0e(x)", ("math.i1e(x) - where(x > 0.0, out, where(x < 0.0, -out, 0.0))",),
        method=False, export=False, doc="Elementwise exp(-|x|) I0(x).",
    ),
    ScalarRule(
        "i1", 1, "math.i1(x)", ("where(math.fabs(x) > 0.0, math.i0(x) - out / x, 0.5)",),
        method=False, export=False, doc="Elementwise I1(x), the modified Bessel function of order 1.",
    ),
    ScalarRule(
        "i1e", 1, "math.i1e(x)",
        ("where(math.fabs(x) > 0.0, math.i0e(x) - out * (where(x > 0.0, 1.0, -1.0) + 1.0 / x), 0.5)",),
        method=False, export=False, doc="Elementwise exp(-|x|) I1(x).",
    ),
    ScalarRule(
        # 2 x erfcx(x) - 2 / sqrt(pi) (2 / sqrt(pi) = 1.128...), PyTorch's; its two terms cancel as x grows,
        # so from 26 on (where erfcx is its asymptotic series) the difference is that series' own,
        # (2 / sqrt(pi)) sum_k>=1 (-1)^k (2k - 1)!! / (2 x^2)^k: -1 / (sqrt(pi) x^2) to leading order.
        # x - x is NaN at +inf, PyTorch's value there (its inf * 0), and an exact 0 elsewhere.
        "erfcx", 1, "math.erfcx(x)",
        (f"where(x < 26.0, 2.0 * x * out - 1.1283791670955126, -1.1283791670955126 * {_ERFCX_TAIL} + (x - x))",),
        method=False, export=False, doc="Elementwise exp(x ** 2) erfc(x), finite where erfc underflows.",
    ),
    ScalarRule(
        "logit", 1, "math.log(x / (1.0 - x))",
        # NaN outside [0, 1], where the result is NaN, as PyTorch's gradient.
        ("where(out != out, out, 1.0 / (x * (1.0 - x)))",), method=False, export=False,
        doc="Elementwise log(x / (1 - x)), the inverse of sigmoid.",  # numdiff.logit adds eps
    ),
    # activations (floating point inputs only, as PyTorch's)
    ScalarRule(
        "relu", 1, "where(x <= 0.0, 0.0, x)", ("where(out <= 0.0, 0.0, 1.0)",),
        dtypes="float", method=False, doc="max(x, 0); NaN stays NaN and passes its gradient.",
        tensor_vjps=("math.relu_backward(g, out)",),
    ),
    ScalarRule(
        "leaky_relu", 1, "where(x > 0.0, x, x * negative_slope)", ("where(x > 0.0, 1.0, negative_slope)",),
        dtypes="float", export=False, attrs=(("negative_slope", 0.01),), method=False,
        doc="x for x > 0, else negative_slope * x.",
        tensor_vjps=("math.leaky_relu_backward(g, x, negative_slope=negative_slope)",),
    ),
    ScalarRule(
        # PReLU with its slope tensor broadcast against x (numdiff.nn.functional.prelu reshapes it to
        # the channel dim): one kernel each way, the slope's gradient summed over the broadcast dims.
        "prelu", 2, "where(x > 0.0, x, y * x)", ("where(x > 0.0, 1.0, y)", "where(x > 0.0, 0.0, x)"),
        dtypes="float", export=False, method=False, doc="x for x > 0, else weight * x (weight broadcast).",
    ),
    ScalarRule(
        "elu", 1, "where(x > 0.0, x, alpha * math.expm1(x))", ("where(x <= 0.0, alpha * math.exp(x), 1.0)",),
        dtypes="float", export=False, attrs=(("alpha", 1.0),), method=False, doc="x for x > 0, else alpha * (exp(x) - 1).",
    ),
    ScalarRule(
        "softplus", 1,
        # Linear above the threshold, as PyTorch; below it max(z, 0) + log1p(exp(-|z|)), z = beta x,
        # which never overflows (the threshold may be inf).
        "where(x * beta > threshold, x,"
        " (where(x * beta > 0.0, x * beta, 0.0) + math.log1p(math.exp(-math.fabs(x * beta)))) / beta)",
        ("where(x * beta > threshold, 1.0, 1.0 / (1.0 + math.exp(-x * beta)))",),
        dtypes="float", export=False, attrs=(("beta", 1.0), ("threshold", 20.0)), method=False,
        doc="A smooth relu: log(1 + exp(beta x)) / beta.",
        tensor_vjps=("math.softplus_backward(g, x, beta=beta, threshold=threshold)",),
    ),
    ScalarRule(
        "gelu", 1, "0.5 * x * (1.0 + math.erf(x * 0.7071067811865476))",  # 1 / sqrt(2)
        ("0.5 * (1.0 + math.erf(x * 0.7071067811865476)) + x * 0.3989422804014327 * math.exp(-0.5 * x * x)",),
        dtypes="float", export=False, method=False, doc="x * Phi(x), Phi the standard normal CDF (erf form).",
        tensor_vjps=("math.gelu_backward(g, x)",),
    ),
    ScalarRule(
        "gelu_tanh", 1,
        # PyTorch's gelu(approximate="tanh"): sqrt(2 / pi) = 0.7978845608028654.
        "0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
        ("0.5 * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))"
         " + 0.5 * x * (1.0 - math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)) ** 2.0)"
         " * 0.7978845608028654 * (1.0 + 0.134145 * x * x)",),
        dtypes="float", export=False, method=False, doc="gelu's tanh approximation.",
    ),
    ScalarRule(
        "silu", 1, "x / (1.0 + math.exp(-x))",
        ("(1.0 / (1.0 + math.exp(-x))) * (1.0 + x * (1.0 - 1.0 / (1.0 + math.exp(-x))))",),
        dtypes="float", export=False, method=False, functional="inplace", doc="x * sigmoid(x) (swish).",
        tensor_vjps=("math.silu_backward(g, x)",),
    ),
    ScalarRule(
        "mish", 1, "x * math.tanh(math.log1p(math.exp(x)))",
        ("math.tanh(math.log1p(math.exp(x))) + x / (1.0 + math.exp(-x))"
         " * (1.0 - math.tanh(math.log1p(math.exp(x))) * math.tanh(math.log1p(math.exp(x))))",),
        dtypes="float", export=False, method=False, functional="inplace", doc="x * tanh(softplus(x)).",
    ),
    ScalarRule(
        "hardswish", 1,
        # x * clamp(x + 3, 0, 6) / 6, so -inf gives NaN as in PyTorch.
        "x * where(x + 3.0 <= 0.0, 0.0, where(x + 3.0 >= 6.0, 6.0, x + 3.0)) / 6.0",
        ("where(x <= -3.0, 0.0, where(x < 3.0, x / 3.0 + 0.5, where(x != x, x, 1.0)))",),
        dtypes="float", export=False, method=False, functional="inplace", doc="x * relu6(x + 3) / 6.",
    ),
    ScalarRule(
        "hardsigmoid", 1, "where(x <= -3.0, 0.0, where(x >= 3.0, 1.0, x / 6.0 + 0.5))",
        ("where(x > -3.0, where(x < 3.0, 0.16666666666666666, 0.0), 0.0)",),
        dtypes="float", export=False, method=False, functional="inplace", doc="relu6(x + 3) / 6.",
    ),
    ScalarRule(
        "hardtanh", 1, "where(x < min_val, min_val, where(x > max_val, max_val, x))",
        ("where(x > min_val, where(x < max_val, 1.0, 0.0), 0.0)",),
        dtypes="float", export=False, attrs=(("min_val", -1.0), ("max_val", 1.0)), method=False,
        doc="x clamped to [min_val, max_val]; NaN stays NaN.",
    ),
    ScalarRule(
        "logsigmoid", 1,
        # -softplus(-x) = -(max(-x, 0) + log1p(exp(-|x|))): no overflow on either side, and one exp and
        # one log1p outside the where, so a kernel's loop vectorises (x < 0 gives -((-x) + l), the
        # same bits as x - l). float32[590000], one thread: 1.84 -> 0.95 ms.
        "-(where(x < 0.0, -x, 0.0) + math.log1p(math.exp(-math.fabs(x))))",
        # sigmoid(-x) = (x > 0 ? e : 1) / (1 + e), e = exp(-|x|): one exp, of a non-positive argument
        # only (no overflow warning past x = 709).
        ("where(x > 0.0, math.exp(-math.fabs(x)), 1.0) / (1.0 + math.exp(-math.fabs(x)))",),
        dtypes="float", export=False, method=False, functional="plain", doc="log(sigmoid(x)), computed stably.",
    ),
    ScalarRule(
        "selu", 1,
        # scale = 1.0507009873554805, scale * alpha = 1.7580993408473766 (Klambauer et al.)
        "where(x > 0.0, 1.0507009873554805 * x, 1.7580993408473766 * math.expm1(x))",
        ("where(x > 0.0, 1.0507009873554805, 1.7580993408473766 * math.exp(x))",),
        dtypes="float", export=False, method=False, functional="inplace", doc="scale * elu(x, alpha) with the self-normalising constants.",
    ),
    ScalarRule(
        "celu", 1, "where(x > 0.0, x, alpha * math.expm1(x / alpha))", ("where(x > 0.0, 1.0, math.exp(x / alpha))",),
        dtypes="float", export=False, attrs=(("alpha", 1.0),), method=False, doc="x for x > 0, else alpha * (exp(x / alpha) - 1).",
    ),
    ScalarRule(
        "softsign", 1, "x / (1.0 + math.fabs(x))",
        # 1 / (1 + |x|) ** 2, plus x - x (0, but NaN at +-inf, where PyTorch's quotient rule gives NaN).
        ("1.0 / ((1.0 + math.fabs(x)) * (1.0 + math.fabs(x))) + (x - x)",),
        dtypes="float", export=False, method=False, functional="plain", doc="x / (1 + |x|).",
    ),
    ScalarRule(
        "softshrink", 1, "where(x > lambd, x - lambd, where(x < -lambd, x + lambd, where(x != x, x, 0.0)))",
        ("where(x < -lambd, 1.0, where(x > lambd, 1.0, 0.0))",),
        dtypes="float", export=False, attrs=(("lambd", 0.5),), method=False, doc="x moved lambd toward 0, 0 within lambd of it.",
    ),
    ScalarRule(
        "hardshrink", 1, "where(x >= -lambd, where(x <= lambd, 0.0, x), x)", ("where(x < -lambd, 1.0, where(x > lambd, 1.0, 0.0))",),
        dtypes="float", export=False, attrs=(("lambd", 0.5),), method=False, functional="plain", doc="x, but 0 within lambd of 0.",
    ),
    ScalarRule(
        "tanhshrink", 1, "x - math.tanh(x)", ("math.tanh(x) * math.tanh(x)",),
        dtypes="float", export=False, method=False, functional="plain", doc="x - tanh(x).",
    ),
    ScalarRule(
        "threshold", 1, "where(x <= threshold, value, x)", ("where(x <= threshold, 0.0, 1.0)",),
        dtypes="float", export=False, attrs=(("threshold", 0.0), ("value", 0.0)), method=False,
        doc="x where x > threshold, else value.",
    ),
)  # fmt: skip

# The activations' backwards as ops of their own, what their tensor_vjps call (create_graph records one op).
_TABLE += BACKWARD_RULES
# The pointwise losses' elementwise parts (numdiff/_ground/scalar_loss_rules.py).
_TABLE += LOSS_RULES

RULES: dict[str, ScalarRule] = {rule.name: rule for rule in _TABLE}

