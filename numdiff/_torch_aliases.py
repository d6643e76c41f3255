"""PyTorch's other names for numdiff's functions: NumPy's spellings (``arccos``), comparison words
(``greater_equal``) and older names (``ger``, ``fix``). One table gives the function, the Tensor
method and the in-place method of each alias, all the very objects of the name they stand for, so
an alias can never drift from its original (or miss its ``out=`` keyword).
"""

from __future__ import annotations

from typing import Any

# alias -> numdiff's name, for the function, the method and (where the original has one) name_.
ALIASES = {
    "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh",
    "fix": "trunc", "sgn": "sign",  # sgn differs from sign only for complex numbers, which numdiff lacks
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "concatenate": "cat", "ger": "outer",
}  # fmt: skip

# In-place methods PyTorch has for aliases whose out-of-place form numdiff already has.
INPLACE_ALIASES = {
    "arctan2_": "atan2_", "absolute_": "abs_", "negative_": "neg_", "multiply_": "mul_",
    "subtract_": "sub_", "divide_": "div_", "true_divide_": "div_",
}  # fmt: skip


def functions(namespace: dict[str, Any]) -> dict[str, Any]:
    """The alias functions for a namespace that holds the originals (numdiff's own globals)."""
    return {alias: namespace[name] for alias, name in ALIASES.items() if name in namespace}


def methods(tensor_class: type) -> dict[str, Any]:
    """The alias methods, out-of-place and in-place, for a Tensor class whose originals are attached."""
    found = {}
    for alias, name in ALIASES.items():
        for suffix in ("", "_"):
            if hasattr(tensor_class, name + suffix):
                found[alias + suffix] = getattr(tensor_class, name + suffix)
    found.update({alias: getattr(tensor_class, name) for alias, name in INPLACE_ALIASES.items()
                  if hasattr(tensor_class, name)})
    return found
