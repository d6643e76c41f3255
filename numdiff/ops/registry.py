"""The registry of differentiable ops: one `OpSpec` per op, the list of what numdiff can differentiate.

An op's spec holds every fact the rest of numdiff needs about it, in one place:

- ``function``: the registered `Function` (forward and backward side by side);
- ``compile``: how numdiff.compile treats it (``"fused"``, ``"kernel"``, ``"call"`` or
  ``"eager_backward"``; numdiff/compile/rules.py says what each means), given to `register`;
- ``launchers``: the device kernels its forward and backward run through the backend seam
  (``backend_for(x).conv2d_forward``), given to `register`; both backends must list them;
- ``view``: whether its public function returns a view of its first input (numdiff.ops.shape's
  ``_as_view``), given to `register`; vmap makes the batched result a view of the batch too;
- ``batching`` and ``batched_backward``: its vmap rule, and whether its create_graph backward runs
  on a batch of cotangents, attached by numdiff/func/_batch_rules.py;
- ``jvp``: its forward-mode rule (the output's tangent from the inputs'), attached by
  numdiff/func/_jvp_rules.py; an op without one is pushed forward by a double vjp;
- ``direct``: its planned kernel call in compiled programs, attached by numdiff/compile/direct.py.

The layers above ops (func, compile) attach their facts with ``attach(name, ...)`` when they are
imported, so ops import nothing from them; a fact attached before its op registers waits for it
(numdiff's modules import in an order of their own), and `unclaimed` lists facts whose op never
registered (a test fails on any). Tests walk `SPECS` (and `OPS`, the same registry seen
as name -> Function) and fail for any op without a gradient check, a compile rule or launchers that
both backends have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from numdiff.autograd.function import Function

COMPILE_RULES = frozenset({"fused", "kernel", "call", "eager_backward"})
"""The compile rules an op may name (numdiff/compile/rules.py describes each)."""


@dataclass(eq=False)
class OpSpec:
    """Everything numdiff knows about one registered op.

    >>> spec("exp").compile, spec("conv2d").launchers
    ('fused', ('conv2d_forward',))
    """

    name: str
    function: type[Function]
    compile: str | None = None
    launchers: tuple[str, ...] = ()
    view: bool = False
    batching: Callable[..., Any] | None = None
    batched_backward: bool = False
    jvp: Callable[..., Any] | None = None
    direct: Any = None
    _attached: set[str] = field(default_factory=set, repr=False)

    def attach(self, **facts: Any) -> OpSpec:
        """Add the facts a higher layer owns (``batching``, ``batched_backward``, ``jvp``, ``direct``).

        Each fact is attached once: a second attach of the same fact is a mistake (two rules for
        one op) and raises ValueError naming both.
        """
        for key, value in facts.items():
            if key not in _ATTACHABLE:
                raise TypeError(
                    f"op {self.name!r}: cannot attach {key!r}; attachable facts are {sorted(_ATTACHABLE)} "
                    "(compile, launchers and view are given to register)"
                )
            if key in self._attached:
                raise ValueError(f"op {self.name!r}: {key} is already attached ({getattr(self, key)!r})")
            self._attached.add(key)
            setattr(self, key, value)
        return self


_ATTACHABLE = frozenset({"batching", "batched_backward", "jvp", "direct"})

SPECS: dict[str, OpSpec] = {}
"""Every registered op's spec, by name."""

_WAITING: dict[str, dict[str, Any]] = {}  # facts attached to ops not registered yet, by op name


class _FunctionsByName(Mapping):
    """`SPECS` seen as name -> the op's Function: the registry as the code replaying nodes reads it."""

    def __getitem__(self, name: str) -> type[Function]:
        return SPECS[name].function

    def __iter__(self) -> Iterator[str]:
        return iter(SPECS)

    def __len__(self) -> int:
        return len(SPECS)

    def __repr__(self) -> str:
        return f"<numdiff ops: {len(SPECS)} registered>"


OPS: Mapping[str, type[Function]] = _FunctionsByName()

F = TypeVar("F", bound=type[Function])


def spec(name: str) -> OpSpec:
    """The spec of the op registered as `name`.

    >>> spec("matmul").function.__name__
    'Matmul'
    """
    found = SPECS.get(name)
    if found is None:
        raise KeyError(f"no op is registered as {name!r}; see numdiff.ops.registry.SPECS")
    return found


def attach(name: str, **facts: Any) -> None:
    """Attach facts a higher layer owns (``batching``, ``batched_backward``, ``jvp``, ``direct``) to op
    `name`, now or when it registers.

    >>> attach("exp", batched_backward=True)  # doctest: +SKIP
    """
    found = SPECS.get(name)
    if found is not None:
        found.attach(**facts)
        return
    waiting = _WAITING.setdefault(name, {})
    for key in facts:
        if key in waiting:
            raise ValueError(f"op {name!r}: {key} is already attached ({waiting[key]!r})")
    waiting.update(facts)


def unclaimed() -> dict[str, tuple[str, ...]]:
    """Facts attached to a name no op has registered (yet): op name -> the facts' names."""
    return {name: tuple(sorted(facts)) for name, facts in _WAITING.items()}


def register(
    name: str, *, compile: str | None = None, launchers: tuple[str, ...] = (), view: bool = False
) -> Callable[[F], F]:
    """Class decorator: mark a built-in `Function` as an array-level op and give it its spec.

    `compile` is its compile rule, `launchers` the backend kernels it runs, `view` whether its
    public function returns a view of its first input::

        @register("conv2d", compile="kernel", launchers=("conv2d_forward",))
        class Conv2d(Function): ...
    """
    if compile is not None and compile not in COMPILE_RULES:
        raise ValueError(f"op {name!r}: compile rule {compile!r} is not one of {sorted(COMPILE_RULES)}")

    def decorate(cls: F) -> F:
        if name in SPECS:
            raise ValueError(f"op {name!r} is already registered by {SPECS[name].function.__qualname__}")
        cls.array_forward = True
        cls.op_name = name
        cls.spec = SPECS[name] = OpSpec(name, cls, compile, tuple(launchers), view)
        waiting = _WAITING.pop(name, None)
        if waiting:
            cls.spec.attach(**waiting)
        return cls

    return decorate
