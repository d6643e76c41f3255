"""The traced graph: values (shape, dtype, where they come from) and the op calls between them.

A `Graph` is what tracing records and what code generation reads. Values are numbered; an op
call (`OpCall`) names the `Function` class it replays, its keyword attrs (with arrays that are
graph values replaced by `ValueRef`) and the values it reads and writes. A forward op call also
lists the arrays its forward left on ctx (`ctx_outputs`), because backward formulas read them
(max pooling's argmax indices); those become values of the graph too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ValueRef:
    """An attr that is a graph value at run time (not a constant baked into the code)."""

    index: int


@dataclass
class Value:
    """One array of the graph: its shape and dtype when traced, and what produces it.

    kind is "input" (a positional tensor argument, `slot` is its flat position), "captured" (a
    tensor the function read from outside, such as a Parameter; `slot` indexes the captured
    list), "grad" (the gradient seeded for output `slot`), "op" (an op call's result), "ctx" (an
    array an op's forward left on ctx) or "const" (an array baked into the code).
    """

    index: int
    shape: tuple
    dtype: Any
    kind: str
    slot: int = -1
    constant: Any = None  # the baked array of a "const" value

    @property
    def name(self) -> str:
        return f"v{self.index}"


@dataclass
class OpCall:
    """One replayable call: ``output = function.forward(ctx, *inputs, **attrs)``.

    inputs hold value indices, or ("lit", number) for Python numbers passed positionally.
    ctx_outputs maps ("attr", name) or ("saved", position) to the value holding that ctx array.
    """

    function: type
    inputs: list
    attrs: dict
    output: int
    tensor_forward: bool = False
    host: bool = False  # a public function without an op (a comparison): replayed on tensors
    # "eager_backward" (an op's own backward run on its replayed ctx), "item", "gemm_pair" (two
    # independent matmuls run together, made by numdiff.compile.schedule after tracing) or
    # "norm_fold" (a normalisation with its statistics and relu, numdiff.compile.norm_fold)
    special: str = ""
    random: bool = False  # a draw from a random generator: rerun on every call, never pruned
    ctx_outputs: dict = field(default_factory=dict)

    @property
    def op_name(self) -> str:
        return getattr(self.function, "op_name", self.function.__name__)


def attr_refs(call: OpCall) -> list[int]:
    """The values a call's attrs refer to (at top level or inside tuples)."""
    found = []
    stack = list(call.attrs.values())
    while stack:
        value = stack.pop()
        if isinstance(value, ValueRef):
            found.append(value.index)
        elif type(value) is tuple:
            stack.extend(value)
    return found


@dataclass
class Graph:
    """Values and op calls in execution order; `outputs` is the structure the function returns."""

    values: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    outputs: list = field(default_factory=list)  # value indices of the returned tensors

    def add_value(self, shape: tuple, dtype: Any, kind: str, slot: int = -1) -> int:
        self.values.append(Value(len(self.values), tuple(shape), dtype, kind, slot))
        return len(self.values) - 1

    def describe(self) -> str:
        """A readable listing, one op call a line: ``v3 = mul(v1, v2)  float32[4]``."""
        lines = []
        for v in self.values:
            if v.kind not in ("op", "ctx"):
                lines.append(f"{v.name}: {v.kind} {v.dtype}{list(v.shape)}")
        for call in self.calls:
            args = ", ".join(f"v{i}" if not isinstance(i, tuple) else repr(i[1]) for i in call.inputs)
            out = self.values[call.output]
            lines.append(f"{out.name} = {call.op_name}({args})  {out.dtype}{list(out.shape)}")
        lines.append("return " + ", ".join(f"v{i}" for i in self.outputs))
        return "\n".join(lines)
