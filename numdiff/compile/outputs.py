"""What a compiled call hands back: its output tensors, linked to the tensors they alias as in eager.

Eager mode gives an output that aliases an argument (``x[:2]``, ``x.detach()``, ``return x``) the
argument's version counter, and a view its ``_base``, so that an in-place op on it is refused
where it must be (a view of a leaf that requires grad) and seen by every backward that saved the
argument. A compiled call's outputs are fresh tensors around the generated code's arrays, so the
links the trace saw are made again on every call (`output_links`, `link_outputs`). An output that
shares memory with an array the compiled backward reads (``x.exp()``, whose backward reads its
output) is watched by the region's version check (`watch_saved_outputs`), as eager's saved
tensors are.
"""

from __future__ import annotations

from typing import Any

from numdiff.tensor import Tensor


def output_links(outputs: list, tensors: list, captured: list, fresh: set) -> list:
    """(position, how, slot) for each traced output that is ("same"), views ("view") or shares the
    storage of ("alias", as detach does) an argument or a captured tensor at `slot`, or that is
    the output at an earlier position (("repeat", that position)). Captured
    tensors the function made itself (`fresh` slots) are new on every call, so nothing links to them."""
    slots = {}
    for kind, candidates in (("input", tensors), ("captured", captured)):
        for slot, candidate in enumerate(candidates):
            if kind == "input" or slot not in fresh:
                slots.setdefault(id(candidate), (kind, slot))
    by_array = {id(_tensor_at(slot, tensors, captured)._data): slot for slot in slots.values()}
    links = []
    first_at: dict = {}
    for position, out in enumerate(outputs):
        earlier = first_at.setdefault(id(out), position)
        if earlier != position:  # ``return y, y``: one tensor, twice
            links.append((position, "repeat", earlier))
            continue
        same = slots.get(id(out))
        if same is not None:
            links.append((position, "same", same))
            continue
        base = slots.get(id(out._base)) if out._base is not None else None
        if base is not None:
            links.append((position, "view", base))
        elif id(out._data) in by_array:
            links.append((position, "alias", by_array[id(out._data)]))
    return links


def _tensor_at(slot: tuple, tensors: list, captured: list) -> Tensor:
    kind, index = slot
    return tensors[index] if kind == "input" else captured[index]


def link_outputs(results: list, links: list, tensors: list, captured: list) -> None:
    """Make each linked result the argument itself, or share its version counter (and base)."""
    for position, how, slot in links:
        if how == "repeat":
            results[position] = results[slot]
            continue
        source = _tensor_at(slot, tensors, captured)
        if how == "same":
            results[position] = source
            continue
        out = results[position]
        out._version_counter = source._version_counter
        if how == "view":
            out._base = source._base if source._base is not None else source
            out._base_node = out._base._grad_fn


def _root(array: Any) -> Any:
    """The array that owns `array`'s memory (NumPy's chain of ``.base``)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def watch_saved_outputs(state: Any, results: list, saved: tuple) -> None:
    """Add to the region's version check each output sharing memory with a saved array."""
    saved_roots = {id(_root(array)) for array in saved if array is not None}
    for out in results:
        if id(_root(out._data)) in saved_roots:
            state.saved_tensors.append(out)
            state.versions.append(out._version_counter[0])
