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

from typing import TYPE_CHECKING, Any

import numpy as np

from numdiff import _profiling
from numdiff._dtype import BFLOAT16_STORAGE
from numdiff.autograd import anomaly, custom_function
from numdiff.autograd._function_contract import once_differentiable as once_differentiable  # PyTorch's path
from numdiff.autograd.grad_mode import _state
from numdiff.autograd.node import AccumulateGrad as AccumulateGrad
from numdiff.autograd.node import InPlaceOnLeafError as InPlaceOnLeafError
from numdiff.autograd.node import Node as Node
from numdiff.autograd.node import SavedTensorFreedError as SavedTensorFreedError
from numdiff.autograd.node import SavedTensorModifiedError as SavedTensorModifiedError
from numdiff.autograd.node import _bind_saved, leaf_accumulator
from numdiff.autograd.transform_state import anywhere, transforms
from numdiff.autograd.views import StaleViewError as StaleViewError
from numdiff.autograd.views import check_view_is_current
from numdiff.backend import is_host

if TYPE_CHECKING:
    from numdiff.tensor import Tensor
else:
    # Bound by numdiff.tensor once the class exists (the two modules refer to each other).
    Tensor = None


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
