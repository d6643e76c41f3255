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

:func:`by_address` does the same for any ``@njit`` helper, one slot per argument types, made when a
kernel calling it is typed: the convolution and recurrent families' helpers (products, im2col rows,
Winograd blocks and transforms, direct-conv parts, the batched cores' staging copies, the recurrences'
step loops) each compile once,
however many cores, serial and parallel twins call them. With an empty cache (one thread, CPU s of
the first call, load 12-20): a Winograd conv2d forward and backward 12.9 -> 7.8, a direct one 14.1 -> 9.5; bench_models'
cifar_bn compiled step 36.1 -> 30.5 and the char LSTM's eager step 14.2 -> 11.3.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
from collections.abc import Callable
from typing import Any

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

__all__ = ["KernelSlot", "any_layout", "by_address", "call_through_slot", "fill_slots_named_in"]


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
                self._put(dispatcher, tuple(argtypes))
            finally:
                dispatcher.disable_compile()

    def _put(self, dispatcher: Any, argtypes: tuple) -> None:
        """Compile `dispatcher` for `argtypes` (or load the build) and put the build's address here."""
        dispatcher.compile(argtypes)
        built = dispatcher.overloads[argtypes]
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


# ---------------------------------------------------------------------------------------- by_address
# Slots made for by_address kernels: one per kernel and argument types, named
# "numdiff_at_<module and name>__<digest of the types>" so that a cached caller names its callee.
_PREFIX = "numdiff_at_"
_NAMED = re.compile(rb"numdiff_at_\w+__[0-9a-f]{16}")
_KERNELS: dict[str, Dispatcher] = {}
_SLOTS: dict[str, KernelSlot] = {}


def _kernel_key(dispatcher: Dispatcher) -> str:
    function = dispatcher.py_func
    return re.sub(r"\W", "_", f"{function.__module__}.{function.__qualname__}")


def _symbol(key: str, argtypes: tuple) -> str:
    digest = hashlib.sha256(str(argtypes).encode()).hexdigest()[:16]
    return f"{_PREFIX}{key}__{digest}"


def _filled_slot(dispatcher: Dispatcher, argtypes: tuple) -> KernelSlot:
    """The slot of `dispatcher`'s build for `argtypes`, registered and filled (compiling the build,
    or loading it from the disk cache, if this process has not yet)."""
    symbol = _symbol(_kernel_key(dispatcher), argtypes)
    with global_compiler_lock:
        slot = _SLOTS.get(symbol)
        if slot is None:
            name = dispatcher.py_func.__qualname__
            slot = _SLOTS[symbol] = KernelSlot(symbol, f"{name}: no build for {argtypes} in this process")
        if not slot.filled:
            slot._put(dispatcher, argtypes)
    return slot


class _CallByAddress(_Intrinsic):
    """Numba's intrinsic, callable from Python too: there it calls the helper's dispatcher (tests
    and Python code call the helpers directly)."""

    def __init__(self, name: str, definition: Any, dispatcher: Dispatcher) -> None:
        super().__init__(name, definition)
        self.dispatcher = dispatcher
        self.__doc__ = dispatcher.py_func.__doc__
        self.__wrapped__ = dispatcher.py_func

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher(*args)


def by_address(dispatcher: Any = None, *, slot_types: Callable[[tuple], tuple] | None = None) -> Any:
    """What kernels call instead of the ``@njit`` helper `dispatcher`: a call through a
    :class:`KernelSlot` holding one build of the helper per argument types, so each caller's build
    (its serial and parallel twins, every dtype) holds a call instead of the helper's whole tree.

    Typing a call compiles the helper for the call's argument types (literals as their plain types;
    arrays keep their layouts, so the helper's machine code is the one a linked call would get) and
    fills that build's slot. `slot_types`, if given, maps those types to the ones the build is made
    for, and each argument is cast to them at the call (an array to any layout is free): a helper
    whose speed does not hang on its operands' layouts then compiles once for all of them (as
    ``@by_address(slot_types=...)``). A caller loaded from the disk cache names its slots; the cache
    (numdiff.kernels._self_healing_cache) fills them with :func:`fill_slots_named_in` before it links
    the caller. Only kernels may call the result; with ``NUMBA_DISABLE_JIT`` it is `dispatcher` itself.
    """
    if dispatcher is None:
        return lambda helper: by_address(helper, slot_types=slot_types)
    if not isinstance(dispatcher, Dispatcher):
        return dispatcher
    _KERNELS[_kernel_key(dispatcher)] = dispatcher

    def call(typingctx: Any, *args: Any) -> Any:
        given = tuple(types.unliteral(a) for a in args)
        argtypes = given if slot_types is None else tuple(slot_types(given))
        slot = _filled_slot(dispatcher, argtypes)
        callee = dispatcher.overloads[argtypes].signature

        def codegen(context: Any, builder: Any, signature: Any, llargs: list) -> Any:
            values = cgutils.unpack_tuple(builder, llargs[0], len(argtypes))
            values = [context.cast(builder, v, g, a) for v, g, a in zip(values, given, argtypes)]
            result = call_through_slot(context, builder, slot, callee, values)
            return context.get_dummy_value() if callee.return_type == types.none else result

        return callee.return_type(types.StarArgTuple.from_types(given)), codegen

    by_slot = _CallByAddress(dispatcher.py_func.__name__, call, dispatcher)
    by_slot._register()
    return by_slot


def any_layout(argtypes: tuple) -> tuple:
    """`argtypes` with every array as any layout ('A'): a `slot_types` for :func:`by_address`."""
    return tuple(t.copy(layout="A") if isinstance(t, types.Array) else t for t in argtypes)


def _cached_signatures(dispatcher: Dispatcher) -> list:
    """The argument types of the builds in `dispatcher`'s disk cache index (none if it has no cache
    or the index cannot be read: the caller is then compiled again)."""
    cache_file = getattr(dispatcher._cache, "_cache_file", None)
    try:
        return [entry[0] for entry in cache_file._load_index()] if cache_file is not None else []
    except Exception:
        return []


def fill_slots_named_in(object_code: bytes) -> bool:
    """Register and fill every by_address slot a cached caller's `object_code` calls through (each
    build loaded from the helper's own disk cache, or compiled). False when one cannot be: its
    helper is not imported or holds no build for those types, so the caller must be compiled again
    (which types its calls and so makes the builds)."""
    for found in set(_NAMED.findall(object_code)):
        symbol = found.decode()
        slot = _SLOTS.get(symbol)
        if slot is not None and slot.filled:
            continue
        dispatcher = _KERNELS.get(symbol[len(_PREFIX) : -18])
        if dispatcher is None:
            return False
        key = _kernel_key(dispatcher)
        known = list(dispatcher.overloads) + _cached_signatures(dispatcher)
        matches = [argtypes for argtypes in known if _symbol(key, tuple(argtypes)) == symbol]
        if not matches:
            return False
        _filled_slot(dispatcher, tuple(matches[0]))
    return True
