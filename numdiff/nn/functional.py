"""numdiff.nn.functional: PyTorch's functional API (activations here; layers and losses join).

The activations are every public function of numdiff/ops/activation.py (those its scalar rules
generate included), read from that module rather than listed here.
"""

import inspect

from numdiff.nn._attention import scaled_dot_product_attention
from numdiff.nn._ctc_loss import ctc_loss
from numdiff.nn._distance import cosine_similarity, normalize
from numdiff.nn._embedding_bag import embedding_bag
from numdiff.nn._fractional_pool import fractional_max_pool2d, fractional_max_pool2d_with_indices
from numdiff.nn._functional_layers import dropout, dropout1d, dropout2d, dropout3d, embedding, one_hot, pad
from numdiff.nn._grid_sampling import affine_grid, grid_sample
from numdiff.nn._im2col import fold, unfold
from numdiff.nn._layer_functions import (
    alpha_dropout,
    bilinear,
    feature_alpha_dropout,
    local_response_norm,
    rrelu,
)
from numdiff.nn._legacy import log_softmax, softmax, softmin, upsample_bilinear, upsample_nearest
from numdiff.nn._likelihood_losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    gaussian_nll_loss,
    kl_div,
    poisson_nll_loss,
)
from numdiff.nn._losses import (
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from numdiff.nn._margin_losses import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    pairwise_distance,
    soft_margin_loss,
    triplet_margin_loss,
)
from numdiff.nn._more_functional import (
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    celu_,
    channel_shuffle,
    elu_,
    gumbel_softmax,
    hardtanh_,
    leaky_relu_,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
    multilabel_margin_loss,
    pdist,
    relu_,
    rrelu_,
    selu_,
    threshold_,
    triplet_margin_with_distance_loss,
)
from numdiff.nn._normalization import batch_norm, group_norm, instance_norm, layer_norm, rms_norm
from numdiff.nn._resampling import interpolate, pixel_shuffle, pixel_unshuffle, upsample
from numdiff.ops import activation as _activation
from numdiff.ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
from numdiff.ops.conv3d import conv3d, conv_transpose3d
from numdiff.ops.elementwise import PUBLIC
from numdiff.ops.linalg import linear
from numdiff.ops.pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from numdiff.ops.pool3d import adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, max_pool3d
from numdiff.overrides import overridable_variants, register_public_faces

sigmoid, tanh = PUBLIC["sigmoid"], PUBLIC["tanh"]

# softmax, log_softmax and softmin are _legacy's (PyTorch's implicit dim), imported above.
_ACTIVATIONS = {
    name: value for name, value in vars(_activation).items()
    if inspect.isfunction(value) and value.__module__ == _activation.__name__ and not name.startswith("_")
    and name not in globals()
}  # fmt: skip
globals().update(_ACTIVATIONS)

__all__ = ["log_softmax", "sigmoid", "softmax", "tanh", *sorted(_ACTIVATIONS)]
__all__ += [
    "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "dropout",
    "embedding", "l1_loss", "layer_norm", "rms_norm", "mse_loss", "nll_loss", "one_hot", "pad", "smooth_l1_loss",
]
__all__ += [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d", "avg_pool2d", "conv1d",
    "conv2d", "conv_transpose1d", "conv_transpose2d", "linear", "max_pool1d", "max_pool2d",
]
__all__ += ["scaled_dot_product_attention"]
__all__ += [
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "celu_",
    "channel_shuffle",
    "elu_",
    "gumbel_softmax",
    "hardtanh_",
    "leaky_relu_",
    "lp_pool1d",
    "lp_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "multilabel_margin_loss",
    "pdist",
    "relu_",
    "rrelu_",
    "selu_",
    "threshold_",
    "triplet_margin_with_distance_loss",
]
__all__ += ["softmin"]
__all__ += ["fractional_max_pool2d", "fractional_max_pool2d_with_indices"]
__all__ += ["dropout1d", "dropout2d", "dropout3d", "group_norm", "instance_norm"]
__all__ += ["interpolate", "pixel_shuffle", "pixel_unshuffle", "upsample", "upsample_bilinear", "upsample_nearest"]
__all__ += ["cosine_similarity", "normalize"]
__all__ += [
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "margin_ranking_loss",
    "multi_margin_loss", "multilabel_soft_margin_loss", "pairwise_distance", "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
]
__all__ += ["rrelu", "affine_grid", "grid_sample"]
__all__ += ["fold", "unfold"]
__all__ += [
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d",
    "lp_pool3d", "max_unpool3d",
]
__all__ += ["alpha_dropout", "bilinear", "embedding_bag", "feature_alpha_dropout", "local_response_norm"]
__all__ += ["ctc_loss"]

# numdiff.fx's Proxy (and any __numdiff_function__ type) takes over F.<name>(proxy, ...) calls.
globals().update(overridable_variants(
    {name: globals()[name] for name in __all__ if name in globals()}, ("numdiff.nn", "numdiff.ops"),
    ("numdiff.nn._legacy", "numdiff.nn._losses", "numdiff.nn._likelihood_losses", "numdiff.nn._functional_layers.dropout1d",
     "numdiff.nn._functional_layers.dropout2d", "numdiff.nn._functional_layers.dropout3d"),
))
register_public_faces({name: globals()[name] for name in __all__})  # a Proxy records F.conv2d


def __dir__() -> list[str]:
    # dir() and tab completion show the public names only, not this module's imports.
    return sorted(__all__)
