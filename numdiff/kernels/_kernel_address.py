"""A kernel compiled once and called from other kernels by address, so a caller's build holds a call, not a copy.

Numba links the machine code of every kernel a kernel calls into the caller's own build, and LLVM
optimises and emits the callee's whole tree again there: with an empty cache numdiff.kernels._blas's
float32 gemm took 7 s to build alone, and each kernel calling it paid 0.7-0.8 s more for the copy
(a trivial kernel builds in 0.06 s), a parallel one ~3.5 s (its gufunc holds one more copy).

A :class:`KernelSlot` is a pointer this process owns, registered with LLVM under a name as the BLAS
routines are (numdiff.kernels._blas_library), and filled with the address of one compiled build of
a kernel (:meth:`KernelSlot.fill`, which compiles it or loads it from the disk cache like any
kernel). :func:`call_through_slot` emits, inside a caller, a load of that pointer and a call
through it with Numba's own calling convention, so an exception the kernel raises reaches the
caller as from any callee. A cached caller links to the slot's name, not to an address, so it
stays valid from one process to the next. A call through a slot not filled yet raises
RuntimeError with the slot's message instead of jumping to address 0.

The cost at run time is one load and an indirect call, where the linked copy was a direct call
that LLVM could not inline anyway (the kernels called this way are large).
"""

from __future__ import annotations

import ctypes
from typing import Any

from llvmlite import binding, ir
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock

__all__ = ["KernelSlot", "call_through_slot"]


class KernelSlot:
    """A pointer to one compiled build of a kernel, registered with LLVM under `symbol`; `empty_message`
    is the RuntimeError's message for a call made before :meth:`fill`.

    >>> KernelSlot("numdiff_doctest_slot", "not built").filled
    False
    """

    def __init__(self, symbol: str, empty_message: str) -> None:
        self.symbol = symbol
        self.empty_message = empty_message
        self._address = ctypes.c_void_p(0)
        binding.add_symbol(symbol, ctypes.addressof(self._address))

    @property
    def filled(self) -> bool:
        """Whether a build's address is in the slot."""
        return bool(self._address.value)

    def fill(self, dispatcher: Any, argtypes: tuple) -> None:
        """Compile `dispatcher` for exactly `argtypes` (Numba types), or load that build from the disk
        cache, and put its address in the slot. Callers through the slot pass these types.

        The dispatcher then compiles nothing else: a call from Python converts its arguments to a
        build it has (as C-contiguous arrays convert to any-layout ones), and the next fill of
        another slot opens it again for that slot's types only. Its builds are made under Numba's
        compiler lock, so no other thread compiles one in between."""
        with global_compiler_lock:
            dispatcher.disable_compile(False)
            try:
                dispatcher.compile(argtypes)
            finally:
                dispatcher.disable_compile()
            built = dispatcher.overloads[tuple(argtypes)]
            address = built.library.get_pointer_to_function(built.fndesc.llvm_func_name)
        if not address:
            raise RuntimeError(f"{self.symbol}: the build of {dispatcher.py_func.__qualname__} has no entry point")
        self._address.value = address


def call_through_slot(context: Any, builder: Any, slot: KernelSlot, signature: Any, args: list) -> Any:
    """Inside a caller's codegen: call the build in `slot`, whose Numba signature is `signature`
    (the types its :meth:`KernelSlot.fill` compiled for), with `args` already of those types;
    returns its result and passes on any exception it raised."""
    call_conv = context.call_conv
    function_type = call_conv.get_function_type(signature.return_type, signature.args)
    module = builder.module
    pointer = module.globals.get(slot.symbol)
    if pointer is None:
        pointer = ir.GlobalVariable(module, function_type.as_pointer(), slot.symbol)
    callee = builder.load(pointer)
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, callee)):
        call_conv.return_user_exc(builder, RuntimeError, (slot.empty_message,))
    status, result = call_conv.call_function(builder, callee, signature.return_type, signature.args, args)
    with cgutils.if_unlikely(builder, status.is_error):
        call_conv.return_status_propagate(builder, status)
    return result
