"""numdiff: reverse-mode automatic differentiation with Numba-compiled kernels.

PyTorch's names and semantics, so code ports by changing the import::

    import numdiff as torch
    w = torch.tensor([1., 2., 3.], requires_grad=True)
    (w * 2).sum().backward()
    w.grad  # tensor([2., 2., 2.])
"""

import math as _math
import sys as _sys
import types as _types
import warnings as _warnings

from numdiff import _exports, _numpy_names, _tensor_methods, _torch_misc, _torch_names
from numdiff import overrides as _overrides
from numdiff._allocator import keep_freed_memory as _keep_freed_memory
from numdiff._defaults import get_default_device, get_default_dtype, set_default_device, set_default_dtype
from numdiff._device import device
from numdiff._dtype import bool_ as bool  # noqa: A001 - PyTorch's name
from numdiff._dtype import dtype, float32, float64, int32, int64
from numdiff._dtype_info import finfo, iinfo
from numdiff._dtype_names import (  # noqa: A004 - PyTorch's names: float, int
    bfloat16,
    double,
    float,
    float16,
    half,
    int,
    int8,
    int16,
    long,
    short,
    uint8,
)
from numdiff._random import Generator, manual_seed
from numdiff._tensor_str import set_printoptions
from numdiff._tensor_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from numdiff.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from numdiff.creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    tril_indices,
    triu_indices,
    zeros,
    zeros_like,
)
from numdiff.ops.activation import log_softmax, relu, softmax
from numdiff.ops.arithmetic import (
    add,
    div,
    divide,
    floor_divide,
    fmod,
    lerp,
    mul,
    multiply,
    neg,
    negative,
    pow,
    remainder,
    sub,
    subtract,
    true_divide,
)
from numdiff.ops.combinations import bincount, block_diag, cartesian_prod, histc, isin, kron
from numdiff.ops.conversion import clone
from numdiff.ops.diagonals import diag, diag_embed, diagonal, trace
from numdiff.ops.einsum import einsum
from numdiff.ops.elementwise import EXPORTS as _RULE_EXPORTS  # numdiff.<name> of every exported scalar rule
from numdiff.ops.indexing import gather, index_select, scatter_add
from numdiff.ops.joining import cat, chunk, concat, split, stack
from numdiff.ops.linalg import matmul
from numdiff.ops.log_scan import logcumsumexp
from numdiff.ops.logical import (
    all,
    allclose,
    any,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    eq,
    equal,
    ge,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    ne,
)
from numdiff.ops.moments import logsumexp, std, std_mean, var, var_mean
from numdiff.ops.nan_handling import nan_to_num, nanmean, nansum
from numdiff.ops.norms import cdist, count_nonzero, dist, norm
from numdiff.ops.order_statistics import kthvalue, median, mode, nanmedian
from numdiff.ops.products import (
    addcdiv,
    addcmul,
    addmm,
    addmv,
    baddbmm,
    bmm,
    cross,
    dot,
    inner,
    mm,
    outer,
    tensordot,
)
from numdiff.ops.rearrange import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    column_stack,
    dstack,
    hstack,
    meshgrid,
    moveaxis,
    movedim,
    narrow,
    repeat,
    repeat_interleave,
    rot90,
    row_stack,
    select,
    swapaxes,
    swapdims,
    tensor_split,
    tile,
    unbind,
    vstack,
)
from numdiff.ops.reduction import (
    amax,
    amin,
    argmax,
    argmin,
    max,
    mean,
    min,
    prod,
    sum,
)
from numdiff.ops.roll import roll
from numdiff.ops.scan import cummax, cummin, cumprod, cumsum, diff
from numdiff.ops.scatter import index_add, masked_select, scatter, take
from numdiff.ops.search import argwhere, bucketize, isclose, nonzero, searchsorted, unique
from numdiff.ops.selection import (
    clamp,
    clamp_max,
    clamp_min,
    clip,
    masked_fill,
    maximum,
    minimum,
    where,
)
from numdiff.ops.shape import (
    broadcast_to,
    flatten,
    flip,
    permute,
    reshape,
    squeeze,
    t,
    transpose,
    unflatten,
    unsqueeze,
)
from numdiff.ops.sorting import argsort, sort, topk
from numdiff.ops.special_functions import logit, mvlgamma, polygamma
from numdiff.ops.strided_view import as_strided
from numdiff.ops.triangular import tril, triu
from numdiff.ops.unary import absolute, arctan2, round
from numdiff.sampling import bernoulli, multinomial, normal
from numdiff.tensor import Size, Tensor

# NumPy's floating-point warnings from numdiff's own ufunc calls ("divide by zero encountered in
# log" for log(0), x / 0, a softmax over an all -inf row): PyTorch computes the same inf and NaN
# without a word, and so does numdiff. NumPy calls in the user's own code keep their warnings.
_warnings.filterwarnings(
    "ignore", "(divide by zero|invalid value|overflow|underflow) encountered in", RuntimeWarning, r"numdiff\."
)
_keep_freed_memory()  # numdiff/_allocator.py: freed arrays stay mapped, no page faults per step
_tensor_methods.attach()
globals().update({name: fn for name, fn in _RULE_EXPORTS.items() if name not in globals()})
_TORCH_NAMES = {**_torch_misc.FUNCTIONS, **_torch_names.functions(globals())}  # arccos, cov, quantile, hann_window...
globals().update(_TORCH_NAMES)
# numdiff.fx's Proxy, PyTorch's out= and NumPy's axis/keepdims (numdiff.sum(x, axis=1)), in one wrapper each.
globals().update(_exports.public_functions(globals(), ("numdiff.ops",)))

from numdiff import _deferred, autograd, cuda  # noqa: E402 - _deferred: what loads on first access (__getattr__)
from numdiff import accelerator as accelerator  # noqa: E402 - torch.accelerator, backed by numdiff.cuda
from numdiff import amp as amp  # noqa: E402 - autocast and GradScaler
from numdiff import backends as backends  # noqa: E402 - PyTorch's backend flags, accepted
from numdiff import linalg as linalg  # noqa: E402 - torch.linalg: factorizations, solvers, norms
from numdiff import mps as mps  # noqa: E402 - devices numdiff lacks: their probes answer False
from numdiff import mtia as mtia  # noqa: E402
from numdiff import random as random  # noqa: E402 - torch.random: seeds, states, fork_rng
from numdiff import special as special  # noqa: E402 - torch.special's names
from numdiff import version as version  # noqa: E402 - torch.version's fields
from numdiff import xpu as xpu  # noqa: E402
from numdiff._lazy import lazy_module as _lazy_module  # noqa: E402
from numdiff._legacy_globals import (  # noqa: E402 - older programs' global settings
    default_generator,
    is_warn_always_enabled,
    newaxis,
    set_default_tensor_type,
    set_warn_always,
)
from numdiff._memory_format import (  # noqa: E402 - tensor layouts
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from numdiff._runtime import (  # noqa: E402 - the deterministic-algorithms flag
    are_deterministic_algorithms_enabled,
    use_deterministic_algorithms,
)
from numdiff._show_config import show_config  # noqa: E402 - which BLAS/LAPACK, threads, Numba, CUDA
from numdiff._threads import get_num_threads, set_num_threads  # noqa: E402 - CPU kernel threads
from numdiff.amp import (  # noqa: E402 - torch.autocast and its queries
    autocast,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
)
from numdiff.creation import inclusive_range as range  # noqa: E402, A004 - PyTorch's deprecated torch.range
from numdiff.cuda import amp as _cuda_amp  # noqa: E402, F401 - numdiff.cuda.amp, torch.cuda.amp's names
from numdiff.linalg._toplevel import FUNCTIONS as _LINALG_FUNCTIONS  # noqa: E402 - torch.inverse, torch.svd, ...
from numdiff.version import __version__ as __version__  # noqa: E402

# torch.profiler's names; the module (and Numba's event hooks it subclasses) loads on first use.
profiler = _lazy_module("numdiff.profiler")

__all__ = [
    "Generator", "Size", "Tensor", "abs", "add", "all", "allclose", "amax", "amin", "any", "arange",
    "argmax", "argmin", "as_tensor", "autograd", "bool", "broadcast_to", "cat", "chunk", "clamp",
    "clip", "clone", "concat", "cos", "cuda", "device", "div", "dtype", "empty", "empty_like",
    "enable_grad", "eq", "equal", "erf", "exp", "expm1", "eye", "flatten", "flip", "float32",
    "float64", "from_numpy", "full", "full_like", "gather", "ge", "gt", "index_select",
    "inference_mode", "int32", "int64", "is_grad_enabled", "is_inference_mode_enabled", "isfinite", "isinf", "isnan", "le",
    "linspace", "logspace", "log", "log1p", "log_softmax", "logical_not", "logsumexp", "lt", "manual_seed",
    "masked_fill", "max", "maximum", "mean", "min", "minimum", "mul", "ne", "neg", "nn", "no_grad",
    "ones", "ones_like", "permute", "pow", "prod", "rand", "rand_like", "randint", "randn",
    "randn_like", "randperm", "relu", "repeat", "reshape", "rsqrt", "scatter_add",
    "set_grad_enabled", "sigmoid", "sign", "sin", "softmax", "split", "sqrt", "squeeze", "stack",
    "std", "sub", "sum", "t", "tanh", "tensor", "transpose", "unflatten", "unsqueeze", "var",
    "where", "zeros", "zeros_like",
]
__all__ += ["bmm", "dot", "matmul", "mm", "outer"]
__all__ += ["from_dlpack"]
globals().update({name: fn for name, fn in _LINALG_FUNCTIONS.items() if name not in globals()})
__all__ += sorted(_LINALG_FUNCTIONS)
__all__ += _deferred.NN_FUNCTIONS
__all__ += [
    "bfloat16", "double", "float", "float16", "get_default_device", "get_default_dtype", "half", "int",
    "int8", "int16", "long", "set_default_device", "set_default_dtype", "short", "uint8",
    "accelerator", "are_deterministic_algorithms_enabled", "backends", "get_num_threads", "set_num_threads",
    "show_config", "use_deterministic_algorithms", "mps", "mtia", "xpu",
]
__all__ += ["argsort", "einsum", "multinomial", "sort", "topk", "tril", "triu"]
__all__ += ["finfo", "iinfo"]
__all__ += ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]
__all__ += ["default_generator", "is_warn_always_enabled", "newaxis", "set_default_tensor_type", "set_warn_always"]
__all__ += [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor",
]
__all__ += sorted(set(_RULE_EXPORTS) - set(__all__))
__all__ += sorted(set(_TORCH_NAMES) - set(__all__))
__all__ += ["compile", "round", "absolute", "arctan2", "divide", "lerp", "multiply", "negative", "subtract"]
__all__ += ["floor_divide", "fmod", "remainder"]
__all__ += ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"]
__all__ += ["true_divide", "clamp_max", "clamp_min", "nan_to_num", "logical_and", "logical_or", "logical_xor"]
__all__ += [
    "addcdiv", "as_strided", "addcmul", "addmm", "addmv", "argwhere", "atleast_1d", "atleast_2d", "atleast_3d", "baddbmm",
    "bucketize", "cdist", "column_stack", "count_nonzero", "cross", "cummax", "cummin", "cumprod", "cumsum", "diag", "diag_embed", "diagonal", "diff",
    "dstack", "hstack", "index_add", "inner", "isclose", "masked_select", "meshgrid", "moveaxis", "movedim",
    "nanmean", "nansum", "narrow", "nonzero", "norm", "repeat_interleave", "roll", "row_stack", "scatter",
    "searchsorted", "select", "swapaxes", "swapdims", "take", "tensordot", "tile", "trace", "unbind", "unique", "vstack",
]
__all__ += ["bernoulli", "normal", "randint_like", "tril_indices", "triu_indices", "is_tensor", "is_floating_point", "numel"]
__all__ += ["e", "inf", "nan", "pi", "set_printoptions", "rot90", "tensor_split", "dist", "std_mean", "var_mean"]
__all__ += ["range", "vmap", "sparse", "sparse_coo", "sparse_coo_tensor", "sparse_csr", "sparse_csr_tensor", "spmm",
            "strided"]
__all__ += ["logit", "mvlgamma", "polygamma", "special"]
__all__ += ["bincount", "block_diag", "cartesian_prod", "histc", "isin", "kron", "kthvalue", "logcumsumexp", "median", "mode", "nanmedian"]

# PyTorch's constants and small predicates.
e, inf, nan, pi = _math.e, _math.inf, _math.nan, _math.pi


def is_tensor(obj: object) -> bool:
    """Whether `obj` is a numdiff Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    """Whether `input` has a floating point dtype."""
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    """The number of elements of `input`."""
    return input.numel()

__all__ += [
    "amp", "autocast", "random", "testing", "get_autocast_cpu_dtype", "get_autocast_dtype", "is_autocast_cpu_enabled", "is_autocast_enabled",
]
__all__ += [
    "benchmark", "distributed", "distributions", "elementwise", "func", "fx", "hub", "jit", "linalg", "load", "onnx", "optim",
    "overrides", "profiler", "safetensors", "save", "serialization", "utils", "version", "viz", "warmup",
]  # fmt: skip

# x.sum(1, keepdims=True): the NumPy names PyTorch's native methods take.
_numpy_names.install_methods(Tensor)
_overrides.register_public_faces(globals())  # a Proxy records numdiff.sum, not one of the wrappers inside it


def __getattr__(name: str) -> object:
    # PEP 562: a subpackage beyond the core, or a name it gives numdiff, loads on first access.
    try:
        loaded = _deferred.load(name)
    except KeyError:
        raise AttributeError(f"module 'numdiff' has no attribute {name!r}") from None
    _overrides.register_public_faces(loaded)
    globals().update(loaded)  # later reads skip this function
    return loaded[name]


class _Package(_types.ModuleType):
    """numdiff itself, as a module whose deferred function `compile` keeps its name when the
    subpackage numdiff.compile loads (the import system binds a loaded subpackage on its parent;
    the eager import used to bind the function after it)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _deferred.ATTRIBUTES and isinstance(value, _types.ModuleType):
            return  # numdiff.compile stays (or, on first read, becomes) the function
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
