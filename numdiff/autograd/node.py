"""The recorded graph's nodes: `Node` (an op's `grad_fn` and its Function's `ctx`), `AccumulateGrad`
(a leaf's terminal node), and what a node keeps for backward: its saved values bound to the inputs
and output they came from (`_bind_saved`), packed by saved_tensors_hooks (`pack_saved`), and the
errors raised when they were freed or modified. numdiff.autograd.function records nodes; the engine
(numdiff.autograd.engine) walks them.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import numpy as np

from numdiff.autograd import anomaly, graph
from numdiff.autograd.hooks import RemovableHandle, check_callable, tuple_prehook, with_post_hooks
from numdiff.autograd.saved_tensor import SavedTensor
from numdiff.backend import is_host, like_host

# Bound by numdiff.tensor once the class exists. This module imports neither numdiff.tensor nor
# numdiff.autograd.function (not even for annotations), so it stays out of their import cycle.
Tensor = None


class SavedTensorFreedError(RuntimeError):
    """Backward ran twice through a graph whose saved tensors were already released."""


class SavedTensorModifiedError(RuntimeError):
    """A tensor saved for backward was changed in place before backward used it."""


class InPlaceOnLeafError(RuntimeError):
    """An in-place op would modify a leaf that requires grad while recording."""


class _SavedOutput:
    """The op's own output saved for backward, held without a reference back to the Tensor.

    Holding the output Tensor itself would make a cycle (output -> node -> output) that only the
    garbage collector can break; the array and the version counter are enough to rebuild it.
    """

    __slots__ = ("data", "version_counter")

    def __init__(self, data: Any, version_counter: list[int]) -> None:
        self.data = data
        self.version_counter = version_counter


class Node:
    """A recorded op: the `grad_fn` of the tensor it produced, and the `ctx` of its Function.

    `next_nodes` holds, per input, the node that gradient flows to next: the input's own
    `grad_fn`, an `AccumulateGrad` for a leaf that requires grad, or None (`next_functions`
    shows the same in PyTorch's ``(node, 0)`` layout). `op_name` and `attrs` (the keyword
    attributes forward got) say how to run the op again: ``OPS[node.op_name].forward(ctx,
    *arrays, **node.attrs)``.
    """

    __slots__ = (
        "function",
        "attrs",
        "next_nodes",
        "input_shapes",
        "_saved",
        "_saved_versions",
        "_freed",
        "needs_input_grad",  # per input, whether backward must compute its gradient
        "__dict__",
        "__weakref__",
    )
    materialize_grads = True
    # Set by a user Function's forward through mark_dirty / mark_non_differentiable.
    _dirty = ()
    _non_differentiable = ()
    # Rarely set, so class defaults (a write lands in the instance's __dict__) instead of slots that
    # every recorded op would have to fill: tensor hooks of the output, retain_grad's weak reference
    # to the output, and the forward's stack under detect_anomaly.
    _pre_hooks = None
    _retained = None
    creation_site = None

    def __init__(self, function: type, inputs: tuple[Tensor, ...], attrs: dict | None = None) -> None:
        self.function = function
        self.attrs = attrs if attrs is not None else {}
        next_nodes = []
        shapes = []
        for t in inputs:
            if isinstance(t, Tensor):
                shapes.append(t._data.shape)
                next_node = t._grad_fn
                if next_node is None and t._requires_grad:
                    # A leaf's AccumulateGrad, usually already made (weakly held by the leaf).
                    ref = t._grad_accumulator
                    next_node = ref() if ref is not None else None
                    if next_node is None:
                        next_node = leaf_accumulator(t)
                next_nodes.append(next_node)
            else:
                shapes.append(None)
                next_nodes.append(None)
        self.next_nodes = next_nodes
        self.input_shapes = shapes
        self.needs_input_grad = tuple([n is not None for n in next_nodes])
        self._saved = ()
        self._saved_versions = ()
        self._freed = False
        if anomaly._state.enabled:
            self.creation_site = anomaly.creation_site()

    @property
    def next_functions(self) -> tuple:
        """Per input, ``(node, 0)``: where its gradient goes next (PyTorch's layout)."""
        return tuple((n, 0) for n in self.next_nodes)

    def name(self) -> str:
        return self.function.__name__ + "Backward"

    @property
    def op_name(self) -> str | None:
        """The registered name of the op (``numdiff.ops.OPS``), None for a user Function."""
        return getattr(self.function, "op_name", None)

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    # ctx API used inside forward/backward
    def save_for_backward(self, *items: Any) -> None:
        """Keep inputs, the output, or helper arrays for backward; read back as `saved_tensors`
        (None keeps a slot empty)."""
        self._saved = items

    @property
    def saved_tensors(self) -> tuple[Tensor, ...]:
        if self._freed:
            raise self._freed_error()
        if len(self._saved) != len(self._saved_versions):
            raise RuntimeError(
                f"{self.name()[: -len('Backward')]}.forward read ctx.saved_tensors: they can be read "
                "in backward only (forward is still running); in forward use the tensors themselves"
            )
        result = []
        for item, version in zip(self._saved, self._saved_versions):
            if type(item) is graph.PackedSaved:
                result.append(_unpacked(self, item))
                continue
            if type(item) is _SavedOutput:
                counter = item.version_counter
                tensor = Tensor._wrap(item.data, self, counter)
            elif type(item) is _SavedNumber:
                result.append(Tensor._wrap(item.array(), None, None))
                continue
            elif item is None:  # a slot the forward left empty (not needed for this backward)
                result.append(None)
                continue
            else:
                tensor = item
                counter = item._version_counter
            if version is not None and counter[0] != version:
                raise self._modified_error(tensor._data.shape, version, counter[0])
            result.append(tensor)
        return tuple(result)

    def saved_arrays(self) -> list:
        """The arrays of `saved_tensors`, checked the same way, without making a Tensor of each:
        for a backward formula that computes on arrays (the elementwise kernels)."""
        if self._freed:
            raise self._freed_error()
        result = []
        for item, version in zip(self._saved, self._saved_versions):
            if version is None:  # an empty slot, a number or a constant: nothing changes under it
                if item is None:
                    result.append(None)
                elif type(item) is _SavedNumber:
                    result.append(item.array())
                elif type(item) is graph.PackedSaved:
                    result.append(_unpacked(self, item)._data)
                else:
                    result.append(item._data)
                continue
            if type(item) is _SavedOutput:
                counter = item.version_counter
                array = item.data
            elif type(item) is graph.PackedSaved:
                result.append(_unpacked(self, item)._data)
                continue
            else:
                counter = item._version_counter
                array = item._data
            if counter[0] != version:
                raise self._modified_error(array.shape, version, counter[0])
            result.append(array)
        return result

    def __getattr__(self, name: str) -> Any:
        # PyTorch's grad_fn shows what it saved as _saved_self, _saved_other, _saved_result, ...
        # (the tensors), _saved_<attr> (the op's other arguments) and _raw_saved_<name> (the
        # SavedTensor objects that take hooks); a user Function's node as _raw_saved_tensors.
        if name.startswith("_saved_"):
            field = name[len("_saved_"):]
            names = _saved_slot_names(self)
            if field in names:
                return self.saved_tensors[names.index(field)]
            if field in self.attrs:
                return self.attrs[field]
        elif name.startswith("_raw_saved_"):
            field = name[len("_raw_saved_"):]
            names = _saved_slot_names(self)
            if field == "tensors" and self.op_name is None:
                return tuple(SavedTensor(self, index, slot) for index, slot in enumerate(names))
            if field in names:
                return SavedTensor(self, names.index(field), field)
        raise AttributeError(f"'{type(self).__name__}' object ({self.name()}) has no attribute '{name}'")

    def __dir__(self) -> list[str]:
        saved = [] if self._freed else [slot for slot in _saved_slot_names(self) if slot]
        raw = [*saved, "tensors"] if self.op_name is None else saved
        extra = [f"_saved_{slot}" for slot in [*saved, *map(str, self.attrs)] if slot.isidentifier()]
        return sorted({*super().__dir__(), *extra, *(f"_raw_saved_{slot}" for slot in raw)})

    def _freed_error(self) -> SavedTensorFreedError:
        return SavedTensorFreedError(
            f"Trying to backward through {self.name()} a second time: its saved values were "
            "freed after the first backward. Pass retain_graph=True to the first backward() "
            "(or autograd.grad) if you need to backward through the graph again."
        )

    def _modified_error(self, shape: tuple, version: int, now: int) -> SavedTensorModifiedError:
        return SavedTensorModifiedError(
            f"A tensor of shape {tuple(shape)} saved by {self.name()} for backward "
            f"was modified in place: it was saved at version {version} and is now at "
            f"version {now}. Use an out-of-place op (e.g. x = x + 1 instead of "
            "x += 1), or clone() the tensor before modifying it."
        )

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """These outputs of forward get no gradient (integer and bool outputs never do)."""
        self.__dict__["_non_differentiable"] = outputs

    def mark_dirty(self, *tensors: Any) -> None:
        """forward modified these inputs in place (and returns them): they take this node's history."""
        self.__dict__["_dirty"] = tensors

    def save_for_forward(self, *items: Any) -> None:
        """Keep values for the Function's jvp (read back as `saved_tensors` there too)."""
        self.__dict__["saved_for_forward"] = items

    def set_materialize_grads(self, value: bool) -> None:
        self.__dict__["materialize_grads"] = value

    def register_prehook(self, hook: Any) -> Any:
        """Call ``hook(grad_outputs)`` (a tuple) before this node's backward; a returned tuple
        replaces the gradients, as PyTorch's Node.register_prehook."""
        check_callable("register_prehook", hook)
        return self._register_gradient_hook(functools.partial(tuple_prehook, hook))

    def register_hook(self, hook: Any) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward; a returned tuple
        replaces the input gradients, as PyTorch's Node.register_hook."""
        check_callable("register_hook", hook)
        hooks = self.__dict__.get("_post_hooks")
        if hooks is None:
            hooks = self.__dict__["_post_hooks"] = {}
            self.function = with_post_hooks(self.function)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def _register_gradient_hook(self, hook: Any) -> Any:
        """A tensor hook of this node's output: ``hook(grad)`` may return a replacement tensor."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = hook
        return handle


class AccumulateGrad:
    """The terminal node of a leaf that requires grad: backward adds into `leaf.grad`."""

    __slots__ = ("variable", "__weakref__")
    next_nodes = ()
    next_functions = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


def _bind_saved(node: Node, args: list, inputs: tuple, out: Any, result: Tensor) -> None:
    """Turn what forward saved into what backward can unpack, remembering tensor versions.

    Saved inputs map back to the input Tensors (so double backward stays connected to the graph),
    the output to a `_SavedOutput`, Python numbers to a `_SavedNumber` (made a tensor only if
    backward runs) and any other array to a constant tensor.
    """
    saved = []
    versions = []
    result_data = result._data
    for item in node._saved:
        if item is None:
            saved.append(None)
            versions.append(None)
        elif item is out or item is result_data or (isinstance(item, Tensor) and item._data is result_data):
            saved.append(_SavedOutput(result_data, result._version_counter))
            versions.append(0)  # the result was made just now
        else:
            for index, arg in enumerate(args):
                if item is arg:
                    item = inputs[index]
                    break
            if isinstance(item, Tensor):
                saved.append(item)
                versions.append(item._version_counter[0])
            elif isinstance(item, (int, float)):
                saved.append(_SavedNumber(item, result_data))
                versions.append(None)
            else:
                saved.append(Tensor._wrap(item, None, None))
                versions.append(None)
    node._saved = saved
    node._saved_versions = versions
    if graph.pairs_anywhere and graph.active_pair() is not None:
        pack_saved(node)


def _saved_slot_names(node: Node) -> list[str | None]:
    """The PyTorch name of each slot `node` saved (see graph.slot_names)."""
    if any(type(item) is graph.PackedSaved for item in node._saved):
        return [item.name if type(item) is graph.PackedSaved else None for item in node._saved]
    tensors = [
        "result" if type(item) is _SavedOutput else item if isinstance(item, Tensor) else None for item in node._saved
    ]
    return graph.slot_names(node.next_nodes, [None if s is None else tuple(s) for s in node.input_shapes], tensors)


def pack_saved(node: Node) -> None:
    """Store each tensor `node` saved as the innermost pack hook's object (saved_tensors_hooks)."""
    pack_hook, unpack_hook = graph.active_pair()
    names = _saved_slot_names(node)
    packed = []
    for item, name in zip(node._saved, names):
        if type(item) is _SavedOutput:
            item = Tensor._wrap(item.data, node, item.version_counter)
        packed.append(graph.PackedSaved(pack_hook(item), unpack_hook, name) if isinstance(item, Tensor) else item)
    node._saved = packed


def _unpacked(node: Node, item: graph.PackedSaved) -> Tensor:
    tensor = item.unpack_hook(item.packed)
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"the unpack hook of saved_tensors_hooks returned a {type(tensor).__name__} for a tensor "
            f"{node.name()} saved; it must return a tensor"
        )
    return tensor


class _SavedNumber:
    """A Python number operand saved for backward, as a constant in the result's dtype."""

    __slots__ = ("value", "dtype", "device_like")

    def __init__(self, value: float, like: Any) -> None:
        self.value = value
        # float16 would round the number first (1e5 to inf): the backward rounds its result instead.
        self.dtype = like.dtype if like.dtype != np.float16 else np.dtype(np.float32)
        # On a GPU the constant is made on the result's device (numdiff.cuda's array type).
        self.device_like = None if is_host(like) else like

    def array(self) -> Any:
        array = np.asarray(self.value, dtype=self.dtype)
        return array if self.device_like is None else like_host(array, self.device_like)


def leaf_accumulator(tensor: Tensor) -> AccumulateGrad:
    """The (cached, weakly held) AccumulateGrad node of a leaf."""
    ref = tensor._grad_accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        tensor._grad_accumulator = weakref.ref(node)
    return node
