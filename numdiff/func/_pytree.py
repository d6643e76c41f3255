"""Nested tuples, lists and dicts of tensors flattened to a list of leaves and rebuilt."""

from __future__ import annotations

from typing import Any


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """(leaves, spec): leaves in order; `spec` rebuilds the structure with `tree_unflatten`."""
    if isinstance(tree, (tuple, list)):
        leaves: list = []
        specs = []
        for item in tree:
            sub_leaves, sub_spec = tree_flatten(item)
            leaves.extend(sub_leaves)
            specs.append((len(sub_leaves), sub_spec))
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, spec = tree_flatten(list(tree.values()))
        return leaves, (dict, list(tree.keys()), spec)
    return [tree], None


def tree_unflatten(leaves: list, spec: Any) -> Any:
    if spec is None:
        return leaves[0]
    kind, keys, specs = spec
    if kind is dict:
        return dict(zip(keys, tree_unflatten(leaves, specs)))
    items = []
    start = 0
    for count, sub_spec in specs:
        items.append(tree_unflatten(leaves[start : start + count], sub_spec))
        start += count
    return tuple(items) if kind is tuple else list(items)


def tree_map(fn: Any, tree: Any) -> Any:
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)
