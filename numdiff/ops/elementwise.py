"""The elementwise ops, generated from the scalar rules (numdiff/_ground/scalar_rules.py).

For each `ScalarRule` this module makes and registers a `Function` (``FUNCTIONS["exp"]``, class
``Exp``) and a public function (``PUBLIC["exp"]``, exported as ``numdiff.exp`` and, where the rule
says so, the Tensor method ``x.exp()``). ops/unary.py, arithmetic.py and activation.py add the
hand-written argument handling some ops need (``alpha``, ``rounding_mode``, ``inplace``).

Forward: on CUDA, float inputs run the rule's generated ``@cuda.jit`` kernel. On the CPU a rule
with a NumPy ufunc runs it (faster there at every size measured, see `UFUNC_FORWARD`), the others
(relu, sigmoid, gelu, ...) their generated ``@njit`` loop. Integer and bool inputs of ops that keep
them always run the ufunc, with NumPy's dtype promotion.

Backward: without ``create_graph`` one generated kernel writes every needed input gradient in
one pass (numdiff/kernels/elementwise.py says where the CPU evaluates the same expression with
NumPy instead). With ``create_graph`` the vjp expressions are evaluated on Tensors (``math.exp``
is the exp op, ``where`` is numdiff.where), so the backward is recorded and differentiable again;
a rule's ``tensor_vjps`` replace them where one op (``tanh_backward``) does the work of several.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numdiff._ground.scalar_expressions import MATH_RULES, ScalarRule, names_in, vjp_expression
from numdiff._ground.scalar_rules import RULES
from numdiff._lazy import lazy_module
from numdiff.autograd.function import Function
from numdiff.autograd.grad_mode import _state
from numdiff.backend import backend_for, is_host
from numdiff.ops import _elementwise_eager as elementwise_eager
from numdiff.ops._ufunc_split import threaded_ufunc
from numdiff.ops._util import as_default_float, data_of, float_operand, operands
from numdiff.ops.registry import register
from numdiff.ops.selection import where
from numdiff.overrides import ForeignOperandError, dispatch, honours_protocol, is_overridable
from numdiff.tensor import Tensor

cpu = lazy_module("numdiff.kernels.elementwise")
cpu_small = lazy_module("numdiff.kernels._elementwise_small")
cpu_contiguous = lazy_module("numdiff.kernels._elementwise_contiguous")

FUNCTIONS: dict[str, type[Function]] = {}
PUBLIC: dict[str, Callable[..., Tensor]] = {}

# On the CPU, a rule with a NumPy ufunc computes its forward with it: measured on float32, one
# thread, the ufunc beat the generated loop for every such rule, by 4x at 16 elements (0.24 against
# 1.0 us: less Python around the call) and by 1.1-1.5x at 32768 for the arithmetic ones (SIMD),
# and for the single-function transcendental ones (see numdiff/kernels/elementwise.py).
UFUNC_FORWARD = frozenset(name for name, rule in RULES.items() if rule.ufunc)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_F32, _F64 = _FLOATS
_ndarray = np.ndarray
_HALF = np.dtype(np.float16)


def _all_half(arrays: Any) -> bool:
    """Whether every array among `arrays` is a float16 NumPy array (the kernels take float32/64)."""
    return all(not is_host(a) or a.dtype == _HALF for a in arrays if not isinstance(a, (int, float)))


def _widened(values: Any) -> list:
    """float16 arrays as float32, everything else as it is: float16 computes per element in float32
    and rounds once, as PyTorch's CPU build does (so x / 1e5 is not x / inf, NumPy's rounding of the
    number to float16)."""
    return [v.astype(np.float32) if is_host(v) and v.dtype == _HALF else v for v in values]


def _kernel_dtype(arrays: list) -> np.dtype | None:
    """The float dtype all array operands share, or None (then the NumPy ufunc computes)."""
    dtype = arrays[0].dtype
    if dtype not in _FLOATS:
        return None
    for array in arrays[1:]:
        if array.dtype != dtype:
            return None
    return dtype


def _forward_array(rule: ScalarRule, ufunc: Any, inputs: tuple, attrs: tuple) -> Any:
    arrays = [v for v in inputs if not isinstance(v, (int, float))]
    first = arrays[0]
    dtype = _kernel_dtype(arrays)
    on_cpu = is_host(first)
    if dtype is None or (on_cpu and ufunc is not None and rule.name in UFUNC_FORWARD):
        if ufunc is None and on_cpu and first.dtype == _HALF and _all_half(arrays):
            return _forward_array(rule, ufunc, tuple(_widened(inputs)), attrs).astype(np.float16)
        if ufunc is None:
            raise TypeError(f"{rule.name}: expected floating point arrays, got {[str(a.dtype) for a in arrays]}")
        return ufunc(*inputs)
    shape = first.shape
    if len(arrays) == 2 and arrays[1].shape != shape:
        shape = np.broadcast_shapes(shape, arrays[1].shape)
    return backend_for(first).rule_forward(rule, inputs, attrs, shape, dtype, first)


class _TensorMath:
    """``math`` inside a vjp expression evaluated on Tensors: each function is its rule's op."""

    def __getattr__(self, name: str) -> Callable[..., Tensor]:
        return PUBLIC[MATH_RULES.get(name, name)]


def _tensor_where(condition: Tensor, a: Any, b: Any) -> Tensor:
    return where(condition, a, b)


def _tensor_vjp_functions(rule: ScalarRule, expressions: list[str]) -> list[Callable[..., Tensor]]:
    """Each vjp expression evaluated on Tensors as a function of ``(g, *rule.saved, *attrs)``: a
    call per create_graph backward, where building a scope dict and eval-ing the expression in it
    took 3.6 of tanh's 7.7 us (8x6 float32, thread CPU time, load 14)."""
    parameters = ", ".join(["g", *rule.saved, *rule.attr_names])
    scope = {"math": _TensorMath(), "where": _tensor_where}
    return [
        eval(compile(f"lambda {parameters}: {vjp}", f"<vjp of {rule.name}>", "eval"), scope)
        for vjp in expressions
    ]


def _sign(x: Any) -> Any:
    """np.sign with PyTorch's 0 where x is NaN (NumPy's sign keeps the NaN)."""
    out = np.sign(x)
    if out.dtype.kind in "iub" or not is_host(x):  # a device's float sign runs the rule's kernel
        return out
    nan = np.isnan(out)
    return np.where(nan, out.dtype.type(0), out) if nan.any() else out


# Rows whose NumPy ufunc differs from PyTorch at some values: the ufunc with PyTorch's answer there.
_TORCH_UFUNCS = {"sign": _sign}


def host_ufunc(rule: ScalarRule) -> Callable[..., Any]:
    """The NumPy function computing `rule`'s forward on host arrays: its ufunc, or PyTorch's variant."""
    return _TORCH_UFUNCS.get(rule.name) or getattr(np, rule.ufunc)


def _host_forward(rule: ScalarRule) -> Callable[..., Any] | None:
    """The rule's NumPy ufunc, with PyTorch's result for a bool input where it differs
    (``rule.bool_result``), or None."""
    if not rule.ufunc:
        return None
    ufunc = threaded_ufunc(rule, host_ufunc(rule))  # large float operands: on every thread
    if rule.bool_result == "itself":
        return lambda x: x.copy() if x.dtype == np.bool_ else ufunc(x)
    if rule.bool_result == "int64":
        return lambda x: ufunc(x.astype(np.int64) if x.dtype == np.bool_ else x)
    return ufunc


def _make_function(rule: ScalarRule) -> type[Function]:
    ufunc = _host_forward(rule)
    attr_names = rule.attr_names
    saved = rule.saved
    saved_inputs = [rule.inputs.index(name) for name in saved if name != "out"]
    saves_out = "out" in saved
    # The vjp expressions, their names and their compiled tensor forms are derived on the op's first
    # backward (or first save), not here: seventy rules' worth of ast work at `import numdiff`.
    vjps: list[str] = []
    vjp_code: list[Any] = []

    def derive_vjps() -> list[str]:
        if not vjps:
            vjps[:] = [vjp_expression(rule, i, "g") for i in range(rule.arity)]  # one step: threads may race here
        return vjps

    def tensor_vjps() -> list[str]:
        """The vjps as create_graph records them: the rule's own tensor form where it gives one."""
        own = rule.tensor_vjps or ("",) * rule.arity
        return [mine or derived for mine, derived in zip(own, derive_vjps())]

    kernel_first = rule.name not in UFUNC_FORWARD or ufunc is None
    splits: dict[tuple[bool, ...], tuple] = {}  # needs_input_grad -> (passed, needed, small_backward, SMALL)
    # needs_input_grad -> save_plan. x * 2 keeps no x: only the gradient of the 2 would read it,
    # and x / 2 keeps no output. Saving them anyway held them alive and made an in-place change
    # after the op (x / t then fill_diagonal_) fail backward with SavedTensorModifiedError, unlike PyTorch.
    keeps: dict[tuple[bool, ...], tuple[int | None, ...]] = {}
    arity = rule.arity

    def save_plan(needs: tuple[bool, ...]) -> tuple[int | None, ...]:
        """Per name in rule.saved, what the node keeps for these needs: an input's index, -1 for the
        output, or None where no needed derivative reads it (ops/_elementwise_eager.py reads it too)."""
        plan = keeps.get(needs)
        if plan is None:
            vjp_names = [names_in(expression) for expression in derive_vjps()]
            read = set().union(*(vjp_names[i] for i, need in enumerate(needs) if need)) if len(needs) == rule.arity else None
            plan = tuple(i if read is None or saved[k] in read else None for k, i in enumerate(saved_inputs))
            if saves_out:  # x / 2 keeps no output either: only the 2's gradient reads it
                plan += (-1 if read is None or "out" in read else None,)
            keeps[needs] = plan
        return plan

    def _saved_items(ctx, inputs: tuple, out: Any) -> list:
        return [None if i is None else out if i == -1 else inputs[i] for i in save_plan(ctx.needs_input_grad)]

    def forward(ctx, *inputs, **attrs):
        x = inputs[0]
        if ufunc is not None and (is_host(x) or is_host(inputs[-1])):
            # On the CPU the ufunc wins wherever there is one (UFUNC_FORWARD): no more Python than that.
            out = ufunc(*inputs)
            if out.dtype.char == "e":  # float16: in float32, rounded once (NumPy rounds a number to float16 first)
                out = ufunc(*_widened(inputs)).astype(np.float16)
            if saved:
                ctx.save_for_backward(*_saved_items(ctx, inputs, out))
            return out
        values = tuple([attrs[name] for name in attr_names]) if attr_names else ()
        if kernel_first and len(inputs) == 1 and is_host(x) and x.dtype.char in "fd" and x.flags.c_contiguous:
            # The common eager case (relu on a contiguous activation) with the least Python.
            out = cpu.forward_contiguous(rule, x, values)
        else:
            out = _forward_array(rule, ufunc, inputs, values)
        if saved:
            ctx.save_for_backward(*_saved_items(ctx, inputs, out))
        return out

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        if _state.enabled:  # create_graph: the tensor form, recorded for higher derivatives
            if not vjp_code:
                vjp_code[:] = _tensor_vjp_functions(rule, tensor_vjps())  # one step: threads may race here
            values = ctx.saved_tensors if saved else ()
            if attr_names:
                values = (*values, *[ctx.attrs[n] for n in attr_names])
            gradients = [vjp_code[i](grad, *values) if needs[i] else None for i in range(rule.arity)]
            return tuple([g if g is None else _as_gradient(g, grad) for g in gradients])
        split = splits.get(needs)
        if split is None:
            passed, needed = _backward_split(derive_vjps(), needs)
            small = cpu_small.small_backward(rule, needed) if needed else None
            contiguous = cpu_contiguous.contiguous_backward(rule, needed) if needed else None
            split = splits[needs] = (passed, needed, small, contiguous, cpu.SMALL)
        passed, needed, small, contiguous, small_size = split
        gradients: list[Any] = [None] * arity
        for i in passed:
            gradients[i] = grad
        if needed:
            g = grad._data
            results = values = None
            if type(g) is _ndarray and (g.dtype is _F32 or g.dtype is _F64):  # is_host, inlined
                # The eager paths: a tiny host gradient, or operands all C-contiguous in its shape.
                if g.size <= small_size:
                    if attr_names:
                        results = small(g, *ctx.saved_arrays(), *[ctx.attrs[n] for n in attr_names])
                    else:
                        results = small(g, *ctx.saved_arrays())
                elif contiguous is not None and g.flags.c_contiguous:
                    attrs = tuple([ctx.attrs[n] for n in attr_names]) if attr_names else ()
                    results = contiguous(g, values := ctx.saved_arrays(), attrs)
            if results is None:
                arrays = dict(zip(saved, values if values is not None else ctx.saved_arrays())) if saved else {}
                arrays["g"] = g
                attrs = tuple([ctx.attrs[n] for n in attr_names]) if attr_names else ()
                results = backend_for(g).rule_backward(rule, needed, arrays, attrs)
            for i, result in zip(needed, results):
                gradients[i] = Tensor._wrap(result, None, None)
        return tuple(gradients)

    name = "".join(part.capitalize() for part in rule.name.split("_"))
    cls = type(name, (Function,), {
        "__doc__": f"{rule.name}: out = {rule.forward}; d/d{', d/d'.join(rule.inputs)} = {', '.join(rule.derivatives)}.",
        "__module__": __name__,
        "rule": rule,
        "save_plan": staticmethod(save_plan),
        "save_plans": keeps,  # what save_plan has worked out, read directly on the eager path
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
    })  # fmt: skip
    return register(rule.name, compile="fused", launchers=("rule_forward", "rule_backward"))(cls)


def _as_gradient(value: Any, grad: Tensor) -> Tensor:
    # A vjp that folded to a constant (sign's 0) still answers with a tensor in grad's shape.
    return value if isinstance(value, Tensor) else grad * 0.0 + value


def _backward_split(vjps: list[str], needs: tuple[bool, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(inputs whose gradient is the output gradient itself, as add's are; inputs a kernel computes)."""
    passed = tuple(i for i, need in enumerate(needs) if need and vjps[i] == "g")
    computed = tuple(i for i, need in enumerate(needs) if need and vjps[i] != "g")
    return passed, computed


def _float_tensor(op: str, x: Any, dtypes: str) -> Any:
    if type(x) is Tensor and (dtypes == "any" or x._data.dtype.kind in "fV"):  # V: bfloat16, computed in float32
        return x
    if not isinstance(x, Tensor):
        if is_overridable(x):
            raise ForeignOperandError(op, x)
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if dtypes != "any" and x._data.dtype.kind not in "fV":
        if dtypes == "float":
            raise TypeError(f"{op}: expected a floating point tensor, got dtype {x.dtype!r}")
        return as_default_float(x)
    return x


def eager_unary(function: type[Function], general: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`general` (the public function of `function`'s unary rule, without attributes) with the eager
    fast path in front: the rule's ufunc, else its contiguous loop (ops/_elementwise_eager.py)."""
    rule = function.rule
    if rule.ufunc:
        return elementwise_eager.unary(function, host_ufunc(rule), general)
    return elementwise_eager.unary(function, lambda x: cpu.forward_contiguous(rule, x, ()), general, contiguous_only=True)


def _make_public(rule: ScalarRule, function: type[Function]) -> Callable[..., Tensor]:
    defaults = dict(rule.attrs)
    ufunc = host_ufunc(rule) if rule.ufunc else None  # on float arrays (_host_forward's bool cases aside)

    def check_attrs(attrs: dict) -> dict:
        if not attrs and not defaults:
            return attrs
        unknown = set(attrs) - set(defaults)
        if unknown:
            raise TypeError(f"{rule.name}: unexpected keyword arguments {sorted(unknown)}; it takes {sorted(defaults)}")
        merged = {**defaults, **attrs}
        for key, value in merged.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{rule.name}: {key} must be a number, got {type(value).__name__}")
        return {key: float(value) for key, value in merged.items()}

    if rule.dtypes == "integral":  # the roundings: the identity on integers, as PyTorch

        def general(input: Tensor) -> Tensor:
            if isinstance(input, Tensor) and input._data.dtype.kind in "iu":
                return input.clone()
            try:
                return function.apply(_float_tensor(rule.name, input, "float"))
            except ForeignOperandError:
                return dispatch(public, (input,), {})

    elif rule.arity == 1 and not defaults:  # no attrs: no keyword handling on the hot path

        def general(input: Tensor) -> Tensor:
            try:  # free unless raised: a protocol operand (numdiff.overrides) takes the call over
                return function.apply(_float_tensor(rule.name, input, rule.dtypes))
            except ForeignOperandError:
                return dispatch(public, (input,), {})

    elif rule.arity == 1:

        def general(input: Tensor, *values: float, **attrs: float) -> Tensor:
            if values:  # attrs by position too, in the rule's order (polygamma's vjp: math.polygamma(x, order))
                if len(values) > len(defaults):
                    raise TypeError(f"{rule.name}: takes at most {len(defaults)} attributes {list(defaults)}, got {len(values)}")
                attrs = {**dict(zip(defaults, values)), **attrs}
            try:
                return function.apply(_float_tensor(rule.name, input, rule.dtypes), **check_attrs(attrs))
            except ForeignOperandError:
                return dispatch(public, (input,), attrs)

    elif rule.dtypes == "any" and not defaults:

        def general(input: Any, other: Any) -> Tensor:
            try:
                return function.apply(*operands(rule.name, input, other))
            except ForeignOperandError:
                return dispatch(public, (input, other), {})

    else:

        def general(input: Any, other: Any, **attrs: float) -> Tensor:
            try:
                a, b = operands(rule.name, input, other)
            except ForeignOperandError:
                return dispatch(public, (input, other), attrs)
            if rule.dtypes != "any" and np.result_type(data_of(a), data_of(b)).kind != "f":
                if rule.dtypes == "float":
                    raise TypeError(f"{rule.name}: expected floating point operands")
                # Each operand goes to float from its own value, not wrapped into the other's
                # integer dtype by `operands` (xlogy(uint8 tensor, -3) is log(-3.0) = NaN, as
                # PyTorch, not log(253); so is a 0-d int64 -3 tensor).
                a, b = float_operand(input, a), float_operand(other, b)
            return function.apply(a, b, **check_attrs(attrs))

    # The eager fast path in front (ops/_elementwise_eager.py); `dispatch(public, ...)` above hands
    # protocol operands the exported function.
    public = general
    if rule.arity == 1 and not defaults:
        public = eager_unary(function, general)
    elif rule.dtypes == "any" and not defaults and ufunc is not None:
        public = elementwise_eager.binary(function, ufunc, general)
    elif rule.arity == 2 and not defaults and ufunc is None:  # tanh_backward(g, out): the loop on like arrays
        public = elementwise_eager.binary(function, lambda x, y: cpu.forward_pair(rule, x, y), general)
    honours_protocol(public)
    public.__name__ = public.__qualname__ = rule.name
    public.__module__ = __name__
    example = f"numdiff.{rule.name}(numdiff.tensor([0.5, 1.0]){', numdiff.tensor([2.0, 3.0])' if rule.arity == 2 else ''})"
    public.__doc__ = f"{rule.doc or rule.name + ', elementwise.'}\n\n    >>> {example}  # doctest: +SKIP\n"
    return public


for _rule in RULES.values():
    FUNCTIONS[_rule.name] = _make_function(_rule)
    PUBLIC[_rule.name] = _make_public(_rule, FUNCTIONS[_rule.name])

# Tensor methods generated from the table (ops with hand-written arguments attach their own).
METHODS = {name: PUBLIC[name] for name, rule in RULES.items() if rule.method}
EXPORTS = {name: PUBLIC[name] for name, rule in RULES.items() if rule.export}
