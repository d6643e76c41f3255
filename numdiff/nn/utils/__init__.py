"""numdiff.nn.utils: gradient clipping, parameter/vector conversion, packed sequences (utils.rnn),
parametrizations (utils.parametrize, utils.parametrizations), pruning (utils.prune), BatchNorm
fusion (utils.fusion) and the deprecated utils.stateless.functional_call."""

from numdiff.nn.utils import fusion, parametrizations, parametrize, prune, rnn
from numdiff.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from numdiff.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from numdiff.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from numdiff.nn.utils.weight_reparam import (
    remove_spectral_norm,
    remove_weight_norm,
    skip_init,
    spectral_norm,
    weight_norm,
)

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize", "prune", "rnn",
    "stateless", "vector_to_parameters",
]
__all__ += ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "fusion"]
__all__ += ["remove_spectral_norm", "remove_weight_norm", "skip_init", "spectral_norm", "weight_norm"]


def __getattr__(name: str) -> object:
    # utils.stateless wraps numdiff.func.functional_call: loaded on first access, so that importing
    # nn.utils (clip_grad_norm_, ...) does not load numdiff.func.
    if name == "stateless":
        import importlib

        return importlib.import_module("numdiff.nn.utils.stateless")
    raise AttributeError(f"module 'numdiff.nn.utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
