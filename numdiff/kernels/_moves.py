"""Eight-element moves for the layout copies of the direct convolutions (CPU, Numba).

Numba compiles without LLVM's SLP vectorizer (``numba.config.SLP_VECTORIZE`` is 0), and its loop
vectorizer gives a loop of unknown length a 32-element body (8 lanes, unrolled 4 times) and a
scalar remainder. A row of 8 elements, the width of the small images the direct kernels take,
never reaches that body, so rows were copied one element at a time. :func:`move8` and
:func:`copy8` move 8 elements as one vector load and one vector store.

Measured (N32 C16->32 8x8 k3, one thread, thread CPU time, medians of 300-400 calls alternating
the two builds in one process, two runs each): the direct forward 2-4% faster (171.6 -> 165.4 and
188.1 -> 184.2 us: its output scatter), the input gradient 1.5% (198.2 -> 195.3, 189.5 -> 186.5),
the weight gradient 2-3% (202.6 -> 197.2, 179.1 -> 175.2: its output-gradient gather). Then the
input staging's row copies (numdiff.kernels._conv_direct._stage): 16 channels staged 6.0 -> 4.1 us
alone, the forward and input gradient 1-2.5% faster again (alternating as above, two runs).

Bounds: like the unsigned indexing of the loops around them, the moves trust their callers, whose
indices come from shapes checked before any kernel runs. Under NUMBA_BOUNDSCHECK=1 (the checked
run of CI, with its own cache) they first check that the 8 elements lie inside both arrays and
raise IndexError otherwise, since Numba's own checks do not see inside the intrinsics. Checked
always, the raise in the row loops made the three kernels 2-3x slower (forward 172 -> 535 us).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import config
from numba.extending import intrinsic

from numdiff.kernels._self_healing_cache import njit

_LANES = 8
_CHECKED = bool(config.BOUNDSCHECK)


def _contiguous_pair(dst, src) -> bool:
    """Whether dst and src are 1-D C-contiguous float arrays of one dtype (typing time)."""
    return (
        isinstance(dst, types.Array)
        and isinstance(src, types.Array)
        and dst.ndim == src.ndim == 1
        and dst.layout == src.layout == "C"
        and dst.dtype == src.dtype
        and dst.dtype in (types.float32, types.float64)
    )


def _lanes_at(context, builder, array_type, array, index, index_type):
    """A pointer to the 8-lane vector that starts at element `index` of a 1-D array."""
    data = context.make_array(array_type)(context, builder, array).data
    start = builder.gep(data, [context.cast(builder, index, index_type, types.intp)])
    lanes = ir.VectorType(context.get_value_type(array_type.dtype), _LANES)
    return builder.bitcast(start, lanes.as_pointer())


@intrinsic
def _move8_unchecked(typingctx, dst, d, src, s, shift):
    if not (_contiguous_pair(dst, src) and isinstance(d, types.Integer) and isinstance(s, types.Integer)):
        return None
    if shift != dst.dtype:
        return None

    def codegen(context, builder, signature, args):
        dst_value, d_value, src_value, s_value, shift_value = args
        align = dst.dtype.bitwidth // 8
        values = builder.load(_lanes_at(context, builder, src, src_value, s_value, s), align=align)
        lanes = values.type
        one = builder.insert_element(ir.Constant(lanes, ir.Undefined), shift_value, ir.Constant(ir.IntType(32), 0))
        everywhere = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
        splat = builder.shuffle_vector(one, ir.Constant(lanes, ir.Undefined), everywhere)
        target = _lanes_at(context, builder, dst, dst_value, d_value, d)
        builder.store(builder.fadd(values, splat), target, align=align)
        return context.get_dummy_value()

    return types.none(dst, d, src, s, shift), codegen


@intrinsic
def _copy8_unchecked(typingctx, dst, d, src, s):
    if not (_contiguous_pair(dst, src) and isinstance(d, types.Integer) and isinstance(s, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        dst_value, d_value, src_value, s_value = args
        align = dst.dtype.bitwidth // 8
        values = builder.load(_lanes_at(context, builder, src, src_value, s_value, s), align=align)
        builder.store(values, _lanes_at(context, builder, dst, dst_value, d_value, d), align=align)
        return context.get_dummy_value()

    return types.none(dst, d, src, s), codegen


@njit(cache=True, nogil=True, inline="always")
def _check8(dst, d, src, s):
    """IndexError unless dst[d : d + 8] and src[s : s + 8] lie inside their arrays."""
    if d < 0 or s < 0 or d + _LANES > dst.size or s + _LANES > src.size:
        raise IndexError("an 8-element move reaches outside its arrays")


@njit(cache=True, nogil=True, inline="always")
def move8(dst, d, src, s, shift):
    """``dst[d : d + 8] = src[s : s + 8] + shift``; dst and src 1-D, C-contiguous, of one float
    dtype, shift a scalar of it. Adding a zero shift turns -0.0 into 0.0, as ``+`` does."""
    d, s = int(d), int(s)
    if _CHECKED:
        _check8(dst, d, src, s)
    _move8_unchecked(dst, d, src, s, shift)


@njit(cache=True, nogil=True, inline="always")
def copy8(dst, d, src, s):
    """``dst[d : d + 8] = src[s : s + 8]``; dst and src 1-D, C-contiguous, of one float dtype."""
    d, s = int(d), int(s)
    if _CHECKED:
        _check8(dst, d, src, s)
    _copy8_unchecked(dst, d, src, s)
