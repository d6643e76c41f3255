"""The op contract: a `Function` runs forward on arrays and records a `Node` that knows its backward.

Every differentiable op in numdiff, built-in or user-defined, is a `Function` subclass with two
static methods side by side::

    forward(ctx, *inputs, **attrs) -> array       # built-ins receive arrays, user Functions Tensors
    backward(ctx, grad) -> tuple[Tensor | None, ...]  # one entry per tensor input

`backward` is written with numdiff ops, so with ``create_graph=True`` the backward pass is itself
recorded and can be differentiated again. The node (`ctx`) keeps only what `backward` asked for:
tensors through `save_for_backward`, sizes and flags as plain attributes.
"""

from __future__ import annotations

import functools
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from numdiff import _profiling
from numdiff._dtype import BFLOAT16_STORAGE
from numdiff.autograd import anomaly, custom_function, graph
from numdiff.autograd.custom_function import once_differentiable as once_differentiable  # PyTorch's path
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.hooks import RemovableHandle, check_callable, tuple_prehook, with_post_hooks
from numdiff.autograd.saved_tensor import SavedTensor
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.autograd.views import StaleViewError as StaleViewError
from numdiff.autograd.views import check_view_is_current
from numdiff.backend import is_host, like_host

if TYPE_CHECKING:
    from numdiff.tensor import Tensor
else:
    # Bound by numdiff.tensor once the class exists (the two modules refer to each other).
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

    def __init__(self, function: type[Function], inputs: tuple[Tensor, ...], attrs: dict | None = None) -> None:
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


class Function:
    """Base class of every differentiable op; subclass it to define your own.

    >>> class Cube(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * 3 * x * x
    >>> x = numdiff.tensor([2.0], requires_grad=True)
    >>> Cube.apply(x).backward(numdiff.ones(1)); x.grad
    tensor([12.])
    """

    # Built-in ops compute on arrays; user Functions, like PyTorch's, receive Tensors.
    array_forward = False
    # An op whose first-order backward adds its gradient into part of its one input's gradient
    # sets this to backward_into(ctx, grad, buffer) -> buffer (numdiff.autograd._grad_buffers).
    backward_into = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = type(self).__name__
        raise TypeError(
            f"{name}() instances are not called: a Function is applied with {name}.apply(...) "
            "(forward and backward are static methods; PyTorch removed the legacy instance call)"
        )

    @staticmethod
    def forward(ctx: Node, *inputs: Any, **attrs: Any) -> Any:
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: Node, *grads: Any) -> Any:
        raise NotImplementedError("a Function subclass must define backward(ctx, grad)")

    @classmethod
    def apply(cls, *inputs: Any, **attrs: Any) -> Tensor:
        """Run the op: through the innermost interpreter of this thread (numdiff.func.vmap's
        batching, numdiff.compile's tracing; numdiff.autograd.transform_state), else eagerly."""
        recorder = _profiling.recorder
        if recorder is not None and recorder.enter_op(cls, inputs):
            try:
                result = cls.apply(*inputs, **attrs)  # the op itself, timed (enter_op lets it through)
            except BaseException:
                recorder.exit_op(None)
                raise
            return recorder.exit_op(result)
        if anywhere.levels:
            top = transforms.interpreter
            if top is not None:
                return top.apply(cls, inputs, attrs)
        if not cls.array_forward:
            return _apply_tensor_forward(cls, inputs, attrs)
        # The hot path of every built-in op: one pass over the inputs collects their arrays and, for
        # the node, their shapes and the nodes their gradients flow to (Node.__init__, written out:
        # no second pass, no class call); no generator expressions, no late imports. Array forwards
        # never touch grad mode, so it is not switched for them.
        args = []
        if not _state.enabled:  # no_grad: the arrays only (views are not checked: nothing records)
            for t in inputs:
                args.append(t._data if isinstance(t, Tensor) else t)
            try:
                out = cls.forward(_Unrecorded(), *args, **attrs)
            except Exception as error:
                return _retry_narrow_float(cls, args, inputs, attrs, error)
            return Tensor._wrap(out if is_host(out) else _as_array(out), None, None)
        shapes = []
        next_nodes = []
        needs = []  # needs_input_grad, built here: a comprehension would cost a call per op
        record = False
        for t in inputs:
            if isinstance(t, Tensor):
                if t._base is not None:
                    check_view_is_current(t, cls.op_name)  # may give the view its base's new history
                data = t._data
                args.append(data)
                shapes.append(data.shape)
                next_node = t._grad_fn
                if next_node is None and t._requires_grad:
                    # A leaf's AccumulateGrad, usually already made (weakly held by the leaf).
                    ref = t._grad_accumulator
                    next_node = ref() if ref is not None else None
                    if next_node is None:
                        next_node = leaf_accumulator(t)
                if next_node is not None:
                    record = True
                    needs.append(True)
                else:
                    needs.append(False)
                next_nodes.append(next_node)
            else:
                args.append(t)
                shapes.append(None)
                next_nodes.append(None)
                needs.append(False)
        if not record:
            try:
                out = cls.forward(_Unrecorded(), *args, **attrs)
            except Exception as error:
                return _retry_narrow_float(cls, args, inputs, attrs, error)
            return Tensor._wrap(out if is_host(out) else _as_array(out), None, None)
        node = _new_node(Node)
        node.function = cls
        node.attrs = attrs
        node.next_nodes = next_nodes
        node.input_shapes = shapes
        node.needs_input_grad = tuple(needs)
        node._saved = ()
        node._saved_versions = ()
        node._freed = False
        if anomaly._state.enabled:
            node.creation_site = anomaly.creation_site()
        try:
            out = cls.forward(node, *args, **attrs)
        except Exception as error:
            return _retry_narrow_float(cls, args, inputs, attrs, error)
        out_array = out if is_host(out) else _as_array(out)
        if out_array.dtype.kind not in "fV":  # V: bfloat16's bit pattern storage
            return Tensor._wrap(out_array, None, None)  # integer and bool results carry no gradient
        result = Tensor._wrap(out_array, node, None)
        if node._saved:
            _bind_saved(node, args, inputs, out, result)
        return result


_new_node = object.__new__


def _retry_narrow_float(cls: type[Function], args: list, inputs: tuple, attrs: dict, error: Exception) -> Tensor:
    """An op's forward raised `error` (while being handled): run it in float32 when its operands
    are of a half type it has no kernel for (`_apply_in_float32`), else re-raise `error`."""
    narrow = _narrow_float_without_kernel(args, error)
    if narrow is None:
        raise error
    return _apply_in_float32(cls, inputs, attrs, narrow)


def _narrow_float_without_kernel(args: list, error: Exception) -> Any:
    """The dtype to compute in float32 for, when an op failed on bfloat16 operands (NumPy has no
    bfloat16 arithmetic) or on float16 ones that its kernel refuses (its message names float16)."""
    for a in args:
        kind = getattr(a, "dtype", None)
        if kind == BFLOAT16_STORAGE:
            return kind
    if isinstance(error, TypeError) and "float16" in str(error):
        for a in args:
            if getattr(a, "dtype", None) == np.float16:
                return a.dtype
    return None


def _apply_in_float32(cls: type[Function], inputs: tuple, attrs: dict, narrow: np.dtype) -> Tensor:
    """A built-in op on bfloat16 (or kernel-less float16) tensors: their values widened exactly to
    float32, the op run, and a float32 result rounded once back when every floating input was of
    that dtype, as PyTorch's CPU kernels compute half types in float. Gradients flow through both
    casts. Ops that only move bits (views, indexing, cat) never get here."""
    floating = [t for t in inputs if isinstance(t, Tensor) and t._data.dtype.kind in "fV"]
    widened = [t.float() if isinstance(t, Tensor) and t._data.dtype == narrow else t for t in inputs]
    out = cls.apply(*widened, **attrs)
    if out._data.dtype == np.float32 and all(t._data.dtype == narrow for t in floating):
        return out.to(floating[0].dtype)
    return out


def _apply_tensor_forward(cls: type[Function], inputs: tuple, attrs: dict) -> Any:
    """apply for user Functions: forward gets Tensors and runs with grad mode off."""
    return custom_function.apply_custom(cls, inputs, attrs)


class _Unrecorded:
    """ctx for a forward that records nothing: saves are dropped, attributes are accepted."""

    needs_input_grad = ()

    def save_for_backward(self, *items: Any) -> None:
        pass

    def mark_non_differentiable(self, *outputs: Any) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        pass


def _as_array(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out._data
    if isinstance(out, np.generic):
        # NumPy reductions to 0-d return scalars, which lack ndarray's API (and flags, copy()).
        return np.asarray(out)
    return out


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
