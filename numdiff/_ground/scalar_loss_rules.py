"""The pointwise losses' elementwise parts as rows of the scalar rule table (numdiff/_ground/scalar_rules.py
joins them to it): numdiff/nn/_losses.py reduces them. One pass forward and one backward instead
of a chain of elementwise ops; x is the input, y the target. Values and gradients are PyTorch's,
including its branch order at the ties |x - y| = beta (or delta).
"""

from __future__ import annotations

from numdiff._ground.scalar_expressions import ScalarRule

LOSS_RULES = (
    ScalarRule(
        "smooth_l1", 2,
        "where(math.fabs(x - y) < beta, 0.5 * (x - y) * (x - y) / beta, math.fabs(x - y) - 0.5 * beta)",
        ("where(x - y < -beta, -1.0, where(x - y > beta, 1.0, (x - y) / beta))",
         "where(x - y < -beta, 1.0, where(x - y > beta, -1.0, (y - x) / beta))"),
        dtypes="float", export=False, method=False, attrs=(("beta", 1.0),),
        doc="Elementwise smooth L1 loss of input x against target y (beta > 0).",
    ),
    ScalarRule(
        "huber", 2,
        "where(math.fabs(x - y) < delta, 0.5 * (x - y) * (x - y), delta * (math.fabs(x - y) - 0.5 * delta))",
        ("where(x - y < -delta, -delta, where(x - y > delta, delta, x - y))",
         "where(x - y < -delta, delta, where(x - y > delta, -delta, y - x))"),
        dtypes="float", export=False, method=False, attrs=(("delta", 1.0),),
        doc="Elementwise Huber loss of input x against target y (delta > 0).",
    ),
    ScalarRule(
        "squared_error", 2, "(x - y) * (x - y)", ("2.0 * (x - y)", "2.0 * (y - x)"),
        dtypes="float", export=False, method=False, doc="Elementwise (x - y) ** 2, mse_loss before its reduction.",
    ),
    ScalarRule(
        "bce_with_logits", 2,
        # (1 - y) x - log(sigmoid(x)), with log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)): no overflow.
        "(1.0 - y) * x - where(x < 0.0, x, 0.0) + math.log1p(math.exp(-math.fabs(x)))",
        # sigmoid(x) - y, with exp of a non-positive argument only (no overflow warning).
        ("where(x < 0.0, math.exp(x) / (1.0 + math.exp(x)), 1.0 / (1.0 + math.exp(-x))) - y", "-x"),
        dtypes="float", export=False, method=False,
        doc="Elementwise binary cross entropy of logits x against target y.",
    ),
    ScalarRule(
        "soft_margin", 2,
        # softplus(-x y) = max(-x y, 0) + log1p(exp(-|x y|)): no overflow at large margins.
        "where(x * y < 0.0, -(x * y), 0.0) + math.log1p(math.exp(-math.fabs(x * y)))",
        # -y sigmoid(-x y) and -x sigmoid(-x y), with exp of a non-positive argument only.
        ("-y * where(x * y > 0.0, math.exp(-(x * y)) / (1.0 + math.exp(-(x * y))), 1.0 / (1.0 + math.exp(x * y)))",
         "-x * where(x * y > 0.0, math.exp(-(x * y)) / (1.0 + math.exp(-(x * y))), 1.0 / (1.0 + math.exp(x * y)))"),
        dtypes="float", export=False, method=False,
        doc="Elementwise log(1 + exp(-x y)), soft_margin_loss before its reduction.",
    ),
)  # fmt: skip
