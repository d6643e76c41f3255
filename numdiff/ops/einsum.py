"""einsum, composed from differentiable ops: diagonal picks, sums, permutes, reshapes and matmul.

The equation is reduced to a chain of two-operand contractions, each one batched matrix product
(``(batch, rows, k) @ (batch, k, cols)``), so gradients of every order, and CUDA, come from those
ops with nothing to write twice. Letters that one operand alone carries and the result does not
are summed out first; a letter repeated within an operand takes its diagonal; size-1 dimensions
broadcast against the other operands, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numdiff.ops.linalg import matmul
from numdiff.ops.reduction import sum as sum_
from numdiff.tensor import Tensor

# Spelled out, not string.ascii_letters: the string module compiles a regular expression at import.
_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LETTERS = set(_ASCII_LETTERS)


def _parse(equation: str, operands: tuple[Tensor, ...]) -> tuple[list[str], str]:
    """Explicit subscripts per operand and for the result (ellipses spelled out with spare letters)."""
    equation = equation.replace(" ", "")
    inputs_part, arrow, output = equation.partition("->")
    inputs = inputs_part.split(",")
    if len(inputs) != len(operands):
        raise ValueError(
            f"einsum: the equation {equation!r} names {len(inputs)} operands but {len(operands)} were given"
        )
    used = set(equation) & _LETTERS
    spare = [c for c in _ASCII_LETTERS if c not in used]
    for text in [*inputs, output]:
        if set(text) - _LETTERS - {"."} or text.replace("...", "").count(".") or text.count("...") > 1:
            raise ValueError(f"einsum: invalid subscripts {text!r} in {equation!r} (letters and one '...' only)")
    ellipsis_rank = 0
    for text, operand in zip(inputs, operands):
        letters = len(text.replace("...", ""))
        if "..." in text:
            ellipsis_rank = max(ellipsis_rank, operand.ndim - letters)
        if operand.ndim < letters or ("..." not in text and operand.ndim != letters):
            raise ValueError(
                f"einsum: subscripts {text!r} do not fit an operand of shape {tuple(operand.shape)} "
                f"in {equation!r}"
            )
    broadcast = "".join(spare[:ellipsis_rank])
    explicit = []
    for text, operand in zip(inputs, operands):
        rank = operand.ndim - len(text.replace("...", ""))
        explicit.append(text.replace("...", broadcast[ellipsis_rank - rank :] if rank else ""))
    if not arrow:
        counts = "".join(explicit)
        output = broadcast + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in broadcast))
    else:
        if any(output.count(c) > 1 for c in output.replace("...", "")):
            raise ValueError(f"einsum: output subscripts {output!r} repeat a letter in {equation!r}")
        output = output.replace("...", broadcast)
        unknown = set(output) - set("".join(explicit))
        if unknown:
            raise ValueError(f"einsum: output letters {sorted(unknown)} appear in no operand of {equation!r}")
    return explicit, output


def _sizes(equation: str, subscripts: list[str], operands: tuple[Tensor, ...]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for index, (letters, operand) in enumerate(zip(subscripts, operands)):
        for letter, size in zip(letters, operand.shape):
            seen = sizes.get(letter, 1)
            if size != seen and 1 not in (size, seen):
                raise ValueError(
                    f"einsum: subscript {letter} has size {size} for operand {index} (shape "
                    f"{tuple(operand.shape)}), which does not broadcast with the size {seen} seen before "
                    f"in {equation!r}"
                )
            sizes[letter] = size if seen == 1 else seen  # a size 1 broadcasts, to 0 too (max would keep 1)
    return sizes


def _diagonal(operand: Tensor, letters: str) -> tuple[Tensor, str]:
    """Take the diagonal over each repeated letter, so every letter appears once."""
    while len(set(letters)) != len(letters):
        letter = next(c for c in letters if letters.count(c) > 1)
        first, second = letters.index(letter), letters.index(letter, letters.index(letter) + 1)
        if operand.shape[first] != operand.shape[second]:
            raise ValueError(
                f"einsum: subscript {letter} is repeated for dimensions of sizes {operand.shape[first]} "
                f"and {operand.shape[second]}"
            )
        # Bring the pair to the front, index both with one arange (a diagonal), then move it back.
        rest = [d for d in range(operand.ndim) if d not in (first, second)]
        moved = operand.permute(first, second, *rest)
        steps = np.arange(operand.shape[first])
        picked = moved[steps, steps]
        operand = picked.permute(*range(1, first + 1), 0, *range(first + 1, picked.ndim))
        letters = letters[:second] + letters[second + 1 :]
    return operand, letters


def _arrange(operand: Tensor, letters: str, order: str, sizes: dict[str, int]) -> Tensor:
    """`operand` permuted to `order` (which holds exactly its letters), size-1 dims expanded."""
    arranged = operand.permute(*[letters.index(c) for c in order]) if letters != order else operand
    target = tuple(sizes[c] for c in order)
    return arranged.expand(*target) if tuple(arranged.shape) != target else arranged


def _contract(a: Tensor, a_letters: str, b: Tensor, b_letters: str, keep: set[str], sizes: dict[str, int]):
    """Contract two operands over their shared letters not in `keep`, as one batched matmul."""
    batch = "".join(c for c in a_letters if c in b_letters and c in keep)
    summed = "".join(c for c in a_letters if c in b_letters and c not in keep)
    rows = "".join(c for c in a_letters if c not in b_letters)
    cols = "".join(c for c in b_letters if c not in a_letters)
    size = lambda group: int(np.prod([sizes[c] for c in group], dtype=np.int64))  # noqa: E731
    left = _arrange(a, a_letters, batch + rows + summed, sizes).reshape(size(batch), size(rows), size(summed))
    right = _arrange(b, b_letters, batch + summed + cols, sizes).reshape(size(batch), size(summed), size(cols))
    product = matmul(left, right)
    letters = batch + rows + cols
    return product.reshape(*[sizes[c] for c in letters]), letters


def _sublist_form(args: tuple) -> tuple[str, tuple]:
    """The equation and operands of einsum's sublist form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``:
    each operand followed by its dimensions' numbers (0-51, or ... for the broadcast ones),
    and optionally the output's numbers last."""
    pairs, output = (args[:-1], args[-1]) if len(args) % 2 else (args, None)

    def letters(sublist: Any) -> str:
        if not isinstance(sublist, (list, tuple)):
            raise TypeError(f"einsum: in the sublist form each operand is followed by a list of ints, got {type(sublist).__name__}")
        text = ""
        for item in sublist:
            if item is Ellipsis:
                text += "..."
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < 52:
                text += chr(ord("A") + item) if item < 26 else chr(ord("a") + item - 26)
            else:
                raise ValueError(f"einsum: a sublist subscript must be an int in [0, 52) or ..., got {item!r}")
        return text

    equation = ",".join(letters(sublist) for sublist in pairs[1::2])
    if output is not None:
        equation += "->" + letters(output)
    return equation, tuple(pairs[0::2])


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation, as ``torch.einsum``: ``einsum("bij,bjk->bik", a, b)`` is a batched matmul,
    and so is the sublist form ``einsum(a, [0, 1, 2], b, [0, 2, 3], [0, 1, 3])``.

    >>> numdiff.einsum("ij,j->i", numdiff.ones(2, 3), numdiff.tensor([1., 2., 3.]))
    tensor([6., 6.])
    """
    if isinstance(equation, Tensor):
        equation, operands = _sublist_form((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a str, got {type(equation).__name__}")
    if not operands or not all(isinstance(t, Tensor) for t in operands):
        raise TypeError(f"einsum: operands must be Tensors, got {[type(t).__name__ for t in operands]}")
    subscripts, output = _parse(equation, operands)
    sizes = _sizes(equation, subscripts, operands)
    terms = [_diagonal(t, letters) for t, letters in zip(operands, subscripts)]
    while True:
        # Sum out letters that only one remaining term carries and the result does not need.
        reduced = []
        for i, (term, letters) in enumerate(terms):
            elsewhere = set(output).union(*(set(other) for j, (_, other) in enumerate(terms) if j != i))
            lonely = [d for d, c in enumerate(letters) if c not in elsewhere]
            if lonely:
                term = sum_(term, dim=lonely)
                letters = "".join(c for c in letters if c in elsewhere)
            reduced.append((term, letters))
        terms = reduced
        if len(terms) == 1:
            break
        (a, a_letters), (b, b_letters), *rest = terms
        keep = set(output).union(*(set(letters) for _, letters in rest))
        terms = [_contract(a, a_letters, b, b_letters, keep, sizes), *rest]
    result, letters = terms[0]
    return _arrange(result, letters, output, sizes) if letters else result
