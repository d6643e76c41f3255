"""The ``__numdiff_function__`` protocol: objects that stand in for Tensors take over numdiff calls.

PyTorch's ``__torch_function__`` in numdiff's words. A type that defines the classmethod

    __numdiff_function__(cls, func, types, args=(), kwargs=None)

and is passed to a numdiff function where a Tensor is expected gets the call instead: `func` is
the public function called (``numdiff.add``, ``numdiff.nn.functional.relu``), `args` and `kwargs`
what it was called with. numdiff.fx's Proxy uses it to record calls as graph Nodes.

Cost: the check sits where numdiff already inspects a non-Tensor operand (ops/_util.operands and
the other argument checks). An operand that defines the protocol makes that check raise
`ForeignOperandError`; the public function catches it and hands the call to `handle_numdiff_function`.
A try block costs nothing while nothing is raised, so calls on Tensors pay nothing for it.

>>> class Logged:
...     @classmethod
...     def __numdiff_function__(cls, func, types, args=(), kwargs=None):
...         return f"{func.__name__} called"
>>> numdiff.add(Logged(), 1)
'add called'
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "ForeignOperandError",
    "dispatch",
    "dispatch_call",
    "exported",
    "handle_numdiff_function",
    "handle_torch_function",
    "hands_over",
    "has_numdiff_function",
    "has_torch_function",
    "honours_protocol",
    "is_overridable",
    "overridable",
    "overridable_variants",
    "protocol_candidates",
    "register_public_face",
    "register_public_faces",
]

PROTOCOL = "__numdiff_function__"


def __dir__() -> list[str]:
    return sorted(__all__)


class ForeignOperandError(TypeError):
    """An operand that is not a Tensor defines ``__numdiff_function__``: the public function that
    receives this hands the call to it (a TypeError where nothing catches it)."""

    def __init__(self, op: str, value: Any) -> None:
        super().__init__(f"{op}: got a {type(value).__name__}, which defines {PROTOCOL}; call {op} through "
                         "its public function so that the operand can take the call over")
        self.op = op


# type -> whether it defines the protocol. hasattr of a missing class attribute raises and catches
# an AttributeError inside; one dict lookup per argument keeps the check cheap on every call.
_DEFINES: dict[type, bool] = {}


def _defines(kind: type) -> bool:
    flag = _DEFINES.get(kind)
    if flag is None:
        flag = hasattr(kind, PROTOCOL)
        if kind is not list and kind is not tuple:  # never cached: their items are looked at
            _DEFINES[kind] = flag
    return flag


def is_overridable(value: Any) -> bool:
    """Whether `value`'s type defines ``__numdiff_function__`` (numdiff's Tensor does not)."""
    return _defines(type(value))


def _any_defines(values: Iterable[Any]) -> bool:
    """Whether a value (or an item of a list or tuple value) defines the protocol."""
    for value in values:
        kind = type(value)
        if _defines(kind):
            return True
        if kind is list or kind is tuple:
            for item in value:
                if _defines(type(item)):
                    return True
    return False


def _overloaded(values: Iterable[Any]) -> list[Any]:
    """The operands (looking one level into lists and tuples) whose types define the protocol,
    one per type, subclasses before their bases, as PyTorch orders them."""
    found: list[Any] = []
    types: list[type] = []
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            kind = type(item)
            if kind in types or not _defines(kind):
                continue
            position = len(found)
            for i, earlier in enumerate(types):
                if issubclass(kind, earlier):
                    position = i
                    break
            found.insert(position, item)
            types.insert(position, kind)
    return found


def has_numdiff_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of `relevant_args` (or an item of a list or tuple among them) defines the protocol."""
    return _any_defines(relevant_args)


def check_operand(op: str, value: Any) -> None:
    """Raise ForeignOperandError when `value` (or an item of it, for a list or tuple) defines the
    protocol; called where a public function finds an operand that is not a Tensor."""
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if _defines(type(item)):
            raise ForeignOperandError(op, item)


def handle_numdiff_function(public_api: Callable[..., Any], relevant_args: Iterable[Any], *args: Any,
                            **kwargs: Any) -> Any:
    """Call ``__numdiff_function__`` of each overloaded type among `relevant_args` in turn, until one
    returns something other than NotImplemented; TypeError if none does."""
    overloaded = _overloaded(relevant_args)
    types = tuple(type(value) for value in overloaded)
    for value in overloaded:
        result = getattr(type(value), PROTOCOL)(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__name__", repr(public_api))
    raise TypeError(f"{name}: no implementation for the operand types {[t.__name__ for t in types]} "
                    f"(each one's {PROTOCOL} returned NotImplemented, or none defines it)")


# PyTorch's names, for code that overrides through them.
has_torch_function = has_numdiff_function
handle_torch_function = handle_numdiff_function


_FACES: dict[Any, Any] = {}


def register_public_face(inner: Callable[..., Any], outer: Callable[..., Any]) -> None:
    """Record that `outer` (e.g. ``numdiff.tanh``, which adds ``out=``) is the public face of `inner`,
    so a call that `inner` hands over is reported under the name users call."""
    _FACES[inner] = outer


def register_public_faces(namespace: dict[str, Any]) -> None:
    """For each function of `namespace`, record it as the public face of every function it wraps
    (its ``__wrapped__`` chain), so a call handed over from inside is reported under its name."""
    for value in namespace.values():
        if not callable(value) or isinstance(value, type):
            continue
        inner = getattr(value, "__wrapped__", None)
        while inner is not None and inner is not value:
            _FACES[inner] = value
            inner = getattr(inner, "__wrapped__", None)


def dispatch(public_api: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Hand a call of `public_api` that met a ForeignOperandError to the protocol (see the module docs)."""
    face = _FACES.get(public_api, public_api)
    return handle_numdiff_function(face, (*args, *kwargs.values()), *args, **kwargs)


def dispatch_call(public_api: Callable[..., Any], params: dict[str, Any]) -> Any:
    """`dispatch` for a function that checked its own arguments: `params` is its ``locals()`` at
    entry; parameters left at their defaults are not passed on, the others by position up to the
    first defaulted one and by keyword after it (``leaky_relu(x, negative_slope=0.2)``)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, parameter in inspect.signature(public_api).parameters.items():
        value = params[name]
        if parameter.default is parameter.empty and not kwargs:
            args.append(value)
        elif parameter.default is parameter.empty or not (value is parameter.default or (
                type(value) is type(parameter.default) and value == parameter.default)):
            kwargs[name] = value
    return dispatch(public_api, tuple(args), kwargs)


def overridable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` as a public function that hands calls with a protocol operand (a positional argument,
    an item of a list or tuple argument, or a keyword argument) to ``__numdiff_function__``. For
    functions off the per-op hot path: it checks every argument's type before `fn` runs."""
    return exported(fn)


# (argument, its name in `fn`) pairs: NumPy's ``axis``/``keepdims`` where PyTorch's functions take
# ``dim``/``keepdim`` (numdiff._numpy_names decides which functions get which).
Renames = tuple[tuple[str, str], ...]
# out(name, call, args, kwargs, destination): run ``call(*args, **kwargs)`` and write the result
# into `destination`, PyTorch's ``out=`` (numdiff._out_argument.write_out).
OutWriter = Callable[[str, Callable[..., Any], tuple, dict, Any], Any]


def exported(fn: Callable[..., Any], protocol: bool = True, renames: Renames = (),
             out: OutWriter | None = None) -> Callable[..., Any]:
    """`fn` as numdiff exports it, in one wrapper frame however many of these it needs: keyword
    arguments by their NumPy names (`renames`), PyTorch's ``out=`` (`out`), and with `protocol`
    the hand-over of protocol operands to ``__numdiff_function__``. A call without keywords pays
    one test of an empty dict, plus one dict lookup per argument with `protocol`."""

    known = _DEFINES
    name = fn.__name__

    @functools.wraps(fn)
    def public(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, target in renames:
                if alias in kwargs:
                    if target in kwargs:
                        raise TypeError(f"{name}() got both {target!r} and {alias!r}, its NumPy name")
                    kwargs[target] = kwargs.pop(alias)
            if out is not None:
                destination = kwargs.pop("out", None)
                if destination is not None:
                    return out(name, public, args, kwargs, destination)
            if protocol and _any_defines(kwargs.values()):
                return dispatch(public, args, kwargs)
        if protocol:
            # Inline, one dict lookup per argument (and per item of a tuple or list argument, such
            # as a conv's stride): a Tensor's or an int's type is known not to define the protocol.
            for value in args:
                kind = type(value)
                if known.get(kind) is not False:
                    if kind is tuple or kind is list:
                        for item in value:
                            if known.get(type(item)) is not False and _defines(type(item)):
                                return dispatch(public, args, kwargs)
                    elif _defines(kind):
                        return dispatch(public, args, kwargs)
        return fn(*args, **kwargs)

    if protocol:
        public.__numdiff_overridable__ = True
    return public


def honours_protocol(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark `fn` as handing protocol operands over itself (a ForeignOperandError caught inside), so
    `overridable_variants` leaves it as it is."""
    fn.__numdiff_overridable__ = True
    return fn


def protocol_candidates(namespace: dict[str, Any], module_prefixes: tuple[str, ...],
                        skip_modules: tuple[str, ...] = ()) -> list[str]:
    """The names of the public functions of `namespace` defined in modules under `module_prefixes`
    (less those of `skip_modules`, modules or ``module.function`` names) that do not honour the
    protocol themselves: those whose export needs the protocol check. Skip modules whose functions
    warn with a fixed stacklevel: the wrapper's frame would make the warning point into this file
    instead of at the caller's line."""
    names = []
    for name, fn in namespace.items():
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        inner = getattr(fn, "__wrapped__", fn)
        if getattr(fn, "__numdiff_overridable__", False) or getattr(inner, "__numdiff_overridable__", False):
            continue
        module = fn.__module__ or ""
        if not module.startswith(module_prefixes) or module in skip_modules or f"{module}.{fn.__name__}" in skip_modules:
            continue
        names.append(name)
    return names


def hands_over(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark `fn` (an implementation whose export keeps its `overridable` wrapper, which passes the
    caller's arguments on as given) as handing a protocol operand over by itself, from a
    ForeignOperandError caught inside at no cost to Tensor calls: numdiff's own layers call it
    unwrapped (numdiff.nn._implementations), and a Proxy that reaches it still takes the call."""
    fn.__numdiff_hands_over__ = True
    return fn


def overridable_variants(namespace: dict[str, Any], module_prefixes: tuple[str, ...],
                         skip_modules: tuple[str, ...] = ()) -> dict[str, Any]:
    """The functions `protocol_candidates` names, wrapped by `overridable` (aliases share one
    wrapper). A namespace's exported functions only: Tensor methods keep the unwrapped functions."""
    wrapped: dict[int, Callable[..., Any]] = {}
    return {
        name: wrapped.setdefault(id(namespace[name]), overridable(namespace[name]))
        for name in protocol_candidates(namespace, module_prefixes, skip_modules)
    }
